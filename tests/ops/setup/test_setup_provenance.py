"""Issue 31, items 3 and 4, tried as an attacker would: setup's plan says where each of its values
came from (repository, key, suite, each pin: text, JSON and the script's comments), and its own
steps run nothing of the directory setup was started in (a hostile .venv/bin/python, a
pyproject.toml), calling neuronctl and its interpreter by absolute path from /. The steps run for
real under sh, the doctor step with the real neuronctl."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.setup_sysroots import build_setup_host

from neuronctl.ops.setup.facts import read_target
from neuronctl.ops.setup.model import SetupPlan, SetupRequest
from neuronctl.ops.setup.plan import make_plan
from neuronctl.ops.setup.script import run_script
from neuronctl.release.manifest import load_bundled_manifest

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile3_setup_steps.py)

NEURONCTL = Path(sys.executable).parent / "neuronctl"
PLAN = ("setup", "--os", "ubuntu-26.04", "--chip", "trn2")


# -- item 3: every value of the plan says where it came from --------------------------------------

def test_every_value_of_the_json_plan_names_its_source(cli) -> None:
    r = cli(*PLAN, "--json")
    assert r.code == 0, r.err
    plan = json.loads(r.out)["setup"]
    origins = plan["origins"]
    assert origins["repository"].startswith("default: AWS's apt repository (AWS n2-manifest.json")
    assert origins["key_fingerprint"].startswith("default: AWS's key (https://")
    assert origins["suite"] == "neuronctl's OS table (ubuntu-26.04 is resolute)"
    assert set(plan["packages"]) == {k.removeprefix("packages.") for k in origins
                                     if k.startswith("packages.")}
    for name in plan["packages"]:
        assert origins[f"packages.{name}"].startswith("release data bundled manifest: https://"), \
            origins[f"packages.{name}"]
        assert "(read 20" in origins[f"packages.{name}"]


def test_the_text_plan_and_the_script_name_each_source(cli) -> None:
    fpr = "D6F26348F4E4CAC28820073C928298D9781B531E"
    args = (*PLAN, "--repo", "https://mirror.internal.test/neuron", "--key-fingerprint", fpr)
    text = cli(*args).out
    assert "repository https://mirror.internal.test/neuron (from --repo)" in text
    assert f"key {fpr} (from --key-fingerprint)" in text
    assert "suite resolute (from neuronctl's OS table" in text
    dkms = load_bundled_manifest().default.system["aws-neuronx-dkms"]
    assert f"pin aws-neuronx-dkms {dkms} (from release data bundled manifest: https://" in text
    script = cli(*args, "--format", "sh").out
    head = script.split("set -eu", 1)[0]
    assert "#   repository https://mirror.internal.test/neuron (from --repo)" in head
    assert f"#   pin aws-neuronx-dkms {dkms} (from release data bundled manifest" in head
    assert "#   suite resolute" in head


def test_a_hosts_own_suite_is_named_as_such(cli, tmp_path) -> None:
    root = build_setup_host(tmp_path / "root", "ubuntu-24.04")
    plan = json.loads(cli("setup", "--sysroot", str(root), "--json").out)["setup"]
    assert plan["origins"]["suite"] == "this host's os-release VERSION_CODENAME"


# -- item 4: the steps run nothing from the working directory -------------------------------------

@pytest.fixture
def hostile_dir(tmp_path: Path) -> Path:
    """A directory as an attacker leaves it: a .venv whose python leaves a mark when run, and a
    pyproject.toml choosing indexes and requirements."""
    here = tmp_path / "hostile"
    (here / ".venv" / "bin").mkdir(parents=True)
    python = here / ".venv" / "bin" / "python"
    python.write_text(f"#!/bin/sh\ntouch {tmp_path / 'PWNED'}\nexec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    (here / ".venv" / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\n")
    (here / "pyproject.toml").write_text(
        '[tool.neuronctl]\nindexes = { pypi = "https://evil.test/simple" }\n'
        'with = ["evil-package"]\n')
    return here


def _setup_plan(**extra: object) -> SetupPlan:
    target, facts = read_target(None, "ubuntu-26.04")
    release = load_bundled_manifest().default
    return make_plan(SetupRequest(release, target, facts, chip="trn2", **extra))  # type: ignore[arg-type]


def _run_step(plan: SetupPlan, step_id: str, cwd: Path, env: dict[str, str]
              ) -> subprocess.CompletedProcess[str]:
    step = next(s for s in plan.steps if s.id == step_id)
    clean = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    return subprocess.run(["sh", "-c", run_script(plan, step)], cwd=cwd, env={**clean, **env},
                          capture_output=True, text=True, timeout=300, check=False)


def test_the_doctor_step_never_runs_the_working_directorys_python(hostile_dir, tmp_path) -> None:
    empty = tmp_path / "sysroot"
    (empty / "sys").mkdir(parents=True)
    done = _run_step(_setup_plan(), "doctor", hostile_dir, {"NEURONCTL_SETUP_NEURONCTL": str(NEURONCTL),
                                                  "NEURONCTL_SYSROOT": str(empty)})
    assert done.returncode in (0, 1) and "packages.torch-neuronx" in done.stdout, done.stderr
    assert not (tmp_path / "PWNED").exists(), "the hostile .venv/bin/python ran"


def test_the_doctor_step_names_its_interpreter_by_absolute_path(hostile_dir, tmp_path) -> None:
    log = tmp_path / "argv.log"
    recorder = tmp_path / "neuronctl"
    recorder.write_text(f'#!/bin/sh\npwd > {log}\nprintf "%s\\n" "$@" >> {log}\n')
    recorder.chmod(0o755)
    for plan, python in ((_setup_plan(), None), (_setup_plan(with_python=True, venv="/opt/nc/venv"),
                                           "/opt/nc/venv/bin/python")):
        done = _run_step(plan, "doctor", hostile_dir, {"NEURONCTL_SETUP_NEURONCTL": str(recorder)})
        assert done.returncode == 0, done.stderr
        cwd, *argv = log.read_text().splitlines()
        assert cwd == "/" and "--python" in argv
        named = argv[argv.index("--python") + 1]
        assert os.path.isabs(named) and (python is None or named == python)


def test_the_python_stack_step_runs_from_a_neutral_directory(hostile_dir, tmp_path) -> None:
    """`neuronctl install` started in the hostile directory would read its indexes and `with`."""
    log = tmp_path / "argv.log"
    recorder = tmp_path / "neuronctl"
    recorder.write_text(f'#!/bin/sh\npwd > {log}\nls pyproject.toml >> {log} 2>&1 || true\n'
                        f'printf "%s\\n" "$@" >> {log}\n')
    recorder.chmod(0o755)
    plan = _setup_plan(with_python=True, venv="/opt/nc/venv")
    done = _run_step(plan, "python-stack", hostile_dir, {"NEURONCTL_SETUP_NEURONCTL": str(recorder)})
    assert done.returncode == 0, done.stderr
    lines = log.read_text().splitlines()
    assert lines[0] == "/" and "evil" not in log.read_text()
    assert "--venv" in lines and lines[lines.index("--venv") + 1] == "/opt/nc/venv"


@pytest.mark.parametrize("variable", ["NEURONCTL", "NEURONCTL_PYTHON"])
def test_a_relative_neuronctl_or_interpreter_is_refused(hostile_dir, tmp_path, variable) -> None:
    (hostile_dir / "neuronctl").write_text(f"#!/bin/sh\ntouch {tmp_path / 'PWNED'}\n")
    (hostile_dir / "neuronctl").chmod(0o755)
    done = _run_step(_setup_plan(), "doctor", hostile_dir, {
        f"NEURONCTL_SETUP_{variable}": "./neuronctl" if variable == "NEURONCTL" else ".venv/bin/python",
        "PATH": f".:{os.environ['PATH']}"})
    assert done.returncode == 1
    assert f"{variable} must be an absolute path" in done.stderr
    assert not (tmp_path / "PWNED").exists()


def test_the_cli_plan_calls_this_neuronctl_by_absolute_path(cli) -> None:
    script = cli(*PLAN, "--with-python", "--format", "sh").out
    preamble = script.split("set -eu\n", 1)[1]
    assert preamble.startswith("cd /\n")
    assert f"NEURONCTL=${{NEURONCTL_SETUP_NEURONCTL:-{NEURONCTL}}}" in preamble
    assert f"NEURONCTL_PYTHON=${{NEURONCTL_SETUP_NEURONCTL_PYTHON:-{sys.executable}}}" in preamble
    assert '"$NEURONCTL" install --release' in script
    assert '--python "$VENV/bin/python"' in script
