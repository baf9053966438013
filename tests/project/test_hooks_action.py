"""The GitHub Action (action.yml) run step by step as the runner runs a composite action: each
`run:` script through `bash --noprofile --norc -eo pipefail`, with its `env:` and
`working-directory:` after `${{ }}` substitution, GITHUB_OUTPUT / GITHUB_STEP_SUMMARY files and
step outputs passed on, against a temporary project with a real lock from loopback indexes.

Offline: the install step's `pip install <action checkout>` runs for real (build isolation
included) from a wheelhouse of neuronctl's dependencies (tests/support/hooks_wheelhouse.py) with pip's
own PIP_NO_INDEX / PIP_FIND_LINKS, as a user behind a mirror sets them. The one step not run is
`actions/setup-python`, which the test stands in for as it acts: it puts a base Python (this
venv's own) first on PATH as `python3`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.action_runner import Runner, load_action
from support.hooks_wheelhouse import checkout_copy, offline_pip_env, write_project
from support.shellcheck import needs_shellcheck, shellcheck

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def action_path(tmp_path_factory):
    return checkout_copy(tmp_path_factory.mktemp("actions") / "neuronctl")


@pytest.fixture
def project(cli, uni, monkeypatch, tmp_path):
    """A project as a user keeps it: [tool.neuronctl] with its indexes, a lock made from them,
    and a venv the doctor checks."""
    work = write_project(Path.cwd(), uni, monkeypatch)
    r = cli("lock")
    assert r.code == 0, r.err
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(work / ".venv")], check=True)
    return work


def _setup_python(where: Path) -> Path:
    """What actions/setup-python leaves first on PATH: a base Python as python3."""
    where.mkdir()
    (where / "python3").symlink_to(Path(getattr(sys, "_base_executable", sys.executable)))
    return where


def _runner_env(wheelhouse: Path, bindir: Path) -> dict[str, str]:
    env = {**os.environ, **offline_pip_env(wheelhouse), "PATH": f"{bindir}:{os.environ['PATH']}"}
    env.pop("VIRTUAL_ENV", None)
    return env


@pytest.fixture(scope="module")
def installed(action_path, wheelhouse, tmp_path_factory):
    """The action's install step, run once for the module (the slow part: a venv, neuronctl
    built from the checkout and installed with its dependencies); the tests run the rest.
    Module fixtures start before conftest's per-test isolation, so this one's environment is
    made whole here: its own HOME and caches, pip offline, proxies dead."""
    root = tmp_path_factory.mktemp("install")
    temp = root / "runner-temp"
    temp.mkdir()
    bindir = _setup_python(root / "bin")
    env = {"PATH": f"{bindir}:{os.environ['PATH']}", "HOME": str(root), "LANG": "C.UTF-8",
           "XDG_CACHE_HOME": str(root / ".cache"), "PIP_NO_CACHE_DIR": "1",
           "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
           **offline_pip_env(wheelhouse)}
    runner = Runner(action_path, root, temp, env)
    steps = runner.run({"python": "", "lock": ""}, skip=("doctor", "lock-check"))
    return runner, steps, bindir


@pytest.fixture
def runner(project, installed, wheelhouse, tmp_path):
    first, _, bindir = installed
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    runner = Runner(first.action_path, project, temp, _runner_env(wheelhouse, bindir))
    runner.outputs = dict(first.outputs)
    return runner


def test_the_install_step_builds_neuronctl_from_the_checkout_into_its_own_venv(installed):
    runner, steps, _ = installed
    assert [s.name for s in steps] == ["Install neuronctl"]
    assert steps[0].code == 0, steps[0].err[-3000:]
    assert steps[0].out.startswith("neuronctl ")  # its --version: the action's own install ran
    script = Path(runner.outputs["install"]["neuronctl"])
    assert script.is_file() and script.is_relative_to(runner.temp)
    # A real install (not the checkout on sys.path): the package sits in that venv.
    r = subprocess.run([str(script.parent / "python"), "-c", "import neuronctl; print(neuronctl.__file__)"],
                       capture_output=True, text=True, check=True, cwd=runner.temp)
    assert r.stdout.startswith(str(runner.temp)) and "site-packages" in r.stdout


def test_the_doctor_reports_for_github_and_the_lock_check_passes(runner):
    steps = runner.run({"python": "", "target": ".venv", "args": "--level 1"}, skip=("install",))
    assert [s.name for s in steps] == ["neuronctl doctor", "neuronctl lock --check"]
    assert all(s.code == 0 for s in steps), [(s.name, s.code, s.err[-2000:]) for s in steps]
    assert re.search(r"^::(warning|error|notice)", steps[0].out, re.M), steps[0].out
    assert "python.version" in runner.summary.read_text()
    assert "up to date" in steps[1].out + steps[1].err


def test_a_stale_lock_fails_the_lock_step(runner, project):
    text = (project / "pyproject.toml").read_text().replace('python = "3.12"', 'python = "3.13"')
    (project / "pyproject.toml").write_text(text)
    steps = runner.run({"python": "", "target": ".venv", "args": "--level 1"}, skip=("install",))
    assert steps[0].code == 0
    assert steps[-1].name == "neuronctl lock --check" and steps[-1].code == 1
    assert "targets" in steps[-1].err


def test_an_empty_lock_input_skips_the_check_and_inputs_are_data_not_shell(runner, project):
    steps = runner.run({"python": "", "target": ".venv", "lock": "",
                        "args": "--level 1 --only python.version"}, skip=("install",))
    assert steps[-1].code == 0 and "skipped" in steps[-1].out
    # A hostile input is an argument, never shell: the doctor refuses it, nothing runs.
    steps = runner.run({"python": "", "target": ".venv", "release": "$(touch pwned)`touch pwned2`"},
                       skip=("install",))
    assert steps[-1].name == "neuronctl doctor" and steps[-1].code == 2
    assert not (project / "pwned").exists() and not (project / "pwned2").exists()


def test_the_migrate_step_annotates_xla_code_and_its_paths_are_data(runner, project):
    """With the `migrate` input the action runs `neuronctl migrate --format github` on those
    paths: an XLA-era file fails the step with its annotation; a path that is shell is refused
    as a path (exit 2), nothing runs."""
    (project / "train.py").write_text("import torch_xla.core.xla_model as xm\nd = xm.xla_device()\n")
    steps = runner.run({"python": "", "lock": "", "migrate": "train.py"},
                       skip=("install", "doctor", "lock-check"))
    assert [s.name for s in steps] == ["neuronctl migrate"] and steps[0].code == 1, steps
    assert re.search(r"^::warning file=train\.py,line=2,col=5,title=neuronctl NRN102::", steps[0].out, re.M)
    steps = runner.run({"python": "", "lock": "", "migrate": "$(touch pwned) *"},
                       skip=("install", "doctor", "lock-check"))
    assert steps[0].code == 2 and not (project / "pwned").exists()


def test_action_inputs_are_documented_and_used():
    action = load_action()
    steps_text = yaml.safe_dump(action["runs"]["steps"])
    for name, spec in action["inputs"].items():
        assert spec.get("description"), name
        assert f"inputs.{name}" in steps_text, f"input {name} is declared but never used"


@needs_shellcheck
def test_every_run_script_passes_shellcheck(tmp_path):
    """As GitHub runs them: bash, `-e -o pipefail`; shellcheck is installed by .ci/run."""
    for index, step in enumerate(load_action()["runs"]["steps"]):
        if "run" not in step:
            continue
        script = tmp_path / f"step{index}.sh"
        script.write_text("set -eo pipefail\n" + step["run"])
        r = shellcheck(script, "bash")
        assert r.returncode == 0, (step["name"], r.stdout)
