"""neuronctl.proc, the one process runner, against real child processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.procs import gone

from neuronctl import proc

PY = sys.executable


def _pid_in(path: Path, within: float = 10.0) -> int:
    until = time.monotonic() + within
    while time.monotonic() < until:
        if path.is_file() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"{path} never written")


def test_the_deadline_kills_the_whole_group_a_forked_grandchild_included(tmp_path):
    marker = tmp_path / "grandchild.pid"
    code = textwrap.dedent(f"""
        import os, time
        if os.fork() == 0:
            open({str(marker)!r}, "w").write(str(os.getpid()))
            time.sleep(600)
        time.sleep(600)
    """)
    start = time.monotonic()
    done = proc.run([PY, "-c", code], proc.Bounds(1.5))
    assert done.timed_out and done.returncode is None and done.stopped == "timed out after 1.5s"
    assert time.monotonic() - start < 10 and done.duration >= 1.5
    assert gone(_pid_in(marker), within=5.0)


def test_sigterm_first_then_the_grace_then_sigkill():
    code = textwrap.dedent("""
        import signal, sys, time
        def bye(*_):
            print("got TERM", flush=True)
            time.sleep(600)   # ignores it: SIGKILL after the grace ends this
        signal.signal(signal.SIGTERM, bye)
        print("ready", flush=True)
        time.sleep(600)
    """)
    start = time.monotonic()
    done = proc.run([PY, "-c", code], proc.Bounds(1.0, term_grace=1.0), stdout=proc.Keep(1000))
    assert done.timed_out and b"ready" in done.stdout.data and b"got TERM" in done.stdout.data
    assert 2.0 <= time.monotonic() - start < 10


def test_a_50_mb_flood_keeps_its_head_and_tail_and_counts_the_rest():
    size = 50 << 20
    code = ("import sys\nout = sys.stdout.buffer\nout.write(b'HEAD')\n"
            f"for _ in range({size // (1 << 20)} - 1): out.write(b'.' * (1 << 20))\n"
            "out.write(b'.' * ((1 << 20) - 12) + b'TAIL')\nout.write(b'!!!!')\n")
    done = proc.run([PY, "-c", code], proc.Bounds(60), stdout=proc.Keep(1 << 20, 1 << 20))
    assert done.returncode == 0 and done.stdout.seen == size
    assert done.stdout.head.startswith(b"HEAD") and len(done.stdout.head) == 1 << 20
    assert done.stdout.tail.endswith(b"TAIL!!!!") and len(done.stdout.tail) == 1 << 20
    assert done.stdout.dropped == size - (2 << 20)


def test_a_stop_over_cap_kills_the_flood_at_the_cap():
    start = time.monotonic()
    done = proc.run([PY, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"],
                    proc.Bounds(60), stdout=proc.Keep(1 << 20, stop_over=True))
    assert done.over_cap and done.returncode is None and len(done.stdout.data) == 1 << 20
    assert done.stopped == f"output over {1 << 20} bytes"
    assert time.monotonic() - start < 15


def test_a_trickling_child_is_stopped_by_the_stall_watch():
    """A byte every 0.1 s is not progress to a watch that wants 1,000 bytes a second: it is
    stopped (SIGTERM, its goodbye read in the grace) well before its own deadline."""
    seen: list[tuple[float, int]] = []

    def sink(chunk: bytes) -> None:
        seen.append((time.monotonic(), len(chunk)))

    started = time.monotonic()

    def watch() -> str | None:
        now = time.monotonic()
        recent = sum(n for t, n in seen if t > now - 1.0)
        return "stalled: under 1000 bytes a second" if now - started > 1.0 and recent < 1000 else None

    code = textwrap.dedent("""
        import signal, sys, time
        signal.signal(signal.SIGTERM, lambda *_: (sys.stdout.write("bye\\n"), sys.exit(3)))
        while True:
            sys.stdout.write("."); sys.stdout.flush(); time.sleep(0.1)
    """)
    done = proc.run([PY, "-c", code], proc.Bounds(60, stop_grace=5, watch=watch, poll=0.1),
                    stdout=proc.Keep(tail=100, sink=sink))
    assert done.stopped == "stalled: under 1000 bytes a second" and done.returncode is None
    assert not done.timed_out and done.duration < 10
    assert done.stdout.data.endswith(b"bye\n") and len(seen) > 3


def test_a_steady_child_passes_the_same_watch():
    def watch() -> str | None:
        return None

    done = proc.run([PY, "-c", "import sys\nfor i in range(20): sys.stdout.write('x' * 5000)"],
                    proc.Bounds(60, watch=watch), stdout=proc.Keep(tail=10))
    assert done.returncode == 0 and done.stopped is None and done.stdout.seen == 100_000


FORWARDER = """
import signal, sys
from neuronctl import proc
from neuronctl.errors import TerminateSignal

def terminate(*_):
    raise TerminateSignal()

signal.signal(signal.SIGTERM, terminate)
child = '''
import signal, sys, time
def got(sig, _):
    open(sys.argv[1], "w").write(signal.Signals(sig).name)
    sys.exit(0)
signal.signal(signal.SIGINT, got)
signal.signal(signal.SIGTERM, got)
print("ready", flush=True)
time.sleep(600)
'''
try:
    proc.run([sys.executable, "-c", child, sys.argv[1]], proc.Bounds(60, stop_grace=10),
             stdout=proc.Keep(tail=100, sink=lambda c: print(c.decode(), flush=True)))
except KeyboardInterrupt as exc:
    print("stopped by", type(exc).__name__, flush=True)
"""


@pytest.mark.parametrize(("sent", "forwarded", "raised"),
                         [(signal.SIGINT, "SIGINT", "KeyboardInterrupt"),
                          (signal.SIGTERM, "SIGTERM", "TerminateSignal")])
def test_the_signal_neuronctl_gets_is_forwarded_to_the_childs_group(tmp_path, sent, forwarded, raised):
    got = tmp_path / "got"
    runner = subprocess.Popen([PY, "-c", FORWARDER, str(got)], stdout=subprocess.PIPE,
                              stdin=subprocess.DEVNULL)
    assert runner.stdout is not None
    assert b"ready" in runner.stdout.readline()
    runner.send_signal(sent)
    out, _ = runner.communicate(timeout=30)
    assert got.read_text() == forwarded
    assert f"stopped by {raised}" in out.decode()


def test_kill_all_kills_every_running_child_and_its_owner_still_reaps_it():
    child = proc.Child([PY, "-c", "import time; time.sleep(600)"])
    try:
        proc.kill_all()
        until = time.monotonic() + 5
        while not child.exited() and time.monotonic() < until:
            time.sleep(0.01)
        assert child.exited()
    finally:
        child.kill()
    assert child.proc.returncode == -signal.SIGKILL


def test_exit_grace_does_not_wait_for_a_grandchild_holding_the_pipes():
    start = time.monotonic()
    done = proc.run(["/bin/sh", "-c", "sleep 60 & echo started; exit 4"],
                    proc.Bounds(30, exit_grace=0.3), stdout=proc.Keep(100))
    assert done.returncode == 4 and b"started" in done.stdout.data and not done.timed_out
    assert time.monotonic() - start < 5
    without = proc.run(["/bin/sh", "-c", "sleep 60 & echo started"], proc.Bounds(1.0),
                       stdout=proc.Keep(100))
    assert without.timed_out  # read to the pipes' end: the deadline


def test_a_private_channel_a_held_stdin_and_a_terminal():
    channel = proc.Channel()
    code = ("import os, sys\nline = sys.stdin.readline()\n"
            "os.write(int(sys.argv[1]), b'said:' + line.encode())\nprint('stdout is noise')")
    child = proc.Child([PY, "-c", code, str(channel.fd)], stdin=proc.HELD, channels=[channel])
    child.release(b"go\n")
    done = child.collect(proc.Bounds(30), stdout=proc.Keep(100), channels=[proc.Keep(100)])
    assert done.channels[0].data == b"said:go\n" and done.stdout.data == b"stdout is noise\n"
    on_tty = proc.run([PY, "-c", "import sys; print(sys.stdout.isatty(), sys.stderr.isatty())"],
                      proc.Bounds(30), terminal=True, stdout=proc.Keep(100))
    assert on_tty.stdout.data.strip() == b"True True"


def test_what_it_shows_of_an_argv_is_redacted():
    from neuronctl.backend.external_tool import run_engine
    from neuronctl.errors import FaultError

    argv = [PY, "-c", "import sys; sys.exit(2)", "--index-url", "https://me:hunter2@example.test/simple",
            "--token=abc123"]
    assert "hunter2" not in proc.shown(argv) and "abc123" not in proc.shown(argv)
    done = proc.run(argv, proc.Bounds(30))
    assert done.returncode == 2 and "hunter2" not in done.shown and "example.test" in done.shown
    with pytest.raises(FaultError) as failed:
        run_engine(argv, timeout=30)
    assert "hunter2" not in str(failed.value) and "abc123" not in str(failed.value)
    assert "exit 2" in str(failed.value)


def test_a_command_that_cannot_start_is_an_oserror_and_leaves_nothing_registered():
    before = dict(proc._live)
    with pytest.raises(FileNotFoundError):
        proc.run(["/nonexistent/tool"], proc.Bounds(5))
    assert proc._live == before


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300_000), head=st.integers(0, 70_000), tail=st.integers(0, 70_000))
def test_what_is_kept_is_the_head_and_the_tail_of_what_was_said(data, head, tail):
    """Whatever a child says, through stdin and back (cat): the first `head` bytes, the last
    `tail` of the rest, and the count of all."""
    done = proc.run(["cat"], proc.Bounds(30), stdin=data, stdout=proc.Keep(head, tail))
    assert done.returncode == 0 and done.stdout.seen == len(data)
    assert done.stdout.head == data[:head]
    assert done.stdout.tail == (data[head:][-tail:] if tail else b"")
    assert done.stdout.dropped == len(data) - len(done.stdout.head) - len(done.stdout.tail)


@given(chunks=st.lists(st.binary(max_size=50).map(lambda b: b.replace(b"\r", b"")), max_size=20),
       limit=st.integers(1, 40))
def test_by_line_passes_on_each_whole_line_cut_at_the_limit(chunks, limit):
    lines: list[bytes] = []
    feed = proc.by_line(lines.append, limit)
    for chunk in chunks:
        feed(chunk)
    whole = b"".join(chunks).split(b"\n")[:-1]
    assert lines == [line[:limit] for line in whole]


def test_the_runner_is_the_only_place_that_starts_a_process():
    """Every child process of the package's parts starts in neuronctl/proc.py (the install
    target's interpreter check is another session's to move)."""
    repo = Path(__file__).resolve().parents[2]
    found = []
    for part in ("neuronctl", "resolvers", "probes", "backend"):
        for path in (repo / part).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for word in ("subprocess.run(", "subprocess.Popen(", "subprocess.check_output(",
                         "subprocess.call(", "os.killpg(", "selectors.DefaultSelector("):
                if word in text:
                    found.append((path.relative_to(repo).as_posix(), word))
    allowed = {"neuronctl/proc.py", "neuronctl/ops/install/target.py", "probes/contain.py"}
    assert [f for f in found if f[0] not in allowed] == []
    assert os.path.isfile(repo / "neuronctl/proc.py")
