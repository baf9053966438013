"""After an install the doctor is printed in brief (a table renderer costs more than the rest of an
install with nothing to do): every check by id, each warning and failure with its message and fix,
the verdict; -v prints the doctor's full table."""

from __future__ import annotations

import re

import click
from click.testing import CliRunner

from neuronctl.cli.install_report import print_doctor
from neuronctl.ops.doctor.report import DoctorReport
from neuronctl.ops.doctor.runner import CheckResult


def _check(id_: str, status: str, message: str, fix: str | None = None) -> CheckResult:
    return CheckResult(id_, id_, status, message, fix, 1.0)  # type: ignore[arg-type]


REPORT = DoctorReport((
    _check("python.version", "pass", "Python 3.12.1 fits"),
    _check("hardware.chip", "skip", "no Neuron hardware"),
    _check("lock.drift", "warn", "numpy 2.0.0 installed, the lock says 2.1.0\x1b[2J",
           "neuronctl install --lock pylock.toml"),
    _check("packages.legacy-xla", "fail", "torch-xla 2.1 is installed", None),
    _check("device.holders", "skip", "no /dev/neuron*"),
), False, {})


def _render(report: DoctorReport, *, color: bool = False, quiet: bool = False) -> str:
    @click.command()
    def show() -> None:
        print_doctor(report, "/v/bin/python", color=color, quiet=quiet)

    return CliRunner().invoke(show, color=color).output


def test_every_check_is_named_and_problems_come_with_message_and_fix():
    out = _render(REPORT)
    lines = out.splitlines()
    assert lines[0].startswith("doctor on /v/bin/python (neuronctl doctor --python /v/bin/python")
    assert "  PASS  python.version" in lines
    assert "  SKIP  hardware.chip, device.holders" in lines
    assert "  WARN  lock.drift: numpy 2.0.0 installed, the lock says 2.1.0 [2J" in lines
    assert "        fix: neuronctl install --lock pylock.toml" in lines
    assert "  FAIL  packages.legacy-xla: torch-xla 2.1 is installed" in lines
    assert lines[-1] == REPORT.verdict_line() and lines[-1].startswith("fail: problems found: 1 failed")
    assert "\x1b" not in out  # no colour into a pipe, and a check's text cannot bring escapes


def test_quiet_prints_only_the_verdict_and_colour_only_when_asked():
    assert _render(REPORT, quiet=True).splitlines() == [REPORT.verdict_line()]
    assert "\x1b[" in _render(REPORT, color=True)


def test_install_prints_the_brief_doctor_and_minus_v_the_table(cli, tmp_path):
    """The whole CLI path: a venv that already has nothing to install (an empty lock)."""
    import sys

    from support.wheels import make_venv

    lock = tmp_path / "pylock.toml"
    lock.write_text('lock-version = "1.0"\ncreated-by = "test"\nrequires-python = ">=3.8"\n'
                    'packages = []\n')
    venv = make_venv(tmp_path / "v")
    brief = cli("install", "--lock", str(lock), "--python", str(venv), "--offline", "--engine", "uv")
    table = cli("-v", "install", "--lock", str(lock), "--python", str(venv), "--offline", "--engine", "uv")
    assert brief.code == table.code, (brief.out, brief.err, sys.version)
    assert "doctor on " in brief.out and "┃ status" not in brief.out and "lock.drift" in brief.out
    # -v: every check, off a terminal as the line form (a drawn table only on a terminal)
    assert "doctor on " not in table.out and re.search(r"^(PASS|WARN)  lock\.drift: ", table.out, re.M)
    assert len([line for line in table.out.splitlines() if line[:6] in ("PASS  ", "WARN  ", "SKIP  ")]) > 5


def test_nothing_to_do_for_a_new_venv_is_not_judged_on_its_base_python(cli, tmp_path):
    """A new venv's inspection is of its base interpreter: with nothing to install (the venv is
    never made) the doctor must not pass the base Python's facts off as the venv's."""
    from support.wheels import find_python

    lock = tmp_path / "pylock.toml"
    lock.write_text('lock-version = "1.0"\ncreated-by = "test"\nrequires-python = ">=3.8"\n'
                    'packages = []\n')
    venv = tmp_path / "nv"
    base = find_python("3.12")
    r = cli("install", "--lock", str(lock), "--venv", str(venv), "--venv-python", base,
            "--engine", "uv", "--offline")
    assert not (venv / "bin" / "python").exists()
    assert r.code == 1, (r.out, r.err)
    assert "FAIL  python.version: " in r.out and "no such interpreter" in r.out
    assert not [line for line in r.out.splitlines() if line.startswith("  PASS") and "python.version" in line]


def test_the_doctor_afterwards_is_bounded_by_installs_own_check_timeout(cli, tmp_path):
    """install's --check-timeout (config `check_timeout`) bounds the doctor afterwards as it
    bounds `doctor`'s checks; by default the doctor level's budget, never the network timeout."""
    import json

    from support.wheels import make_venv

    from neuronctl.ops.doctor.levels import DEFAULT_LEVEL, LEVELS

    lock = tmp_path / "pylock.toml"
    lock.write_text('lock-version = "1.0"\ncreated-by = "test"\nrequires-python = ">=3.8"\n'
                    'packages = []\n')
    venv = make_venv(tmp_path / "v")
    args = ("install", "--lock", str(lock), "--python", str(venv), "--offline", "--engine", "uv",
            "--json")

    def budget(*extra: str) -> float:
        r = cli(*args, *extra)
        assert r.code in (0, 1), r.err
        summary = json.loads(r.out)["doctor"]
        assert summary["level"] == DEFAULT_LEVEL
        return float(summary["budget_s"])

    assert budget() == LEVELS[DEFAULT_LEVEL].total_s
    assert budget("--timeout", "300") == LEVELS[DEFAULT_LEVEL].total_s  # a request's limit
    assert budget("--check-timeout", "7") == 7 + 5  # one check's time and the run's margin
    (tmp_path / "pyproject.toml").write_text("[tool.neuronctl]\ncheck_timeout = 9\n")
    assert budget("--config", str(tmp_path / "pyproject.toml")) == 9 + 5
