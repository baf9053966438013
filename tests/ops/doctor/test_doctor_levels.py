"""`doctor --level 1|2|3`: what each level runs, the budgets `--help` prints, and that they hold:
a level-1 run never imports torch in the target (here a torch whose import sleeps 60 s), a check
past its budget is a fail that says "timed out" and leaves nothing running, and level 3 runs the
user's own model (config `model`) with real torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support.sysroots import build_host
from support.wheels import build_wheel, make_venv, pip_install

from neuronctl.ops.doctor.checks_model import NO_MODEL
from neuronctl.ops.doctor.levels import LEVELS, Budget, budget_for
from neuronctl.ops.doctor.runner import Check, CheckOutcome, run_checks
from neuronctl.probes.target_run import TargetScript

SLOW_TORCH = '''
import os
import time

with open(os.environ["SLOW_TORCH_MARKER"], "w") as marker:
    marker.write(str(os.getpid()))
time.sleep(60)
'''


@pytest.fixture(scope="module")
def slow_torch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real venv whose installed torch 2.13 takes 60 s to import (and says so in a file)."""
    root = tmp_path_factory.mktemp("slow-torch")
    wheel = build_wheel(root / "wheels", "torch", "2.13.0+cpu",
                        files={"torch/__init__.py": SLOW_TORCH})
    python = make_venv(root / "venv")
    pip_install(python, [wheel])
    return python


def reaped(pid: int, within: float = 5.0) -> bool:
    """Gone from the process table (a zombie still counts), waiting up to `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def as_health_check(*args: str, limit: float, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    """neuronctl as Slurm's HealthCheckProgram runs it: its own process, pipes read to the end."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "neuronctl", *args], capture_output=True,
                          text=True, timeout=limit, check=False, env=env)
    return done, time.monotonic() - started


def test_help_prints_every_level_with_its_budget(cli) -> None:
    r = cli("doctor", "--help")
    assert r.code == 0
    text = " ".join(r.out.split())
    for level in LEVELS.values():
        assert f"{level.number}: " in text and level.budget_text() in text
    assert "1: static facts only, no torch import" in text
    assert "10 s a check, 20 s in all" in text  # level 1 fits Slurm's 60 s HealthCheckProgram


def test_budgets_per_level_and_with_timeout() -> None:
    assert budget_for(1, None) == Budget(10, 10, 20)
    assert budget_for(2, None).limit("device.probe") == 90 and budget_for(2, None).total_s == 120
    three = budget_for(3, None)
    # the model starts after the device probe: its limit, counted from the start, holds both
    assert (three.limit("device.probe"), three.limit("model.smoke"), three.total_s) == \
        (600, 1200, 1500)
    assert budget_for(1, 4) == Budget(4, 4, 9) and budget_for(3, 30).total_s == 65
    assert Budget.inner(10) == 8 and Budget.inner(90) == 85  # the work's own timeout fires first


def test_level_1_never_imports_torch_in_the_target(slow_torch: Path, tmp_path: Path) -> None:
    marker = tmp_path / "torch-imported"
    host = build_host(tmp_path / "trn2", "trn2")
    env = {**os.environ, "SLOW_TORCH_MARKER": str(marker)}
    budget = LEVELS[1].total_s
    done, took = as_health_check("doctor", "--level", "1", "--json", "--python", str(slow_torch),
                           "--sysroot", str(host), limit=budget + 10, env=env)
    assert took < budget, f"level 1 took {took:.1f}s"
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(done.stdout)
    assert doc["summary"]["verdict"] in ("pass", "warn") and doc["summary"]["level"] == 1
    ids = [c["id"] for c in doc["checks"]]
    assert "device.probe" not in ids and "model.smoke" not in ids and "python.version" in ids
    assert not any(c["message"].startswith("timed out") for c in doc["checks"])
    assert doc["environment"]["packages"]["torch"] == "2.13.0+cpu"  # read from its metadata
    assert not marker.exists(), "level 1 imported torch in the target"


def test_level_2_probe_of_a_hanging_torch_times_out_and_leaves_nothing(slow_torch: Path,
                                                                       tmp_path: Path) -> None:
    marker = tmp_path / "torch-imported"
    (tmp_path / "sys").mkdir()  # an empty machine is still a root: sys/ (issue 22, item 11)
    env = {**os.environ, "SLOW_TORCH_MARKER": str(marker)}
    done, took = as_health_check("doctor", "--level", "2", "--only", "device.probe", "--timeout", "4",
                           "--json", "--python", str(slow_torch), "--sysroot", str(tmp_path),
                           limit=40, env=env)
    assert took < 4 + 10, f"took {took:.1f}s"
    assert done.returncode == 1
    (check,) = json.loads(done.stdout)["checks"]
    assert check["id"] == "device.probe" and check["status"] == "fail"
    assert "timed out" in check["message"] + " ".join(check["details"])
    assert marker.exists() and reaped(int(marker.read_text()))


def test_the_run_budget_cuts_every_check_still_running() -> None:
    def slow() -> CheckOutcome:
        time.sleep(30)
        return CheckOutcome("pass", "never")

    started = time.monotonic()
    results = run_checks([Check("a.slow", "slow", slow, 10), Check("b.slow", "slow", slow, 10),
                          Check("c.fine", "fine", lambda: CheckOutcome("pass", "ok"), 10)], total=0.5)
    assert time.monotonic() - started < 3
    assert [(r.id, r.status) for r in results] == [("a.slow", "fail"), ("b.slow", "fail"),
                                                   ("c.fine", "pass")]
    assert results[0].message == "timed out: the run's budget of 0.5s ran out"


def test_a_check_past_its_budget_leaves_no_target_interpreter_running(tmp_path: Path) -> None:
    hang = tmp_path / "hang"
    hang.mkdir()
    (hang / "sitecustomize.py").write_text("import time\ntime.sleep(60)\n")
    started: list[TargetScript] = []

    def inspect() -> CheckOutcome:
        script = TargetScript(sys.executable, "python_version.py", [],
                              env={**os.environ, "PYTHONPATH": str(hang)})
        started.append(script)
        script.collect(60)
        return CheckOutcome("pass", "never")

    (result,) = run_checks([Check("python.version", "Python", inspect, 1.0)])
    assert result.status == "fail" and result.message == "timed out after 1s"
    assert started and reaped(started[0].child.pid)


@pytest.mark.parametrize(("args", "message"), [
    (("--level", "2", "--no-device-probe"), "--no-device-probe is level 1"),
    (("--level", "1", "--compile"), "--compile is level 3"),
    (("--no-device-probe", "--compile"), "give one of them"),
    (("--level", "1", "--only", "device.probe"), "--only device.probe: runs from level 2"),
    (("--only", "model.smoke"), "--only model.smoke: runs from level 3"),
    (("--level", "4"), "--level"),
    (("--format", "prometheus"), "give -o FILE.prom"),
])
def test_conflicting_level_flags_are_exit_2(cli, args: tuple[str, ...], message: str) -> None:
    r = cli("doctor", *args)
    assert r.code == 2 and message in r.err, r.err


@pytest.mark.parametrize(("args", "level"), [
    ((), 2), (("--no-device-probe",), 1), (("--compile",), 3), (("--level", "3"), 3),
])
def test_the_older_flags_are_levels(cli, tmp_path: Path, args: tuple[str, ...], level: int) -> None:
    (tmp_path / "sys").mkdir()  # an empty machine is still a root: sys/ (issue 22, item 11)
    r = cli("doctor", "--json", "--only", "python", *args, "--sysroot", str(tmp_path))
    assert r.code in (0, 1), r.err
    summary = json.loads(r.out)["summary"]
    assert summary["level"] == level and summary["budget_s"] == LEVELS[level].total_s


def test_level_3_without_a_model_skips_saying_how_to_set_one(cli, tmp_path: Path) -> None:
    (tmp_path / "sys").mkdir()  # an empty machine is still a root: sys/ (issue 22, item 11)
    r = cli("doctor", "--level", "3", "--only", "model", "--json", "--sysroot", str(tmp_path))
    (check,) = json.loads(r.out)["checks"]
    assert (check["id"], check["status"], check["message"]) == ("model.smoke", "skip", NO_MODEL)


MODEL = '''
import torch

def make():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)), \\
        (torch.randn(2, 8),), 2
'''


def test_level_3_runs_the_configured_model_with_real_torch(cli, isolated_env: Path) -> None:
    (isolated_env / "tiny.py").write_text(textwrap.dedent(MODEL))
    (isolated_env / "pyproject.toml").write_text('[tool.neuronctl]\nmodel = "tiny:make"\n')
    (isolated_env / "sys").mkdir(exist_ok=True)  # an empty machine is still a root: sys/ (issue 22, item 11)
    r = cli("doctor", "--level", "3", "--only", "model", "--device", "cpu", "--json",
            "--sysroot", str(isolated_env))
    assert r.code == 0, r.out + r.err
    (check,) = json.loads(r.out)["checks"]
    assert check["status"] == "pass", check
    assert check["message"].startswith("tiny:make (config model (") and "ran on cpu" in check["message"]
    assert "tokens/s" in check["message"] and check["details"][0].startswith("outputs: max abs")


def test_level_3_with_a_malformed_model_in_config_is_exit_2(cli, isolated_env: Path) -> None:
    (isolated_env / "pyproject.toml").write_text('[tool.neuronctl]\nmodel = "tiny make"\n')
    r = cli("doctor", "--level", "3", "--only", "model")
    assert r.code == 2 and "expected MODULE:FACTORY" in r.err
    assert cli("doctor", "--level", "1", "--only", "python").code in (0, 1)  # unused below 3
