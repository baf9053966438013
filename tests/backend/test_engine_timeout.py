"""`install --timeout` bounds the engine: a server that trickles a wheel (a byte every 0.7 s never
trips the engine's own per-read timeout) is cut off by neuronctl, no progress for twice --timeout or
past the limit from the lock's sizes, then the usual clean-up (a new venv removed, an existing one
as it was). A download that keeps coming is not cut off. Real engines, a loopback server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.locks import write_lock
from support.loopback import QuietHandler, serving
from support.venvs import copied_venv, said, sha256_of
from support.wheels import build_wheel

from neuronctl.backend.engine_watch import SLACK, Limits, Watch, install_limits

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_engine_time.py)



class Paced:
    """A server of one file, `step` bytes every `every` seconds; `closed` once the client left."""

    def __init__(self, data: bytes, step: int, every: float) -> None:
        self.data, self.step, self.every = data, step, every
        self.closed = threading.Event()
        self.stop = threading.Event()
        self.requests = 0


@pytest.fixture
def paced() -> Iterator[tuple[Paced, str]]:
    state = Paced(b"", 1, 0.7)

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            state.requests += 1
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(state.data)))
            self.end_headers()
            try:
                for i in range(0, len(state.data), state.step):
                    if state.stop.is_set():
                        return
                    self.wfile.write(state.data[i:i + state.step])
                    self.wfile.flush()
                    time.sleep(state.every)
            except OSError:  # the client went
                state.closed.set()

    with serving(Handler) as base:
        try:
            yield state, base
        finally:
            state.stop.set()


def neuronctl(*args: str, limit: float = 60.0) -> tuple[subprocess.CompletedProcess[str], float]:
    """neuronctl in a process of its own (so a hung engine fails the test instead of hanging it)."""
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "neuronctl", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"neuronctl {' '.join(args[:1])} was still running after {limit:g}s")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), time.monotonic() - start


def trickled_lock(tmp_path: Path, state: Paced, base: str) -> tuple[Path, Path]:
    wheel = build_wheel(tmp_path / "house", "demo", "1.0", blob_size=3000)
    state.data = wheel.read_bytes()
    entry = {"name": wheel.name, "url": f"{base}/files/{wheel.name}", "size": len(state.data),
             "hashes": {"sha256": sha256_of(wheel)}}
    return write_lock(tmp_path / "pylock.toml", ("demo", "1.0", entry)), wheel


def test_pip_fetching_a_trickled_wheel_stops_at_the_timeout_and_changes_nothing(tmp_path, paced,
                                                                              pip_venvs):
    state, base = paced
    lock, _ = trickled_lock(tmp_path, state, base)
    python = copied_venv(pip_venvs, "3.12", tmp_path / "env")
    r, took = neuronctl("install", "--lock", str(lock), "--python", str(python), "--engine", "pip",
                        "--no-check", "--timeout", "2.5")
    assert r.returncode == 1, r.stderr
    assert took < 30, f"took {took:.1f}s"
    err = " ".join(r.stderr.split())
    assert "stopped: no progress for 5s (twice --timeout)" in err or "its time limit" in err, err
    assert "nothing changed" in err and said(python) is None
    assert state.requests >= 1 and state.closed.wait(15), "the engine kept the download open"


def test_uv_fetching_a_trickled_wheel_into_a_new_venv_stops_and_removes_the_venv(tmp_path, paced):
    state, base = paced
    lock, _ = trickled_lock(tmp_path, state, base)
    venv = tmp_path / "new"
    from support.wheels import find_python

    r, took = neuronctl("install", "--lock", str(lock), "--venv", str(venv), "--venv-python",
                        find_python("3.12"), "--engine", "uv", "--no-check", "--timeout", "2.5")
    assert r.returncode == 1, r.stderr
    assert took < 30, f"took {took:.1f}s"
    err = " ".join(r.stderr.split())
    assert "stopped:" in err and f"removed the new venv {venv}" in err, err
    assert not venv.exists()
    assert state.requests >= 1 and state.closed.wait(15), "the engine kept the download open"


def test_a_download_that_keeps_coming_is_not_stopped(tmp_path, paced, pip_venvs):
    """256 KiB/s, twice the floor rate, for 1.25 MiB with --timeout 2.5: longer than --timeout,
    within the limit its size gives, progress all the way."""
    state, base = paced
    state.step, state.every = 64 << 10, 0.25
    wheel = build_wheel(tmp_path / "house", "demo", "1.0", blob_size=5 << 18)
    state.data = wheel.read_bytes()
    entry = {"name": wheel.name, "url": f"{base}/files/{wheel.name}", "size": len(state.data),
             "hashes": {"sha256": sha256_of(wheel)}}
    lock = write_lock(tmp_path / "pylock.toml", ("demo", "1.0", entry))
    python = copied_venv(pip_venvs, "3.12", tmp_path / "env")
    r, took = neuronctl("install", "--lock", str(lock), "--python", str(python), "--engine", "pip",
                        "--no-check", "--timeout", "2.5")
    assert r.returncode == 0, r.stderr
    assert took > 2.5 and said(python) is not None


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_watch_counts_io_as_progress_but_not_the_output_neuronctl_read():
    clock, level = Clock(), [10_000_000, 1.0]
    watch = Watch(1, Limits(1000.0, 2.0), clock=clock, sample=lambda pid: (level[0], level[1]))
    for _ in range(20):  # a download writing 64 KiB a second: alive
        clock.now += 0.5
        level[0] += 32 << 10
        assert watch.due() is None
    stopped = None
    for _ in range(20):  # a spinner redrawn, every byte of it read by neuronctl: no progress
        clock.now += 0.3
        level[0] += 300
        level[1] += 0.001  # the CPU a redraw takes
        watch.output(300)
        stopped = watch.due()
        if stopped is not None:
            break
    assert stopped == "stopped: no progress for 2s (twice --timeout): nothing read, written or computed"
    assert clock.now - 100.0 < 10 + 3


def test_cpu_work_without_io_is_progress():
    """uv linking thousands of files from its cache, pip moving an old version aside: busy,
    nothing written."""
    clock, level = Clock(), [10_000_000, 1.0]
    watch = Watch(1, Limits(1000.0, 2.0), clock=clock, sample=lambda pid: (level[0], level[1]))
    for _ in range(40):
        clock.now += 0.25
        level[1] += 0.1  # 40% of a core
        assert watch.due() is None


def test_the_watch_stops_at_the_total_and_without_proc_it_still_does():
    clock = Clock()
    watch = Watch(1, Limits(5.0, 2.0, "why"), clock=clock, sample=lambda pid: None)
    clock.now += 4.9
    assert watch.due() is None  # no /proc: no idle limit, only the total
    clock.now += 0.2
    assert watch.due() == "stopped: still running after 5.0s, its time limit (why)"


def test_a_child_leaving_the_tree_is_a_new_baseline_not_progress():
    clock, level = Clock(), [5_000_000, 1.0]
    watch = Watch(1, Limits(1000.0, 2.0), clock=clock, sample=lambda pid: (level[0], level[1]))
    level[0] -= 1_000_000  # a child's counts gone before its parent reaped it
    level[1] -= 0.5
    clock.now += 0.5
    assert watch.due() is None
    level[0] += SLACK - 1
    clock.now += 1.6
    assert watch.due() is not None  # 2.1 s with less than SLACK since the last progress


def test_the_real_sample_of_a_process_tree_sees_a_child_write():
    """/proc as it is: a child's writes count while it runs (its parent's /proc/PID/io does
    not hold them until it is reaped)."""
    from neuronctl.backend.engine_watch import sample_tree

    proc = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.run("
                             "[sys.executable, '-c', 'import os, time; os.write(1, b\"x\" * 300000); "
                             "time.sleep(30)'], stdout=subprocess.DEVNULL)"], start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        got = sample_tree(proc.pid)
        while got is not None and got[0] < 300000 and time.monotonic() < deadline:
            time.sleep(0.1)
            got = sample_tree(proc.pid)
        assert got is not None and got[0] >= 300000 and got[1] > 0
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the child with it
        proc.wait()


def test_the_install_limit_grows_with_the_locked_sizes():
    small, large = install_limits([1000], 2.5), install_limits([700 << 20, None], 30.0)
    assert 5.0 < small.total < 5.1 and small.idle == 5.0 and small.read == 2.5
    assert large.total > (700 << 20) / (128 << 10) + (4 << 30) / (128 << 10)
