"""One precedence for every setting (neuronctl.settings): a flag the user typed > its environment
variable > [tool.neuronctl] > the default, through the real CLI; where a value came from in the
message that shows it; the old spellings, accepted with a one-line note; bad values exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuronctl.config import Config
from neuronctl.settings import SPECS, Flag, Resolver
from neuronctl.settings_rules import WholeNumber, _torch, seconds
from neuronctl.settings_table import Spec

BUNDLED = Path(__file__).resolve().parents[2] / "neuronctl" / "data" / "releases.json"


@pytest.fixture
def project_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _config(project_dir: Path, body: str) -> None:
    (project_dir / "pyproject.toml").write_text(f"[tool.neuronctl]\n{body}\n")


def _bad(project_dir: Path, key: str) -> str:
    """A bad limit in the project's config, as the error names it: the key and the file."""
    return f"config {key} ({project_dir / 'pyproject.toml'}): timeout must be a positive number"


def _user_config(body: str) -> Path:
    """The user's own ~/.config/neuronctl/config.toml (conftest points XDG_CONFIG_HOME at a
    temporary home): the one file a trust root is read from."""
    from neuronctl.cache_dir import user_config_file

    path = user_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body + "\n")
    return path


def _manifest(path: Path, drop: tuple[str, ...]) -> Path:
    """The bundled release data less the releases in `drop`: which file was read shows."""
    data = json.loads(BUNDLED.read_text())
    data["releases"] = [r for r in data["releases"] if r["version"] not in drop]
    path.write_text(json.dumps(data))
    return path


def _listed_versions(cli, *args: str) -> list[str]:
    r = cli(*args, "releases", "--json")
    assert r.code == 0, r.err
    return [r["version"] for r in json.loads(r.out)["releases"]]


# -- the manifest: flag > NEURONCTL_MANIFEST > the user's config (a trust root: never a project's) --

def test_manifest_flag_beats_env_beats_config_beats_bundled(cli, project_dir, monkeypatch) -> None:
    newest = json.loads(BUNDLED.read_text())["releases"][0]["version"]
    assert newest in _listed_versions(cli)  # the default: the bundled data
    _manifest(project_dir / "cfg.json", (newest,))
    _user_config(f'manifest = "{project_dir / "cfg.json"}"')
    assert newest not in _listed_versions(cli)  # the config's file
    second = json.loads(BUNDLED.read_text())["releases"][1]["version"]
    env_file = _manifest(project_dir / "env.json", (second,))
    monkeypatch.setenv("NEURONCTL_MANIFEST", str(env_file))
    env_versions = _listed_versions(cli)
    assert newest in env_versions and second not in env_versions  # the variable beats the config
    flag_file = _manifest(project_dir / "flag.json", (newest, second))
    flag_versions = _listed_versions(cli, "--manifest", str(flag_file))
    assert newest not in flag_versions and second not in flag_versions


def test_a_manifest_variable_naming_no_file_is_one_line_exit_2(cli, project_dir, monkeypatch) -> None:
    monkeypatch.setenv("NEURONCTL_MANIFEST", str(project_dir / "gone.json"))
    r = cli("releases")
    assert r.code == 2 and "gone.json" in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1, r.err


# -- the release: flag > config > default, and the source in the message ----------------------------

def test_a_release_from_the_config_is_named_with_its_file(cli, project_dir) -> None:
    _config(project_dir, 'release = "9.9.1"')
    r = cli("lock", "--offline", "-o", "-")
    assert r.code == 2 and "'9.9.1'" in r.err and "(from pyproject.toml)" in r.err, r.err
    flagged = cli("lock", "--offline", "-o", "-", "--release", "9.9.2")
    assert flagged.code == 2 and "'9.9.2'" in flagged.err and "9.9.1" not in flagged.err
    assert "(from" not in flagged.err  # the user typed it: no need to say where it came from


# -- the lock target: --python-version > config python > the release's lowest ------------------------

def test_python_version_flag_beats_config_and_names_itself(cli, project_dir) -> None:
    _config(project_dir, 'python = ["3.8"]')
    r = cli("lock", "--offline", "-o", "-")
    said = f"config python ({project_dir / 'pyproject.toml'}) 3.8: Neuron"
    assert r.code == 2 and said in r.err and "supports Python" in r.err
    flagged = cli("lock", "--offline", "-o", "-", "--python-version", "3.9")
    assert flagged.code == 2 and "--python-version 3.9: Neuron" in flagged.err, flagged.err


def test_the_old_python_spelling_of_lock_is_accepted_with_a_note(cli, project_dir) -> None:
    r = cli("lock", "--offline", "-o", "-", "--python", "3.9")
    notes = [line for line in r.err.splitlines() if line.startswith("neuronctl: note:")]
    assert notes == ["neuronctl: note: --python is now --python-version (a target version; "
                     "--python is an interpreter); the old spelling still works"]
    assert r.code == 2 and "--python 3.9: Neuron" in r.err  # the value was used, under its name


def test_init_takes_python_version_and_the_old_spelling(cli, project_dir) -> None:
    assert cli("init", "--python-version", "3.13").code == 0
    assert 'python = ["3.13"]' in (project_dir / "pyproject.toml").read_text()
    r = cli("init", "--python", "3.12")
    assert r.code == 0 and "note: --python is now --python-version" in r.err
    assert 'python = ["3.12"]' in (project_dir / "pyproject.toml").read_text()


def test_a_malformed_lock_python_version_names_the_new_flag(cli, project_dir) -> None:
    for command in ("lock", "init"):
        r = cli(command, *(("--offline", "-o", "-") if command == "lock" else ()),
                "--python-version", "3.x")
        assert r.code == 2, r.err
        assert r.err.strip() == ("neuronctl: error: --python-version '3.x': expected a Python "
                                 "version such as 3.12 or 3.12.4"), r.err


def test_init_names_a_config_python_the_release_lacks_as_the_config(cli, project_dir) -> None:
    _config(project_dir, 'release = "2.33.1"\npython = ["3.8"]')
    r = cli("init", "--torch", "2.14")
    assert r.code == 2 and f"config python ({project_dir / 'pyproject.toml'}) 3.8: Neuron 2.33.1" in r.err, r.err
    typed = cli("init", "--torch", "2.14", "--python-version", "3.9")
    assert typed.code == 2 and "--python-version 3.9: Neuron 2.33.1" in typed.err, typed.err


# -- doctor's release: named in the report's header with where it came from ---------------------------

def _doctor_release(cli, *args: str) -> tuple[str, str]:
    """The text report's release line, and the JSON's release_source."""
    text = cli(*DOCTOR, *args)
    assert text.code == 0, text.err
    header = next(line for line in text.out.splitlines() if line.startswith("release "))
    doc = cli(*DOCTOR, "--json", *args)
    assert doc.code == 0, doc.err
    data = json.loads(doc.out)
    assert data["environment"]["release"]["flavour"] == data["environment"]["release"]["backend"]
    return header, data["release_source"]


def test_doctor_names_the_default_release_and_why(cli, project_dir) -> None:
    newest = json.loads(cli("releases", "--json").out)["default"]["version"]
    header, source = _doctor_release(cli)
    assert header == f"release {newest} (default: newest fully published, native TorchNeuron)"
    assert source == "default"


def test_doctor_names_a_release_from_the_config_with_its_file(cli, project_dir) -> None:
    _config(project_dir, 'release = "2.31.1"')
    assert _doctor_release(cli) == ("release 2.31.1 (from pyproject.toml)", "pyproject.toml")
    # the flag beats the config, and says so
    assert _doctor_release(cli, "--release", "2.30.0") == ("release 2.30.0 (from --release)",
                                                           "--release")


def test_doctor_quiet_prints_no_release_header(cli, project_dir) -> None:
    r = cli("-q", *DOCTOR, "--release", "2.31.1")
    assert r.code == 0 and not any(line.startswith("release ") for line in r.out.splitlines())


# -- doctor's check limit: --check-timeout > config check_timeout > config timeout (noted) ----------

DOCTOR = ("doctor", "--level", "1", "--only", "python.version")


def test_check_timeout_flag_beats_config(cli, project_dir) -> None:
    _config(project_dir, "check_timeout = 0")
    r = cli(*DOCTOR)
    assert r.code == 2 and _bad(project_dir, "check_timeout") in r.err
    assert cli(*DOCTOR, "--check-timeout", "30").code == 0  # the flag wins; the config unread


def test_the_old_doctor_timeout_flag_is_accepted_with_a_note(cli, project_dir) -> None:
    r = cli(*DOCTOR, "--timeout", "0")
    assert r.code == 2 and "--timeout: timeout must be a positive number" in r.err
    assert "neuronctl: note: --timeout is now --check-timeout (each check's time limit); the old " \
           "spelling still works" in r.err
    assert cli(*DOCTOR, "--timeout", "30").code == 0


def test_config_timeout_still_bounds_checks_where_check_timeout_is_absent(cli, project_dir) -> None:
    _config(project_dir, "timeout = 0")
    r = cli(*DOCTOR)
    assert r.code == 2 and _bad(project_dir, "timeout") in r.err
    assert "`timeout` (each network request's time limit) is used for `check_timeout` too, as " \
           "that key is absent; set `check_timeout` to give it its own value" in r.err
    _config(project_dir, "timeout = 0\ncheck_timeout = 30")  # the check key wins, and no note
    ok = cli(*DOCTOR)
    assert ok.code == 0 and "note:" not in ok.err


def test_config_timeout_is_never_called_a_key_to_rename(tmp_path: Path) -> None:
    """`timeout` is the network key lock, install and download read: the note doctor prints when
    it stands in for `check_timeout` must not tell the user to rename or drop it."""
    notes: list[str] = []
    config = Config({"timeout": 45}, str(tmp_path / "pyproject.toml"), tmp_path)
    rules = Resolver.of(config, notes.append, environ={})
    assert rules.value("timeout") == 45.0 and notes == []  # its own setting: no note
    check = rules.resolve("check_timeout")
    assert check.value == 45.0 and check.source.kind == "config"
    assert len(notes) == 1 and "name it" not in notes[0] and "rename" not in notes[0]
    assert "(each network request's time limit)" in notes[0]


def test_config_check_timeout_never_bounds_network_requests(tmp_path: Path) -> None:
    config = Config({"check_timeout": 5}, str(tmp_path / "pyproject.toml"), tmp_path)
    network = Resolver.of(config, environ={}).resolve("timeout")
    assert network.value == 30.0 and not network.given


def test_lock_reads_config_timeout_without_a_note(cli, project_dir) -> None:
    _config(project_dir, "timeout = 5")
    r = cli("lock", "--offline", "-o", "-", "--release", "9.9.3")
    assert r.code == 2 and "9.9.3" in r.err and "note:" not in r.err


# -- doctor's drain policy and strictness: flag > config > default -----------------------------------

def test_drain_on_flag_beats_a_config_value(cli, project_dir) -> None:
    mine = _user_config('drain_on = "sometimes"')
    r = cli(*DOCTOR)
    assert r.code == 2 and (f"config drain_on ({mine}) 'sometimes': expected one of drain, fail, "
                            "warn") in r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert cli(*DOCTOR, "--drain-on", "fail").code == 0


def test_strict_from_the_config(cli, project_dir) -> None:
    _config(project_dir, "strict = true")
    assert json.loads(cli(*DOCTOR, "--json").out)["summary"]["strict"] is True
    _config(project_dir, "strict = false")
    assert json.loads(cli(*DOCTOR, "--json").out)["summary"]["strict"] is False
    assert json.loads(cli(*DOCTOR, "--json", "--strict").out)["summary"]["strict"] is True


# -- network timeout: --timeout > config timeout > 30 ------------------------------------------------

def test_network_timeout_flag_beats_config(cli, project_dir) -> None:
    _config(project_dir, "timeout = 0")
    r = cli("lock", "--offline", "-o", "-", "--release", "9.9.3")
    assert r.code == 2 and _bad(project_dir, "timeout") in r.err
    flagged = cli("lock", "--offline", "-o", "-", "--release", "9.9.3", "--timeout", "5")
    assert flagged.code == 2 and "timeout" not in flagged.err and "9.9.3" in flagged.err


# -- the resolver itself: each level over the next, for every setting with a variable -----------------

def _three_values(spec: Spec) -> tuple[str, str, str]:
    """Three values the row's rule takes, for the flag, the variable and the config, from the
    rule itself (a row added later needs no case here)."""
    if spec.choices is not None and len(spec.choices) >= 3:
        return tuple(reversed(spec.choices))[:3]  # type: ignore[return-value]
    if isinstance(spec.parse, WholeNumber):
        low = spec.parse.low
        return str(low + 1), str(low + 2), str(low + 3)
    if spec.parse is seconds:
        return "5.5", "6.5", "7.5"  # read back as floats: "5" would come back "5.0"
    if spec.parse is _torch:
        return "2.12", "2.13", "2.14"  # torch lines, which its rule checks
    return "a-flag", "b-env", "c-config"


@pytest.mark.parametrize("spec", [s for s in SPECS if s.env and s.key and not s.layered],
                         ids=lambda s: s.name)
def test_every_level_wins_over_the_next(spec, tmp_path: Path) -> None:
    value = _three_values(spec)
    config = Config({spec.key: value[2]}, str(tmp_path / "config.toml"), tmp_path)
    # a trust root's config is the user's own; any other setting's, a project's
    files = {"user": config} if spec.trust_root else {"config": config}
    empty = Config(base_dir=tmp_path)
    both = Resolver.of(files.get("config", empty), environ={spec.env: value[1]},
                       user=files.get("user"))
    flag = both.resolve(spec.name, Flag(value[0], spec.flag or ""))
    assert str(flag.value).endswith(value[0]) and flag.source.kind == "flag"
    env = both.resolve(spec.name)
    assert str(env.value).endswith(value[1]) and env.source.name == spec.env
    from_config = Resolver.of(files.get("config", empty), environ={},
                              user=files.get("user")).resolve(spec.name)
    assert str(from_config.value).endswith(value[2]) and from_config.source.kind == "config"
    default = Resolver.of(Config(base_dir=tmp_path), environ={}).resolve(spec.name)
    assert default.value == spec.default and not default.given


@pytest.mark.parametrize("spec", [s for s in SPECS if s.env and s.key and not s.layered],
                         ids=lambda s: s.name)
def test_a_variable_set_to_the_empty_string_counts_as_unset(spec, tmp_path: Path) -> None:
    """docs/config.md says so: `NEURONCTL_X= neuronctl ...` is the config's value, else the
    default, as if the variable were not there (not an error, and not an empty value)."""
    value = _three_values(spec)[2]
    config = Config({spec.key: value}, str(tmp_path / "config.toml"), tmp_path)
    files = {"user": config} if spec.trust_root else {"config": config}
    empty = Config(base_dir=tmp_path)
    for var in {spec.env, spec.old_env} - {None}:
        blank = {var: ""}
        got = Resolver.of(files.get("config", empty), environ=blank, user=files.get("user")).resolve(spec.name)
        assert str(got.value).endswith(value) and got.source.kind == "config", (var, got)
        default = Resolver.of(empty, environ=blank).resolve(spec.name)
        assert default.value == spec.default and not default.given, (var, default)


def test_a_value_says_where_it_came_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = Config({"release": "2.33.1"}, str(tmp_path / "pyproject.toml"), tmp_path)
    assert Resolver.of(config, environ={}).resolve("release").said() == "2.33.1 (from pyproject.toml)"
    env = Resolver.of(config, environ={"NEURONCTL_BACKEND": "pip"}).resolve("engine")
    assert env.said() == "pip (from NEURONCTL_BACKEND)"


def test_the_config_keys_are_the_settings_table() -> None:
    from neuronctl.config import schema

    keys = schema()
    assert set(keys) == {k for s in SPECS for k in (s.key, s.old_key) if k}
    assert "check_timeout" in keys and "timeout" in keys


# -- env's and probe's run in the target: --check-timeout (once --timeout) > config check_timeout ---

@pytest.mark.parametrize("command", [("env", "--json"), ("probe", "--json", "--device", "cpu")],
                         ids=lambda c: c[0])
def test_env_and_probe_take_check_timeout_and_the_old_spelling(cli, project_dir, command) -> None:
    bad = cli(*command, "--check-timeout", "0")
    assert bad.code == 2 and "--check-timeout: timeout must be a positive number" in bad.err
    old = cli(*command, "--timeout", "nan")
    assert old.code == 2 and "--timeout: timeout must be a positive number" in old.err
    assert "neuronctl: note: --timeout is now --check-timeout" in old.err
    _config(project_dir, "check_timeout = 0")
    from_config = cli(*command)
    assert from_config.code == 2 and _bad(project_dir, "check_timeout") in from_config.err


def test_probe_old_timeout_spelling_still_bounds_it(cli, project_dir) -> None:
    r = cli("probe", "--json", "--device", "cpu", "--timeout", "60")
    assert r.code == 0, r.err
    assert r.err.count("note:") == 1 and "the old spelling still works" in r.err
    assert json.loads(r.out)["probe"]["ok"] is True


def test_env_reads_config_timeout_where_check_timeout_is_absent(cli, project_dir) -> None:
    _config(project_dir, "timeout = 0")
    r = cli("env", "--json")
    assert r.code == 2 and _bad(project_dir, "timeout") in r.err
    assert "is used for `check_timeout` too" in r.err


# -- whole-run limits (smoke, fleet): --timeout, flag only, never the network key ------------------

def test_smoke_timeout_bounds_the_run_and_ignores_config_timeout(cli, project_dir) -> None:
    bad = cli("smoke", "--json", "--timeout", "inf")
    assert bad.code == 2 and "--timeout: timeout must be a positive number" in bad.err
    _config(project_dir, "timeout = 0\ncheck_timeout = 0")  # neither bounds a whole run
    r = cli("smoke", "--help")
    assert r.code == 0 and "whole run" in r.out


def test_fleet_doctor_timeout_is_checked_before_srun(cli, project_dir) -> None:
    r = cli("fleet", "doctor", "--timeout", "-5")
    assert r.code == 2 and "--timeout: timeout must be a positive number" in r.err
    assert len(r.err.strip().splitlines()) == 1, r.err


def test_run_timeout_is_a_flag_only_setting(tmp_path: Path) -> None:
    config = Config({"timeout": 5, "check_timeout": 7}, str(tmp_path / "pyproject.toml"), tmp_path)
    rules = Resolver.of(config, environ={})
    assert rules.resolve("run_timeout").value is None  # each command's own default applies
    assert rules.value("run_timeout", Flag("12", "--timeout")) == 12.0


# -- the shared options: one --json and one --python everywhere --------------------------------------

def _options(command, name: str) -> list:
    """Every option spelled `name` in `command` and its subcommands (loaded as the CLI loads them)."""
    import click

    found = [p for p in command.params if name in getattr(p, "opts", ())]
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for sub in command.list_commands(ctx):
            found += _options(command.get_command(ctx, sub), name)
    return found


def test_every_json_flag_is_the_shared_one() -> None:
    from neuronctl.cli.main import cli as root

    flags = _options(root, "--json")
    assert len(flags) >= 20
    assert {(f.name, f.is_flag, f.help) for f in flags} == {
        ("as_json", True, "Versioned JSON output on stdout (one document, on failure too; where "
                          "there is --format, the same as --format json).")}


def test_fleet_doctor_python_is_the_shared_interpreter_option() -> None:
    from neuronctl.cli.cmd_doctor import doctor
    from neuronctl.cli.cmd_fleet import fleet_doctor_command

    (shared,) = _options(doctor, "--python")
    (fleet_python,) = _options(fleet_doctor_command, "--python")
    assert (fleet_python.name, fleet_python.help) == (shared.name, shared.help)


def test_the_cache_dir_is_read_through_its_setting(monkeypatch, tmp_path) -> None:
    """NEURONCTL_CACHE_DIR is the setting `cache_dir`: parsed by its spec (~ expanded; a blank
    value is bad input naming the variable), else the XDG default."""
    from neuronctl.cache_dir import user_cache_dir
    from neuronctl.errors import InputError

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NEURONCTL_CACHE_DIR", "~/c")
    assert user_cache_dir() == tmp_path / "c"
    monkeypatch.setenv("NEURONCTL_CACHE_DIR", "   ")
    with pytest.raises(InputError, match="NEURONCTL_CACHE_DIR"):
        user_cache_dir()
    monkeypatch.delenv("NEURONCTL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert user_cache_dir() == tmp_path / "x" / "neuronctl"


@pytest.mark.parametrize(("variable", "value", "args", "said"), [
    ("NEURONCTL_TIMEOUT", "abc", ("lock", "--offline", "-o", "-"), "timeout must be a positive number"),
    ("NEURONCTL_CHECK_TIMEOUT", "-1", ("doctor",), "timeout must be a positive number"),
    ("NEURONCTL_DEVICE", "tpu", ("doctor",), "'tpu': expected one of auto, neuron, cuda, cpu"),
    ("NEURONCTL_TORCH", "x", ("lock", "--offline", "-o", "-"), "'x' is not a torch version"),
])
def test_a_bad_value_in_a_settings_variable_is_exit_2_naming_it(cli, monkeypatch, variable, value,
                                                                args, said) -> None:
    """A variable the table declares is read as its flag is: a bad value is exit 2 in one line
    naming the variable (an undeclared NEURONCTL_TIMEOUT was silently ignored)."""
    monkeypatch.setenv(variable, value)
    r = cli(*args)
    assert r.code == 2, r.err
    assert r.err.startswith(f"neuronctl: error: {variable}") and said in r.err, r.err
    assert "Traceback" not in r.err


def test_init_and_setup_take_the_release_variable_as_they_take_the_flag(cli, isolated_env,
                                                                       monkeypatch) -> None:
    """init writes what is typed or in the variables (it keeps the file's otherwise), and setup
    plans the release typed or in the variable (it reads no config release): both as lock,
    install and doctor read NEURONCTL_RELEASE, and the flag still wins."""
    monkeypatch.setenv("NEURONCTL_RELEASE", "2.33.0")
    monkeypatch.setenv("NEURONCTL_TORCH", "2.13")
    made = cli("init")
    assert made.code == 0, made.err
    written = (isolated_env / "pyproject.toml").read_text()
    assert 'release = "2.33.0"' in written and 'torch = "2.13"' in written
    monkeypatch.setenv("NEURONCTL_RELEASE", "2.31.0")
    planned = cli("setup", "--os", "ubuntu-24.04")
    assert planned.code == 0 and "Neuron 2.31.0 on ubuntu-24.04" in planned.out + planned.err
    flagged = cli("setup", "--os", "ubuntu-24.04", "--release", "2.33.1")
    assert "Neuron 2.33.1 on ubuntu-24.04" in flagged.out + flagged.err
