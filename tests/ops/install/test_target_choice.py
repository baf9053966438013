"""Issue 25, item 1: the environment every command works on by default is the one the user
meant: --python, else the active VIRTUAL_ENV (not neuronctl's own), else ./.venv, else
neuronctl's own interpreter, named as such; install never goes into neuronctl's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.first_hour  # the first_hour campaign (was tests/test_first_hour_target.py)

REPO = Path(__file__).resolve().parents[3]
NEURONCTL = REPO / ".venv" / "bin" / "neuronctl"


def bare_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=False, symlinks=True).create(path)
    return path


def activate(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """What bin/activate does to the environment."""
    monkeypatch.setenv("VIRTUAL_ENV", str(path))
    monkeypatch.setenv("PATH", f"{path / 'bin'}{os.pathsep}{os.environ['PATH']}")


def python_check_json(cli) -> dict:
    r = cli("doctor", "--only", "python.version", "--json")
    assert r.code in (0, 1), r.err
    return json.loads(r.out)


def test_an_activated_venv_is_the_target(cli, monkeypatch, tmp_path):
    proj = bare_venv(tmp_path / "proj")
    activate(monkeypatch, proj)
    bare_venv(Path.cwd() / ".venv")  # the active one wins over ./.venv
    doc = python_check_json(cli)
    assert doc["target"] == {"python": str(proj / "bin" / "python"), "reason": "active venv"}
    assert doc["environment"]["python"]["executable"].startswith(str(proj))
    r = cli("doctor", "--only", "python.version")
    assert r.out.splitlines()[0] == f"target: {proj / 'bin' / 'python'} (active venv)"


def test_the_working_directorys_venv_is_the_target_when_none_is_active(cli, monkeypatch):
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    here = bare_venv(Path.cwd() / ".venv")
    doc = python_check_json(cli)
    assert doc["target"]["python"] == str(here / "bin" / "python")
    assert doc["target"]["reason"] == "./.venv in the working directory"
    # The home directory is shown as ~ on the text line (conftest's HOME holds the cwd).
    first = cli("doctor", "--only", "python.version").out.splitlines()[0]
    assert first == "target: ~/work/.venv/bin/python (./.venv in the working directory)"


def test_a_dot_venv_that_is_not_a_venv_is_not_taken(cli, monkeypatch):
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    fake = Path.cwd() / ".venv" / "bin"
    fake.mkdir(parents=True)
    (fake / "python").symlink_to(sys.executable)  # no pyvenv.cfg: a directory, not a venv
    assert python_check_json(cli)["target"]["reason"] == "neuronctl's own environment"


def test_neither_is_neuronctls_own_interpreter_named_as_such(cli, monkeypatch):
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    doc = python_check_json(cli)
    assert doc["target"] == {"python": sys.executable, "reason": "neuronctl's own environment"}
    first = cli("doctor", "--only", "python.version").out.splitlines()[0]
    assert first.startswith("target: ") and first.endswith("(neuronctl's own environment)")


def test_python_option_wins_and_is_named(cli, monkeypatch, tmp_path):
    proj = bare_venv(tmp_path / "proj")
    other = bare_venv(tmp_path / "other")
    activate(monkeypatch, proj)
    r = cli("doctor", "--only", "python.version", "--json", "--python", str(other))
    assert json.loads(r.out)["target"] == {"python": str(other / "bin" / "python"),
                                           "reason": "--python"}


def test_a_removed_active_venv_is_bad_input_in_one_line(cli, monkeypatch, tmp_path):
    activate(monkeypatch, tmp_path / "gone")
    r = cli("doctor", "--only", "python.version")
    assert r.code == 2 and "VIRTUAL_ENV" in r.err and "deactivate" in r.err
    assert len(r.err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [["probe", "--device", "cpu"], ["env"],
                                     ["smoke", "--device", "cpu", "--steps", "1"]])
def test_probe_env_and_smoke_report_the_active_venv(cli, monkeypatch, tmp_path, command):
    proj = bare_venv(tmp_path / "proj")  # no torch there: each reports quickly, on it
    activate(monkeypatch, proj)
    r = cli(*command, "--json")
    doc = json.loads(r.out)
    assert doc["target"] == {"python": str(proj / "bin" / "python"), "reason": "active venv"}, r.err
    text = cli(*command)
    assert text.out.splitlines()[0] == f"target: {proj / 'bin' / 'python'} (active venv)"


def _run_installed(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEURONCTL), *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120, check=False)


def _own_activated() -> dict[str, str]:
    env = dict(os.environ)
    own = REPO / ".venv"
    env["VIRTUAL_ENV"] = str(own)
    env["PATH"] = f"{own / 'bin'}{os.pathsep}{env['PATH']}"
    return env


def test_neuronctls_own_venv_activated_is_not_taken_for_the_users(tmp_path):
    r = _run_installed(["doctor", "--only", "python.version", "--json"], _own_activated(),
                       tmp_path)
    target = json.loads(r.stdout)["target"]
    assert target["reason"] == "neuronctl's own environment"
    assert os.path.realpath(os.path.dirname(os.path.dirname(target["python"]))) == \
        os.path.realpath(REPO / ".venv")


def test_install_refuses_neuronctls_own_env_activated(tmp_path):
    r = _run_installed(["install", "--dry-run", "--offline"], _own_activated(), tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "neuronctl's own environment" in lines[0]
    assert "--python PATH" in lines[0] and "--venv DIR" in lines[0]


@pytest.mark.parametrize("how", ["--python", "--venv"])
def test_install_refuses_neuronctls_own_env_named(tmp_path, how):
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    r = _run_installed(["install", "--dry-run", "--offline", how, str(REPO / ".venv")], env,
                       tmp_path)
    assert r.returncode == 2 and "never installs into" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_install_takes_the_active_venv_then_the_working_directorys(monkeypatch, tmp_path):
    from neuronctl.ops.install.target import resolve_target

    proj = bare_venv(tmp_path / "proj")
    here = bare_venv(Path.cwd() / ".venv")
    chosen = resolve_target(None, None, None, lambda: (), {"VIRTUAL_ENV": str(proj)})
    assert (chosen.python, chosen.reason) == (str(proj / "bin" / "python"), "active venv")
    assert chosen.describe() == f"{proj / 'bin' / 'python'} (active venv)"
    chosen = resolve_target(None, None, None, lambda: (), {})
    assert (chosen.python, chosen.reason) == (str(here / "bin" / "python"),
                                              "./.venv in the working directory")
