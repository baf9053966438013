"""What a smoke model starts does not outlive the run (issue 22, item 16): a child in a session
of its own (start_new_session / setsid), and a daemon that forked away from its parent, are
killed at the timeout and when the model returns. Real torch CPU in this venv, real processes;
the model writes each child's pid to a file, and /proc says whether it still runs."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import textwrap
import time
from pathlib import Path

import pytest
from support.procs import alive

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_proc_smoke.py)

FAST = ("--device", "cpu", "--warmup", "1", "--steps", "1")

SPAWN = '''
    import os, subprocess, sys, time
    import torch

    PIDS = {pids!r}

    def session_child():
        """A child in its own session: no process group kill reaches it."""
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                                 start_new_session=True)
        open(PIDS, "a").write(str(child.pid) + "\\n")

    def daemon():
        """A daemon: its parent exits at once, so it is nobody's child any more."""
        code = ("import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', "
                "'import time; time.sleep(300)'], start_new_session=True); "
                "open(sys.argv[1], 'a').write(str(p.pid) + chr(10))")
        subprocess.run([sys.executable, "-c", code, PIDS], check=True)

    class Stuck(torch.nn.Linear):
        def forward(self, x):
            time.sleep(600)

    class Leaving(torch.nn.Linear):
        def forward(self, x):
            os._exit(0)  # no exit handler runs: what it started is nobody's to clean up

    def {factory}():
        session_child()
        daemon()
        deadline = time.time() + 30
        while len(open(PIDS).read().split()) < 2 and time.time() < deadline:
            time.sleep(0.05)
        model = {model}
        return model, torch.randn(2, 4)
'''


def _pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _smoke_spawner(cli, where: Path, factory: str, model: str, *args: str) -> tuple[int, list[int], dict]:
    pids = where / f"{factory}.pids"
    (where / f"spawner_{factory}.py").write_text(
        textwrap.dedent(SPAWN.format(pids=str(pids), factory=factory, model=model)))
    try:
        result = cli("smoke", "--json", *FAST, "--model", f"spawner_{factory}:{factory}", *args)
        found = _pids(pids)
        assert len(found) == 2, (found, result.out, result.err)
        deadline = time.monotonic() + 5  # SIGKILL is delivered at once; /proc may lag a moment
        while any(alive(p) for p in found) and time.monotonic() < deadline:
            time.sleep(0.05)
        return result.code, [p for p in found if alive(p)], json.loads(result.out)
    finally:
        for pid in _pids(pids):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_children_in_their_own_session_are_killed_at_the_timeout(cli, isolated_env):
    code, left, doc = _smoke_spawner(cli, isolated_env, "stuck", "Stuck(4, 4)", "--timeout", "20")
    assert doc["smoke"]["outcome"] == "timeout", doc
    assert code == 1 and left == [], f"still running after the timeout: {left}"


def test_children_left_running_by_a_model_that_passes_are_killed_as_it_ends(cli, isolated_env):
    code, left, doc = _smoke_spawner(cli, isolated_env, "fine", "torch.nn.Linear(4, 4)")
    assert code == 0 and doc["smoke"]["outcome"] == "ok", doc
    assert left == [], f"still running after the run: {left}"


def test_children_of_a_model_that_leaves_through_os_exit_are_killed(cli, isolated_env):
    code, left, doc = _smoke_spawner(cli, isolated_env, "leaving", "Leaving(4, 4)")
    assert code != 0 and doc["smoke"]["outcome"] != "ok", doc
    assert left == [], f"still running after the run: {left}"
