"""The one way neuronctl runs a child process: argv only (never a shell), in a session of its
own so that its whole process group is signalled and killed as one; bounded in time (a deadline,
then SIGTERM, a grace, SIGKILL; a watch, an engine's stall detection, may stop it sooner) and in
memory (each stream keeps a head and a tail, the rest counted, or the run stops at a cap). One
select loop reads its pipes (stdout, stderr, private channels, a pseudo-terminal), writes its
stdin and feeds the sinks that stream its output. SIGINT or SIGTERM that neuronctl gets meanwhile
is forwarded to the group, which gets a grace before SIGKILL. Every child is registered until
reaped, so `kill_all` (the CLI's exit, a doctor check left behind) leaves none running. What is
shown of a command (`shown`) is redacted: an argv may carry a credential.

The leader is reaped only after its group is killed: until then its pid, and so its group id,
cannot be reused, and a kill never reaches a stranger.
"""

from __future__ import annotations

import contextlib
import math
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from msgspec import Struct, field

from neuronctl.capture import Buffer, Captured, Keep, by_line
from neuronctl.errors import TerminateSignal
from neuronctl.redact import redact

__all__ = ["HELD", "STDOUT", "Bounds", "Captured", "Channel", "Child", "Keep", "Result", "by_line",
           "kill_all", "run", "shown"]
"""Keep, Captured and by_line live in neuronctl.capture; a caller needs only this module."""

READ_CHUNK = 1 << 16
HELD = "held"
"""stdin=HELD: a pipe left open until `Child.release` (a script that waits for a go)."""
STDOUT = "stdout"
"""stderr=STDOUT: stderr goes where stdout goes (one stream, in the order written)."""

Watch = Callable[[], "str | None"]


def shown(argv: Sequence[str]) -> str:
    """argv as a shell would read it, redacted (a URL's password, a --token=...)."""
    import shlex

    return redact(" ".join(shlex.quote(str(a)) for a in argv))


class Bounds(Struct, frozen=True):
    """How long a run may take, and how it is stopped. `timeout`: wall-clock seconds from
    `collect` (None: none of its own; a watch may have one). `term_grace`: at the deadline the
    group gets SIGTERM and this long, still read, before SIGKILL (0: SIGKILL at once).
    `stop_grace`: the same when the watch stops it or neuronctl is interrupted (then the signal
    neuronctl got is the one sent). `exit_grace`: once the leader has exited, its pipes are read
    this long more and no longer (a detached grandchild may hold them for ever); None: to their
    end. `exit_wait`: once the pipes have ended, how long the leader may take to exit (None: up to
    the deadline). `watch`: called as it runs; a reason returned stops it. `poll`: the longest
    the loop sleeps between looks at the deadline and the watch."""

    timeout: float | None = None
    term_grace: float = 0.0
    stop_grace: float = 0.0
    exit_grace: float | None = None
    exit_wait: float | None = None
    watch: Watch | None = None
    poll: float = 0.5


class Result(Struct, frozen=True):
    """How a run ended. `returncode`: the exit status (negative: ended by that signal); None when
    neuronctl stopped it (`stopped` says why: the deadline, a cap, the watch)."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: Captured
    stderr: Captured
    channels: tuple[Captured, ...] = ()
    duration: float = 0.0
    """Seconds from the start to the end (the leader reaped)."""
    timed_out: bool = False
    over_cap: bool = False
    stopped: str | None = None

    @property
    def shown(self) -> str:
        return shown(self.argv)


class Channel:
    """A pipe the child writes to by number (the caller puts `fd` in its argv; it is passed to
    that child alone): results apart from stdout, where code not ours may print anything."""

    def __init__(self) -> None:
        self.read_fd, self.fd = os.pipe()


class _State(Struct):
    """Where one collect() stands: its deadline (a grace's end, once stopping), why it ended."""

    deadline: float
    stopping: bool = False
    timed_out: bool = False
    over_cap: bool = False
    stopped: str | None = None
    exited_at: float | None = None
    exit_by: float | None = None
    pause: float = 0.0005
    readers: set[int] = field(default_factory=set)


_live: dict[int, Child] = {}
_live_guard = threading.Lock()


def _close(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def _open_terminal() -> tuple[int, int]:
    """A pseudo-terminal as wide as neuronctl's own (stderr's): the child draws for that."""
    import fcntl
    import pty
    import termios

    leader, follower = pty.openpty()
    with contextlib.suppress(OSError):
        fcntl.ioctl(follower, termios.TIOCSWINSZ, fcntl.ioctl(2, termios.TIOCGWINSZ, b"\0" * 8))
    return leader, follower


class Child:
    """A started process, in a session of its own. `collect` reads it to its end under `Bounds`
    and always leaves its group killed and the leader reaped; `kill` does that at once.
    `terminal`: stdout and stderr are one pseudo-terminal (the child sees a terminal).
    `before_kill(pid)` runs before the group is killed (what also runs elsewhere: probes.contain).
    OSError when it cannot start."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                 cwd: str | None = None, stdin: bytes | str | None = None, stderr: str = "pipe",
                 terminal: bool = False, channels: Sequence[Channel] = (),
                 before_kill: Callable[[int], None] | None = None) -> None:
        self.argv = tuple(argv)
        self._before_kill = before_kill
        self._input = stdin if isinstance(stdin, bytes) else b""
        self._held = stdin == HELD
        self._channels = tuple(channels)
        self._leader: int | None = None
        out: int = subprocess.PIPE
        err: int = subprocess.STDOUT if stderr == STDOUT else subprocess.PIPE
        follower: int | None = None
        try:
            if terminal:
                self._leader, follower = _open_terminal()
                out = err = follower
            self.proc = subprocess.Popen(
                list(self.argv), stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                stdout=out, stderr=err, env=None if env is None else dict(env), cwd=cwd,
                pass_fds=tuple(c.fd for c in self._channels), start_new_session=True)
        except BaseException:
            for fd in (self._leader, *(c.read_fd for c in self._channels)):
                _close(fd)
            raise
        finally:
            for fd in (follower, *(c.fd for c in self._channels)):
                _close(fd)  # the child's ends: ours would hold its pipes open
        self._fds = [fd for fd in (self._leader, *(c.read_fd for c in self._channels))
                     if fd is not None]
        self.pid = self.proc.pid
        self.started = time.monotonic()
        with _live_guard:
            _live[self.pid] = self

    def release(self, data: bytes = b"") -> None:
        """Write `data` to a held stdin, then close it (idempotent; nothing for one not held)."""
        stdin = self.proc.stdin
        if self._held and stdin is not None and not stdin.closed:
            with contextlib.suppress(OSError):  # it died, or took the pipe: it will say so
                stdin.write(data)
                stdin.flush()
            with contextlib.suppress(OSError):
                stdin.close()

    def exited(self) -> bool:
        """Whether the leader has exited, without reaping it (so its group id stays ours).
        (Without waitid, macOS before Python 3.13, it is reaped: a pid reused in that instant is
        a risk taken only there.)"""
        if not hasattr(os, "waitid"):
            return self.proc.poll() is not None
        try:
            return os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def send(self, sig: int) -> None:
        """Send `sig` to the whole group (to the leader alone where the group cannot be reached)."""
        try:
            os.killpg(self.pid, sig)
        except OSError:
            with contextlib.suppress(OSError):
                self.proc.send_signal(sig)

    def kill(self) -> None:
        """Kill the whole group, reap the leader, close the pipes (idempotent)."""
        with _live_guard:
            if _live.get(self.pid) is self:
                del _live[self.pid]
                if self._before_kill is not None:
                    self._before_kill(self.pid)
                self.send(signal.SIGKILL)
                # Stuck in the kernel, if it times out: SIGKILL is pending, nothing more to do.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        # Once only: a number closed twice may by then be another file's.
        fds, self._fds = self._fds, []
        for fd in fds:
            _close(fd)

    def collect(self, bounds: Bounds | None = None, *, stdout: Keep | None = None,
                stderr: Keep | None = None, channels: Sequence[Keep] = ()) -> Result:
        """Read the child to its end within `bounds`: what each stream keeps (`channels` in the
        order the Channels were given), how it ended. Its group is killed on every path."""
        bounds = bounds or Bounds()
        order = self._buffers(stdout or Keep(), stderr or Keep(), channels)
        buffers = {fd: buffer for fd, buffer in order if fd >= 0}
        deadline = math.inf if bounds.timeout is None else time.monotonic() + bounds.timeout
        state = _State(deadline, readers=set(buffers))
        try:
            self._pump(buffers, bounds, state)
        except BaseException as exc:
            self.stop(exc, bounds.stop_grace)
            raise
        finally:
            self.kill()
        ended = state.timed_out or state.over_cap or state.stopped is not None
        (_, out), (_, err), *kept = ((fd, buffer.captured()) for fd, buffer in order)
        return Result(self.argv, None if ended else self.proc.returncode, out, err,
                      tuple(c for _, c in kept), round(time.monotonic() - self.started, 6),
                      state.timed_out, state.over_cap, state.stopped)

    def _buffers(self, stdout: Keep, stderr: Keep, channels: Sequence[Keep]
                 ) -> list[tuple[int, Buffer]]:
        """(fd, buffer) for stdout, stderr and each channel, in that order; fd -1: not a pipe."""
        if len(channels) > len(self._channels):
            raise ValueError(f"{len(channels)} Keeps for {len(self._channels)} channels")
        out = self._leader if self._leader is not None else \
            self.proc.stdout.fileno() if self.proc.stdout is not None else -1
        err = self.proc.stderr.fileno() if self.proc.stderr is not None else -1
        kept = [*channels, *[Keep()] * (len(self._channels) - len(channels))]
        return [(out, Buffer(stdout)), (err, Buffer(stderr)),
                *((c.read_fd, Buffer(k)) for c, k in zip(self._channels, kept, strict=True))]

    def _pump(self, buffers: dict[int, Buffer], bounds: Bounds, state: _State) -> None:
        """The one loop: read, write stdin, look at the deadline, the watch and the exit."""
        with selectors.DefaultSelector() as selector:
            for fd in buffers:
                selector.register(fd, selectors.EVENT_READ)
            writer = self._writer(selector)
            while not self._done(bounds, state):
                if not state.readers:
                    self._unwrite(selector, writer)
                    writer = None
                    time.sleep(min(state.pause, max(state.deadline - time.monotonic(), 0.0)))
                    state.pause = min(state.pause * 2, 0.01)
                    continue
                wait = min(state.deadline - time.monotonic(), bounds.poll)
                for key, _ in selector.select(max(wait, 0.0)):
                    if key.fd == writer:
                        writer = self._write(selector, writer)
                    elif not self._read(key.fd, buffers[key.fd], selector, state):
                        return

    def _done(self, bounds: Bounds, state: _State) -> bool:
        now = time.monotonic()
        if now >= state.deadline:
            if state.stopping:
                return True  # its grace is over
            state.timed_out = True
            state.stopped = f"timed out after {bounds.timeout:g}s"
            return not self._stop(signal.SIGTERM, bounds.term_grace, state, now)
        if bounds.watch is not None and not state.stopping:
            why = bounds.watch()
            if why is not None:
                state.stopped = why
                return not self._stop(signal.SIGTERM, bounds.stop_grace, state, now)
        if state.readers and (bounds.exit_grace is None or state.stopping):
            return False
        if state.exited_at is None and self.exited():
            state.exited_at = now
        if not state.readers:
            if state.exit_by is None:
                wait = math.inf if bounds.exit_wait is None or state.stopping else bounds.exit_wait
                state.exit_by = now + wait
            if state.exited_at is None and now >= state.exit_by:
                state.timed_out = True
                state.stopped = f"timed out: running {bounds.exit_wait:g}s after its output ended"
            return state.exited_at is not None or state.timed_out
        # whoever still holds a pipe after the grace is not the process we ran
        return state.exited_at is not None and now - state.exited_at > (bounds.exit_grace or 0.0)

    def _stop(self, sig: int, grace: float, state: _State, now: float) -> bool:
        """Begin stopping it: `sig` to the group and `grace` seconds to go; False: kill now."""
        if grace <= 0:
            return False
        self.send(sig)
        state.stopping, state.deadline, state.exit_by = True, now + grace, None
        return True

    def _read(self, fd: int, buffer: Buffer, selector: selectors.BaseSelector, state: _State) -> bool:
        try:
            chunk = os.read(fd, READ_CHUNK)
        except OSError:  # EIO: every writer closed a terminal's end
            chunk = b""
        if not chunk:
            selector.unregister(fd)
            state.readers.discard(fd)
            return True
        if buffer.add(chunk) or state.stopping:
            return True
        state.over_cap = True
        state.stopped = f"output over {buffer.keep.head} bytes"
        return False

    def _writer(self, selector: selectors.BaseSelector) -> int | None:
        stdin = self.proc.stdin
        if stdin is None or self._held:
            return None
        if not self._input:
            stdin.close()
            return None
        os.set_blocking(stdin.fileno(), False)
        selector.register(stdin.fileno(), selectors.EVENT_WRITE)
        return stdin.fileno()

    def _write(self, selector: selectors.BaseSelector, fd: int) -> int | None:
        try:
            written = os.write(fd, self._input[:READ_CHUNK])
        except BlockingIOError:
            return fd
        except OSError:  # it closed its stdin: what it did not read, it did not want
            written = len(self._input)
        self._input = self._input[written:]
        if self._input:
            return fd
        self._unwrite(selector, fd)
        return None

    def _unwrite(self, selector: selectors.BaseSelector, fd: int | None) -> None:
        """No more input: stdin closed (the child reads its end)."""
        if fd is not None and self.proc.stdin is not None:
            selector.unregister(fd)
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def stop(self, why: BaseException, grace: float = 0.0) -> None:
        """neuronctl was interrupted (or its own code failed) while this runs: the signal it got
        (SIGINT for Ctrl-C, else SIGTERM) goes to the group, which gets `grace` seconds to stop
        (a download in flight ends, an install finishes its step), then it is killed."""
        if not self.exited():
            interrupt = isinstance(why, KeyboardInterrupt) and not isinstance(why, TerminateSignal)
            self.send(signal.SIGINT if interrupt else signal.SIGTERM)
            until = time.monotonic() + grace
            with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C: no more waiting
                while time.monotonic() < until and not self.exited():
                    time.sleep(0.01)
        self.kill()


def run(argv: Sequence[str], bounds: Bounds | None = None, *, env: Mapping[str, str] | None = None,
        cwd: str | None = None, stdin: bytes | None = None, stdout: Keep | None = None,
        stderr: Keep | None = None, merge: bool = False, terminal: bool = False) -> Result:
    """Start argv and collect it (Child and Child.collect in one). OSError when it cannot start."""
    child = Child(argv, env=env, cwd=cwd, stdin=stdin, stderr=STDOUT if merge else "pipe",
                  terminal=terminal)
    return child.collect(bounds, stdout=stdout, stderr=stderr)


def kill_all() -> None:
    """SIGKILL every child still running (their process groups), for the CLI's Ctrl-C/SIGTERM
    path, where a run may be waited on in a worker thread that the interrupt never reaches. They
    stay listed and unreaped for their owners' kill()."""
    with _live_guard:
        for child in _live.values():
            child.send(signal.SIGKILL)
