"""One precedence for every setting (neuronctl.settings): a flag the user typed > its environment
variable > [tool.neuronctl] > the default, through the real CLI; where a value came from in the
message that shows it; the old spellings, accepted with a one-line note; bad values exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuronctl.config import Config
from neuronctl.settings import SPECS, Flag, Resolver

BUNDLED = Path(__file__).resolve().parents[1] / "neuronctl" / "data" / "releases.json"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _config(project: Path, body: str) -> None:
    (project / "pyproject.toml").write_text(f"[tool.neuronctl]\n{body}\n")


def _manifest(path: Path, drop: tuple[str, ...]) -> Path:
    """The bundled release data less the releases in `drop`: which file was read shows."""
    data = json.loads(BUNDLED.read_text())
    data["releases"] = [r for r in data["releases"] if r["version"] not in drop]
    path.write_text(json.dumps(data))
    return path


def _versions(cli, *args: str) -> list[str]:
    r = cli(*args, "releases", "--json")
    assert r.code == 0, r.err
    return [r["version"] for r in json.loads(r.out)["releases"]]


# -- the manifest: flag > NEURONCTL_MANIFEST > config (the config beat the variable before) -------

def test_manifest_flag_beats_env_beats_config_beats_bundled(cli, project, monkeypatch) -> None:
    newest = json.loads(BUNDLED.read_text())["releases"][0]["version"]
    assert newest in _versions(cli)  # the default: the bundled data
    _manifest(project / "cfg.json", (newest,))
    _config(project, 'manifest = "cfg.json"')
    assert newest not in _versions(cli)  # the config's file
    second = json.loads(BUNDLED.read_text())["releases"][1]["version"]
    env_file = _manifest(project / "env.json", (second,))
    monkeypatch.setenv("NEURONCTL_MANIFEST", str(env_file))
    env_versions = _versions(cli)
    assert newest in env_versions and second not in env_versions  # the variable beats the config
    flag_file = _manifest(project / "flag.json", (newest, second))
    flag_versions = _versions(cli, "--manifest", str(flag_file))
    assert newest not in flag_versions and second not in flag_versions


def test_a_manifest_variable_naming_no_file_is_one_line_exit_2(cli, project, monkeypatch) -> None:
    monkeypatch.setenv("NEURONCTL_MANIFEST", str(project / "gone.json"))
    r = cli("releases")
    assert r.code == 2 and "gone.json" in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1, r.err


# -- the release: flag > config > default, and the source in the message ----------------------------

def test_a_release_from_the_config_is_named_with_its_file(cli, project) -> None:
    _config(project, 'release = "9.9.1"')
    r = cli("lock", "--offline", "-o", "-")
    assert r.code == 2 and "'9.9.1'" in r.err and "(from pyproject.toml)" in r.err, r.err
    flagged = cli("lock", "--offline", "-o", "-", "--release", "9.9.2")
    assert flagged.code == 2 and "'9.9.2'" in flagged.err and "9.9.1" not in flagged.err
    assert "(from" not in flagged.err  # the user typed it: no need to say where it came from


# -- the lock target: --python-version > config python > the release's lowest ------------------------

def test_python_version_flag_beats_config_and_names_itself(cli, project) -> None:
    _config(project, 'python = ["3.8"]')
    r = cli("lock", "--offline", "-o", "-")
    assert r.code == 2 and "config python 3.8: Neuron" in r.err and "supports Python" in r.err
    flagged = cli("lock", "--offline", "-o", "-", "--python-version", "3.9")
    assert flagged.code == 2 and "--python-version 3.9: Neuron" in flagged.err, flagged.err


def test_the_old_python_spelling_of_lock_is_accepted_with_a_note(cli, project) -> None:
    r = cli("lock", "--offline", "-o", "-", "--python", "3.9")
    notes = [line for line in r.err.splitlines() if line.startswith("neuronctl: note:")]
    assert notes == ["neuronctl: note: --python is now --python-version (a target version; "
                     "--python is an interpreter); the old spelling still works"]
    assert r.code == 2 and "--python 3.9: Neuron" in r.err  # the value was used, under its name


def test_init_takes_python_version_and_the_old_spelling(cli, project) -> None:
    assert cli("init", "--python-version", "3.13").code == 0
    assert 'python = ["3.13"]' in (project / "pyproject.toml").read_text()
    r = cli("init", "--python", "3.12")
    assert r.code == 0 and "note: --python is now --python-version" in r.err
    assert 'python = ["3.12"]' in (project / "pyproject.toml").read_text()


# -- doctor's check limit: --check-timeout > config check_timeout > config timeout (noted) ----------

DOCTOR = ("doctor", "--level", "1", "--only", "python.version")


def test_check_timeout_flag_beats_config(cli, project) -> None:
    _config(project, "check_timeout = 0")
    r = cli(*DOCTOR)
    assert r.code == 2 and "config check_timeout: timeout must be a positive number" in r.err
    assert cli(*DOCTOR, "--check-timeout", "30").code == 0  # the flag wins; the config unread


def test_the_old_doctor_timeout_flag_is_accepted_with_a_note(cli, project) -> None:
    r = cli(*DOCTOR, "--timeout", "0")
    assert r.code == 2 and "--timeout: timeout must be a positive number" in r.err
    assert "neuronctl: note: --timeout is now --check-timeout (each check's time limit); the old " \
           "spelling still works" in r.err
    assert cli(*DOCTOR, "--timeout", "30").code == 0


def test_config_timeout_still_bounds_checks_where_check_timeout_is_absent(cli, project) -> None:
    _config(project, "timeout = 0")
    r = cli(*DOCTOR)
    assert r.code == 2 and "config timeout: timeout must be a positive number" in r.err
    assert "`timeout` is read as `check_timeout` here" in r.err
    _config(project, "timeout = 0\ncheck_timeout = 30")  # the new key wins, and no note
    ok = cli(*DOCTOR)
    assert ok.code == 0 and "note:" not in ok.err


# -- doctor's drain policy and strictness: flag > config > default -----------------------------------

def test_drain_on_flag_beats_a_config_value(cli, project) -> None:
    _config(project, 'drain_on = "sometimes"')
    r = cli(*DOCTOR)
    assert r.code == 2 and "config drain_on 'sometimes': expected one of drain, fail, warn" in r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert cli(*DOCTOR, "--drain-on", "fail").code == 0


def test_strict_from_the_config(cli, project) -> None:
    _config(project, "strict = true")
    assert json.loads(cli(*DOCTOR, "--json").out)["summary"]["strict"] is True
    _config(project, "strict = false")
    assert json.loads(cli(*DOCTOR, "--json").out)["summary"]["strict"] is False
    assert json.loads(cli(*DOCTOR, "--json", "--strict").out)["summary"]["strict"] is True


# -- network timeout: --timeout > config timeout > 30 ------------------------------------------------

def test_network_timeout_flag_beats_config(cli, project) -> None:
    _config(project, "timeout = 0")
    r = cli("lock", "--offline", "-o", "-", "--release", "9.9.3")
    assert r.code == 2 and "config timeout: timeout must be a positive number" in r.err
    flagged = cli("lock", "--offline", "-o", "-", "--release", "9.9.3", "--timeout", "5")
    assert flagged.code == 2 and "timeout" not in flagged.err and "9.9.3" in flagged.err


# -- the resolver itself: each level over the next, for every setting with a variable -----------------

@pytest.mark.parametrize("spec", [s for s in SPECS if s.env and s.key and not s.layered],
                         ids=lambda s: s.name)
def test_every_level_wins_over_the_next(spec, tmp_path: Path) -> None:
    value = {"engine": ("uv", "pip", "auto")}.get(spec.name, ("a-flag", "b-env", "c-config"))
    config = Config({spec.key: value[2]}, str(tmp_path / "pyproject.toml"), tmp_path)
    both = Resolver.of(config, environ={spec.env: value[1]})
    flag = both.resolve(spec.name, Flag(value[0], spec.flag or ""))
    assert str(flag.value).endswith(value[0]) and flag.source.kind == "flag"
    env = both.resolve(spec.name)
    assert str(env.value).endswith(value[1]) and env.source.name == spec.env
    from_config = Resolver.of(config, environ={}).resolve(spec.name)
    assert str(from_config.value).endswith(value[2]) and from_config.source.kind == "config"
    default = Resolver.of(Config(base_dir=tmp_path), environ={}).resolve(spec.name)
    assert default.value == spec.default and not default.given


def test_a_value_says_where_it_came_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = Config({"release": "2.33.1"}, str(tmp_path / "pyproject.toml"), tmp_path)
    assert Resolver.of(config, environ={}).resolve("release").said() == "2.33.1 (from pyproject.toml)"
    env = Resolver.of(config, environ={"NEURONCTL_BACKEND": "pip"}).resolve("engine")
    assert env.said() == "pip (from NEURONCTL_BACKEND)"


def test_the_config_keys_are_the_settings_table() -> None:
    from neuronctl.config import SCHEMA

    assert set(SCHEMA) == {s.key for s in SPECS if s.key}
    assert "check_timeout" in SCHEMA and "timeout" in SCHEMA
