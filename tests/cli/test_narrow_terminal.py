"""Issue 25, item 2: output that survives a terminal. At 60, 80 and 100 columns (COLUMNS, and a
real pty of that size) the doctor's fixes are their own unwrapped `fix: ` lines with no table
border on them, and every version, price, instance name and path appears whole on one line;
piped output is not wrapped."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import pytest
from rich.console import Console
from support.pty_session import run_in_pty

from neuronctl.cli.doctor_report import print_text
from neuronctl.ops.doctor.report import DoctorReport
from neuronctl.ops.doctor.runner import CheckResult

pytestmark = pytest.mark.first_hour  # the first_hour campaign (was tests/test_first_hour_output.py)

WIDTHS = (60, 80, 100)
BORDERS = set("│┃┏┓┗┛┡┩┣┫━─┳┻╇╋┼┬┴└┘┌┐╭╮╯╰")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def plain(text: str) -> list[str]:
    return [ANSI.sub("", line).rstrip() for line in text.replace("\r", "").splitlines()]


def whole(lines: list[str], value: str) -> bool:
    return any(value in line for line in lines)


def assert_fixes_pasteable(lines: list[str], fixes: list[str]) -> None:
    fix_lines = [line for line in lines if line.lstrip().startswith("fix: ")]
    for fix in fixes:
        assert f"fix: {fix}" in fix_lines, (fix, fix_lines)
    for line in fix_lines:
        assert not BORDERS & set(line), line
    for line in lines:  # a fix is never in a table cell
        if BORDERS & set(line):
            assert "fix:" not in line, line


LONG_FIX = ("/home/someone/projects/trainium-experiments/.venv/bin/neuronctl install --release "
            "2.33.1 --torch 2.14 --venv /home/someone/projects/trainium-experiments/.venv-neuron "
            "--venv-python 3.12 --yes")
PATH = "/home/someone/projects/trainium-experiments/.venv/lib/python3.12/site-packages"


def _long_report() -> DoctorReport:
    checks = (
        CheckResult("python.version", "Python", "warn", f"Python 3.11.7 ({PATH}) is not "
                    "supported by Neuron 2.33.1 (native needs 3.12-3.14)", LONG_FIX, 1.0),
        CheckResult("packages.torch-neuronx", "torch-neuronx", "fail", "torch-neuronx is not "
                    "installed (Neuron 2.33.1 pins 2.14.3.0, 2.13.3.0, 2.9.0.2.15.32035)",
                    "pip install 'torch-neuronx==2.14.3.0' --extra-index-url "
                    "https://pip.repos.neuron.amazonaws.com", 1.0),
        CheckResult("host.os", "OS", "pass", "ubuntu 24.04", None, 1.0),
    )
    return DoctorReport(checks, False, {})


@pytest.mark.parametrize("width", WIDTHS)
def test_doctor_text_keeps_fixes_and_values_whole(width):
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=True, no_color=True)
    print_text(_long_report(), console, verbose=0, quiet=False)
    lines = plain(out.getvalue())
    assert_fixes_pasteable(lines, [c.fix for c in _long_report().checks if c.fix])
    for value in (PATH, "3.11.7", "2.14.3.0", "2.9.0.2.15.32035", "3.12-3.14"):
        assert whole(lines, value), (value, lines)


def _cli_env(width: int | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    if width:
        env["COLUMNS"] = str(width)
    return env


def _values_of_releases(cli) -> list[str]:
    doc = json.loads(cli("releases", "--json").out)
    values = []
    for r in doc["releases"]:
        values.append(r["version"])
        values += r["torch"]
    return values


COST = ("cost", "--throughput", "1234.5", "--tokens", "2000000000",
        "--instance", "trn1.32xlarge", "--instance", "inf2.48xlarge")


def _values_of_cost(cli) -> list[str]:
    doc = json.loads(cli(*COST, "--json").out)
    rows = doc["cost"]["instances"]
    values = []
    for row in rows:
        text = json.dumps(row)
        values += re.findall(r'"instance": "([^"]+)"', text)
        values += [f"{v:,.3f}" for v in map(float, re.findall(r'"usd_per_hour": ([0-9.]+)', text))]
    assert values
    return values


@pytest.mark.parametrize("width", WIDTHS)
def test_releases_and_cost_keep_values_whole_at_a_width_from_columns(cli, monkeypatch, width):
    releases, cost = _values_of_releases(cli), _values_of_cost(cli)
    monkeypatch.setenv("COLUMNS", str(width))
    lines = plain(cli("releases").out)
    for value in releases:
        assert whole(lines, value), (value, lines)
    lines = plain(cli(*COST).out)
    for value in cost:
        assert whole(lines, value), (value, lines)


@pytest.mark.parametrize("width", WIDTHS)
def test_through_a_real_terminal(cli, width):
    releases, cost = _values_of_releases(cli), _values_of_cost(cli)
    neuronctl = [sys.executable, "-m", "neuronctl"]
    lines = plain(run_in_pty([*neuronctl, "releases"], width, _cli_env(None)))
    for value in releases:
        assert whole(lines, value), (value, lines)
    lines = plain(run_in_pty([*neuronctl, *COST], width, _cli_env(None)))
    for value in cost:
        assert whole(lines, value), (value, lines)


def test_the_real_doctor_through_a_terminal_keeps_every_fix_pasteable(cli):
    doc = json.loads(cli("doctor", "--json").out)
    fixes = sorted({c["fix"] for c in doc["checks"] if c["fix"] and c["status"] in ("warn", "fail")})
    for width in (60, 100):
        lines = plain(run_in_pty([sys.executable, "-m", "neuronctl", "doctor"], width,
                                 _cli_env(None)))
        assert_fixes_pasteable(lines, fixes)


def test_piped_output_is_not_wrapped():
    out = subprocess.run([sys.executable, "-m", "neuronctl", *COST], check=True, capture_output=True,
                         text=True, env=_cli_env(None), timeout=60).stdout
    lines = plain(out)
    formula = [line for line in lines if line.startswith("usd_per_million_tokens")]
    assert formula and "(data parallel)" in formula[0], lines  # one line, however long
    table = [line for line in lines if "trn1.32xlarge" in line]
    # The line form: nothing dropped, a price never without its rate (basis) and source.
    assert table and len(table) == 1 and len(table[0]) > 100
    assert "USD/hour 8.197; rate RI-effective" in table[0] and "price source" in table[0]
