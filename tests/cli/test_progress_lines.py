"""Issue 25, item 3: long work shows what it is doing on a terminal (the doctor's running
checks, smoke's step n of N, the device probe's tier), and none of it reaches a pipe, --json or
-q."""

from __future__ import annotations

import sys

import pytest
from support.pty_session import env_without_columns, run_in_pty

from neuronctl.ops.reporter import CollectingReporter
from neuronctl.ops.smoke import SmokeRequest, run_smoke

pytestmark = pytest.mark.first_hour  # the first_hour campaign (was tests/test_first_hour_output_progress.py)

NEURONCTL = [sys.executable, "-m", "neuronctl"]


def test_doctor_level_2_shows_its_running_checks_on_a_terminal():
    out = run_in_pty([*NEURONCTL, "doctor", "--level", "2"], 100, env_without_columns())
    assert "checks: " in out and " of " in out and "done" in out, out[-2000:]
    assert "\x1b[?25l" in out  # rich's live status (the cursor hidden while it draws)


@pytest.mark.parametrize("extra", [["--json"], ["-q"], ["--format", "junit"]])
def test_no_status_line_with_json_quiet_or_a_machine_format(extra):
    out = run_in_pty([*NEURONCTL, "doctor", "--no-device-probe", *extra], 100, env_without_columns())
    assert "checks: " not in out and "\x1b[?25l" not in out, out[-2000:]


def test_no_status_line_when_stderr_is_a_pipe(tmp_path):
    import subprocess

    run = subprocess.run([*NEURONCTL, "doctor", "--no-device-probe"], capture_output=True,
                         text=True, env=env_without_columns(), timeout=120, check=False)
    assert run.returncode in (0, 1)
    assert "checks: " not in run.stderr + run.stdout and "\x1b" not in run.stderr


def test_smoke_shows_step_n_of_n_on_a_terminal_and_not_on_a_pipe():
    out = run_in_pty([*NEURONCTL, "smoke", "--steps", "200"], 100, env_without_columns())
    assert "smoke: step " in out and " of 200" in out, out[-2000:]
    out = run_in_pty([*NEURONCTL, "smoke", "--steps", "20", "--json"], 100, env_without_columns())
    assert "smoke: step" not in out


def test_smoke_reports_each_step_as_a_status_event():
    reporter = CollectingReporter()
    outcome = run_smoke(SmokeRequest(python=sys.executable, model=None, script=None,
                                     origin="--model", device="auto", steps=3, warmup=1,
                                     train=False, compile=False, timeout=120), reporter)
    assert outcome.ok
    said = reporter.messages("status")
    assert "smoke: warm-up step 1 of 1" in said and "smoke: step 3 of 3" in said, said


def test_the_probe_shows_its_tier_on_a_terminal():
    out = run_in_pty([*NEURONCTL, "probe"], 100, env_without_columns())
    assert "device probe: tier import" in out, out[-2000:]
