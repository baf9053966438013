"""The Action's list inputs (`args`, `lock-args`, `pip-args`) are split into words without glob
expansion (issue 31, item 8): a `*` in an input reaches the command as `*`, never as the
runner's file names. Each step runs as the runner runs it (support.action_runner.Runner), with
stand-ins for python3 and neuronctl that record the arguments they get."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.action_runner import Runner

RECORD = """#!/bin/sh
for a in "$@"; do printf '%s\\n' "$a"; done >> "{out}"
"""
# `python3 -m venv DIR` makes DIR/bin/python, which records its arguments, and DIR/bin/neuronctl
FAKE_PYTHON = """#!/bin/sh
if [ "$1" = -m ] && [ "$2" = venv ]; then
  mkdir -p "$3/bin"
  cp "{record}" "$3/bin/python"; cp "{record}" "$3/bin/neuronctl"
  exit 0
fi
exit 9
"""


@pytest.fixture
def glob_runner(tmp_path: Path) -> tuple[Runner, Path]:
    workspace, temp, bindir = tmp_path / "ws", tmp_path / "temp", tmp_path / "bin"
    for folder in (workspace, temp, bindir):
        folder.mkdir()
    for name in ("secret.txt", "other.txt"):  # what a glob would list
        (workspace / name).write_text("x")
    args_file = tmp_path / "args"
    record = bindir / "record"
    record.write_text(RECORD.format(out=args_file))
    (bindir / "python3").write_text(FAKE_PYTHON.format(record=record))
    for script in (record, bindir / "python3"):
        script.chmod(0o755)
    env = {"PATH": f"{bindir}:{os.environ['PATH']}", "HOME": str(tmp_path)}
    return Runner(tmp_path / "action", workspace, temp, env), args_file


def _args(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_a_star_in_args_and_lock_args_stays_a_star(glob_runner) -> None:
    run, out = glob_runner
    run.outputs["install"] = {"neuronctl": str(run.temp.parent / "bin" / "record")}
    steps = run.run({"python": "", "args": "--only *.txt", "lock-args": "--fallback *"},
                    skip=("install",))
    assert [s.code for s in steps] == [0, 0], [s.err for s in steps]
    got = _args(out)
    doctor, lock = got[got.index("doctor"):got.index("lock")], got[got.index("lock"):]
    assert doctor[-2:] == ["--only", "*.txt"] and lock[-2:] == ["--fallback", "*"], got
    assert not any(a.endswith("secret.txt") for a in got)


def test_a_star_in_pip_args_stays_a_star(glob_runner) -> None:
    run, out = glob_runner
    steps = run.run({"python": "", "lock": "", "pip-args": "--find-links * --no-index"},
                    skip=("doctor", "lock-check"))
    assert steps[0].code == 0, steps[0].err
    got = _args(out)
    install = got[got.index("install"):]
    assert install[3:6] == ["--find-links", "*", "--no-index"], install
    assert not any("secret.txt" in a for a in got)
