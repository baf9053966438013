"""Issue 35, items 1 and 2: off a terminal (a CI log, a pipe, a file; with or without COLUMNS,
TERM=dumb) every table is the line form the README shows: one line a row, plain ASCII, no box
characters, no padding, nothing wrapped or dropped. On a terminal a table is drawn only where it
fits whole; a narrower one gets the line form wrapped between words, so no line is wider than the
terminal but a value that is wider by itself, and no column (a price's rate and source, a
release's date, Python range and chips) is ever left out."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from support.pty_session import on_pty

BOX = set("│┃┏┓┗┛┡┩┣┫━─┳┻╇╋┼┬┴└┘┌┐╭╮╯╰")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
COST = ("cost", "--throughput", "1234.5", "--tokens", "2000000000",
        "--instance", "trn1.32xlarge", "--instance", "p5.48xlarge", "--price", "p5.48xlarge=98.32")
COMMANDS = (("releases",), ("releases", "show", "2.33.1"), ("cost", "--prices"), COST,
            ("doctor", "--level", "1"))
STATUS_LINE = re.compile(r"(PASS|WARN|FAIL|SKIP) {1,2}[a-z0-9._-]+: \S")


def _env(columns: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    env["TERM"] = "dumb"
    if columns:
        env["COLUMNS"] = columns
    return env


def _piped(args: tuple[str, ...], columns: str | None) -> str:
    done = subprocess.run([sys.executable, "-m", "neuronctl", *args], capture_output=True,
                          text=True, env=_env(columns), timeout=120, check=False)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


@pytest.mark.parametrize("columns", [None, "80"])
def test_off_a_terminal_every_table_is_plain_lines(columns: str | None) -> None:
    for args in COMMANDS:
        out = _piped(args, columns)
        lines = out.splitlines()
        assert lines and out.isascii(), args
        assert not BOX & set(out), (args, out[:400])
        assert all(line == line.rstrip() for line in lines), (args, [x for x in lines if x != x.rstrip()])
    releases = _piped(("releases",), columns).splitlines()
    rows = [line for line in releases if re.match(r"\d+\.\d+\.\d+: ", line)]
    assert len(rows) >= 17
    assert all("; python " in r and "; chips " in r and ": date " in r for r in rows)
    cost = [line for line in _piped(COST, columns).splitlines() if line.startswith(("trn1", "p5"))]
    assert len(cost) == 2
    for row in cost:  # a price is never without its basis and its source
        assert "; rate " in row and "; price source " in row, row
    trn1, p5 = sorted(cost, reverse=True)
    assert "rate RI-effective" in trn1 and "rate given" in p5 and "source --price" in p5


def test_the_doctor_in_a_ci_log_reads_like_the_readme() -> None:
    lines = _piped(("doctor", "--level", "1"), None).splitlines()
    checks = [line for line in lines if line[:4] in ("PASS", "WARN", "FAIL", "SKIP")]
    assert checks and all(STATUS_LINE.match(line) for line in checks), checks
    assert any(line.startswith("WARN  packages.torch-neuronx: torch-neuronx is not installed")
               for line in checks)


def _shown(args: tuple[str, ...], width: int) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    ran = on_pty([sys.executable, "-m", "neuronctl", *args], env, width=width, timeout=120)
    assert ran.code in (0, 1), ran.shown
    return [ANSI.sub("", line).rstrip() for line in ran.shown.replace("\r", "").splitlines()]


@pytest.mark.parametrize("width", [60, 80, 120])
def test_on_a_narrow_terminal_no_line_is_wider_than_it(width: int) -> None:
    for args in (("releases",), COST, ("cost", "--prices"), ("releases", "show", "2.33.1")):
        lines = _shown(args, width)
        for line in lines:
            if len(line) > width:  # only a value wider than the terminal by itself
                assert " " not in line.strip(), (args, width, line)
        text = "\n".join(lines)
        for value in ("2.9.0.2.15.32035", "trn1.32xlarge", "8.197", "RI-effective", "2026-11-11"):
            if value in _piped(args, None):
                assert value in text, (args, width, value)


def test_a_terminal_wide_enough_gets_the_table() -> None:
    lines = _shown(("releases",), 220)
    assert any("┃ release ┃" in line for line in lines)
    assert max(len(line) for line in lines) <= 220
