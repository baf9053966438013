"""The runner under both target-interpreter scripts: whatever the "interpreter" does with its
pipes, neuronctl reads a bounded amount for a bounded time and leaves nothing of it running.
Shell scripts stand in for hostile interpreters (they get the script path, then the channel fd)."""

import os
import signal
import threading
import time

from support.procs import alive

from neuronctl.probes.target_run import TAIL_CAP, TargetScript
from neuronctl.proc import kill_all


def _interpreter(tmp_path, body):
    path = tmp_path / "python"
    path.write_text("#!/bin/bash\nfd=$2\n" + body)
    path.chmod(0o755)
    return str(path)


def _dies(pid, within=5.0):
    """SIGKILL to a group is delivered to each member on its own time: allow it a moment."""
    deadline = time.monotonic() + within
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)


def test_floods_on_every_pipe_are_cut_at_their_caps(tmp_path):
    python = _interpreter(tmp_path, 'head -c 5000000 /dev/zero | tr "\\0" "c" >&$fd &\n'
                                    'head -c 5000000 /dev/zero | tr "\\0" "o" &\n'
                                    'head -c 5000000 /dev/zero | tr "\\0" "e" >&2 &\nwait\n')
    run = TargetScript(python, "python_version.py", []).collect(60, channel_cap=1000)
    assert run.returncode == 0
    assert run.channel_overflow and run.channel == b"c" * 1000
    assert run.stdout_tail == "o" * TAIL_CAP and run.stderr_tail == "e" * TAIL_CAP


def test_the_deadline_holds_and_the_whole_group_dies(tmp_path):
    marker = tmp_path / "child.pid"
    python = _interpreter(tmp_path, f"sleep 600 &\necho $! > {marker}\necho started >&$fd\nwait\n")
    start = time.monotonic()
    run = TargetScript(python, "python_version.py", []).collect(2)
    assert 2 <= time.monotonic() - start < 6
    assert run.timed_out and run.returncode is None and run.channel == b"started\n"
    assert _dies(int(marker.read_text()))


def test_kill_all_reaches_a_script_collected_in_another_thread(tmp_path):
    """The doctor's probe runs in a worker thread that Ctrl-C never reaches: main() calls
    kill_all(), and the worker's collect() returns at once."""
    marker = tmp_path / "child.pid"
    python = _interpreter(tmp_path, f"sleep 600 &\necho $! > {marker}\nwait\n")
    script = TargetScript(python, "python_version.py", [])
    runs = []
    worker = threading.Thread(target=lambda: runs.append(script.collect(300)), daemon=True)
    worker.start()
    deadline = time.monotonic() + 30
    while not (marker.exists() and marker.read_text().strip()):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    child = int(marker.read_text())
    kill_all()
    worker.join(10)
    assert runs and runs[0].returncode == -signal.SIGKILL
    assert _dies(child)


def test_exit_does_not_wait_for_a_grandchild_holding_the_pipes(tmp_path):
    marker = tmp_path / "holder.pid"
    python = _interpreter(tmp_path, f"setsid sleep 600 & echo $! > {marker}\necho done >&$fd\n"
                                    "exit 3\n")
    start = time.monotonic()
    run = TargetScript(python, "python_version.py", []).collect(60)
    holder = int(marker.read_text())
    try:
        assert time.monotonic() - start < 5
        assert run.returncode == 3 and run.channel == b"done\n"
        assert alive(holder)  # it held stdout, stderr and the channel the whole time
    finally:
        os.kill(holder, signal.SIGKILL)
