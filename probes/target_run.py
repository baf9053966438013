"""Running one of the scripts in probes/scripts/ inside a target interpreter.

Everything the target prints is untrusted: a `torch` or a `.pth` file in the target environment
runs before and during our script and may print anything on stdout, start children that never
exit, or keep our pipes open forever. So:

- nothing is imported from the caller's working directory: the script is run by path (so
  sys.path[0] is the scripts' own folder, which each script removes, never '' or the cwd), and an
  empty entry in PYTHONPATH, which Python reads as the working directory (`PYTHONPATH=$X:/y`
  with X unset), is dropped from the script's environment: a ./torch or ./neuronctl where the
  user stands is never what a probe imports (an entry the user wrote, even ".", stays theirs);
- the script writes its results to a private pipe whose number it is given
  in argv (`pass_fds`); stdout and stderr are only drained, and their tails kept for messages;
- every read is bounded in size and in time: at the deadline, or shortly after the interpreter
  exits (a detached grandchild may hold a pipe open; its EOF is never waited for), reading stops;
- the interpreter runs in its own session, and its whole process group is killed when the run
  ends, however it ends (a normal exit, the deadline, Ctrl-C, SIGTERM);
- `contain` (code that is not ours runs: a model, torch): what it started in a session or group
  of its own is killed too. The group is stopped first (it can start nothing more), then every
  live descendant of the interpreter, found by /proc's parent links, is killed, looked for again
  until none is left (one that forked meanwhile is found the next time: the smoke script makes
  itself its descendants' subreaper, so an orphan's parent link leads back to it, and kills
  them itself as it exits), then the group. A contained script's environment also carries a
  token of its own (CONTAIN_VAR), and what still runs with it is killed as well: a daemon
  orphaned by a model that left through os._exit (no exit handler ran) has lost its parent link
  but not its environment. Each kill names its process by pid and start time (through a pidfd
  where there is one), so a pid reused meanwhile is never hit.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from neuronctl.errors import FaultError
from neuronctl.probes.contain import CONTAIN_VAR, kill_descendants, kill_marked
from neuronctl.redact import redact

CHANNEL_CAP = 64 * 1024
TAIL_CAP = 16 * 1024
EXIT_GRACE_S = 0.5
"""How long pipes are still read after the interpreter exits: enough for what it wrote before
exiting, short enough that a grandchild holding a pipe open cannot stall us."""
POLL_S = 0.1
RELEASE = b"go\n"
"""What a held script waits for on stdin before its stdin closes (inspect_env.py's RELEASE; the
scripts import nothing of neuronctl's, so it is written there again)."""

_live: set[subprocess.Popen[bytes]] = set()
_live_guard = threading.Lock()


def printable(text: str, limit: int = 300) -> str:
    """Untrusted text made safe to show: no credentials (an import error may quote an index URL),
    no control characters or escape sequences, bounded. Redacted whole, then cut, so that a cut
    cannot split a credential from the '@' that marks it."""
    return "".join(ch if ch.isprintable() else "?" for ch in redact(text)[:limit])


def last_line(text: str) -> str:
    """The last line of a stream's tail (where a traceback says what went wrong), shown safely."""
    return printable((text.strip().splitlines() or ["no output"])[-1])


def script_path(name: str) -> str:
    """The file of a script shipped in neuronctl.probes.scripts (a real file in every install
    neuronctl supports: wheels are unpacked, editable installs point at the source), found
    beside the package's own file (importlib.resources would load zipfile to say the same)."""
    from neuronctl.probes import scripts

    if not scripts.__file__:  # a namespace package: never looked up in the working directory
        raise FaultError("neuronctl's probe scripts are not installed as files")
    path = os.path.join(os.path.dirname(os.path.abspath(scripts.__file__)), name)
    if not os.path.isfile(path):
        raise FaultError(f"neuronctl's {name} is not a file on disk (installed as a zip?)")
    return path


def without_cwd_on_path(env: Mapping[str, str]) -> dict[str, str] | None:
    """`env` with the empty entries of its PYTHONPATH dropped (Python puts the working directory
    on sys.path for each); None where there are none (nothing to change: no copy is made)."""
    value = env.get("PYTHONPATH")
    if value is None or "" not in value.split(os.pathsep):
        return None
    kept = [entry for entry in value.split(os.pathsep) if entry]
    cleaned = dict(env)
    if kept:
        cleaned["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        del cleaned["PYTHONPATH"]
    return cleaned


@dataclass(frozen=True)
class ScriptRun:
    """What a target script left: its channel, the tails of its stdout and stderr, how it ended."""

    channel: bytes
    """What the script wrote on its private channel, at most the cap asked for."""
    channel_overflow: bool
    returncode: int | None
    """The interpreter's exit status (negative: killed by that signal); None when it was killed
    at the deadline."""
    stdout_tail: str
    stderr_tail: str
    wall_ms: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def channel_lines(self) -> list[str]:
        """The channel's lines; what follows the last newline (a partial line) stays, and a
        parser then finds it malformed."""
        lines = self.channel.decode("utf-8", errors="replace").split("\n")
        if lines[-1] == "":
            lines.pop()
        return lines

    def ending(self, timeout: float) -> ScriptExit:
        return ScriptExit(self.returncode, timeout, self.wall_ms, self.stderr_tail,
                          self.channel_overflow)


@dataclass(frozen=True)
class ScriptExit:
    """How a target script's interpreter ended, beside the lines it wrote (what the device
    probe's and the smoke run's parsers judge together with those lines)."""

    returncode: int | None
    """Exit status (negative: killed by that signal); None when it was killed at the deadline."""
    timeout: float
    wall_ms: float
    stderr_tail: str = ""
    channel_overflow: bool = False


class _Tail:
    """The last `cap` bytes of a stream (the end of a traceback is what a message needs)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > self.cap:
            del self.data[: len(self.data) - self.cap]

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class _Head:
    """The first `cap` bytes of a stream; anything beyond is drained and dropped."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.overflow = False

    def add(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if len(chunk) > room:
            self.overflow = True
        self.data += chunk[: max(room, 0)]


def _has_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the process has exited, without reaping it: while it is an unreaped zombie its
    pid (and so its process group id) cannot be reused, so killing the group stays safe.
    (Without waitid, macOS before Python 3.13, it is reaped: a pid reused in that instant is
    a risk taken only there.)"""
    if not hasattr(os, "waitid"):
        return proc.poll() is not None
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


class TargetScript:
    """A script started in the target interpreter; `collect()` reads it to the end, at most
    `timeout` seconds from that call (the caller may do its own work meanwhile). `held`: its
    stdin is a pipe that stays open until `release()` (or `collect()`), for a script that waits
    on it."""

    def __init__(self, python: str, script: str, args: Sequence[str], *,
                 env: Mapping[str, str] | None = None, cwd: str | None = None,
                 flags: Sequence[str] = (), held: bool = False, contain: bool = False) -> None:
        self.contain = contain
        path = script_path(script)
        child_env = without_cwd_on_path(os.environ if env is None else env)
        self._token = b""
        if contain:
            child_env = dict(child_env if child_env is not None else (os.environ if env is None else env))
            child_env[CONTAIN_VAR] = os.urandom(12).hex()
            self._token = f"{CONTAIN_VAR}={child_env[CONTAIN_VAR]}".encode()
        read_end, write_end = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [python, *flags, path, str(write_end), *args],
                stdin=subprocess.PIPE if held else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(write_end,),
                env=child_env if child_env is not None else (None if env is None else dict(env)),
                cwd=cwd, start_new_session=True)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        self._channel_fd = read_end
        self._start = time.perf_counter()
        with _live_guard:
            _live.add(self.proc)

    def release(self) -> None:
        """Write RELEASE to a held script's stdin, then close it: it goes on, and can tell that
        from its start-up code closing stdin (idempotent; nothing for one not held)."""
        stdin = self.proc.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(OSError):  # it died, or took the pipe: it will say so
                stdin.write(RELEASE)
                stdin.flush()
            with contextlib.suppress(OSError):
                stdin.close()

    def collect(self, timeout: float, channel_cap: int = CHANNEL_CAP,
                on_channel: Callable[[bytes], None] | None = None) -> ScriptRun:
        """Everything the script says, once it has ended; `on_channel` sees each chunk of its
        channel as it comes (a live status: smoke's steps)."""
        self.release()
        deadline = time.monotonic() + timeout
        try:
            channel, out, err, timed_out = self._read(deadline, channel_cap, on_channel)
            if not timed_out:
                timed_out = not self._wait_exit(deadline)
        finally:
            self.kill()  # on every path, Ctrl-C and SIGTERM included
        wall = round((time.perf_counter() - self._start) * 1000, 1)
        return ScriptRun(bytes(channel.data), channel.overflow,
                         None if timed_out else self.proc.returncode, out.text(), err.text(), wall)

    def _read(self, deadline: float, channel_cap: int,
              on_channel: Callable[[bytes], None] | None = None
              ) -> tuple[_Head, _Tail, _Tail, bool]:
        assert self.proc.stdout is not None and self.proc.stderr is not None
        channel, out, err = _Head(channel_cap), _Tail(TAIL_CAP), _Tail(TAIL_CAP)
        sinks: dict[int, _Head | _Tail] = {
            self._channel_fd: channel, self.proc.stdout.fileno(): out, self.proc.stderr.fileno(): err}
        exited_at: float | None = None
        with selectors.DefaultSelector() as selector:
            for fd in sinks:
                selector.register(fd, selectors.EVENT_READ)
            while selector.get_map():
                now = time.monotonic()
                if now >= deadline:
                    return channel, out, err, True
                if exited_at is None and _has_exited(self.proc):
                    exited_at = now
                if exited_at is not None and now - exited_at > EXIT_GRACE_S:
                    break  # whoever still holds a pipe is not the interpreter we ran
                for key, _ in selector.select(min(deadline - now, POLL_S)):
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        sinks[key.fd].add(chunk)
                        if on_channel is not None and key.fd == self._channel_fd:
                            on_channel(chunk)
                    else:
                        selector.unregister(key.fd)
        return channel, out, err, False

    def _wait_exit(self, deadline: float) -> bool:
        # Its pipes close a moment before it can be waited for: the first looks come soon (a
        # fixed 10 ms sleep cost a third of all runs 10 ms), the later ones back off.
        pause = 0.0005
        while not _has_exited(self.proc):
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.01)
        return True

    def kill(self) -> None:
        """Kill the interpreter's whole process group, reap it, close the pipes (idempotent)."""
        with _live_guard:
            if self.proc not in _live:
                return
            if self.contain:
                kill_descendants(self.proc.pid)
                kill_marked(self._token)
            _kill_group(self.proc)
            # Stuck in the kernel, if it times out: SIGKILL is pending, nothing more to do.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
            _live.discard(self.proc)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        with contextlib.suppress(OSError):
            os.close(self._channel_fd)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # Called only before the leader is reaped, so the group id is still ours.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        with contextlib.suppress(OSError):
            proc.kill()


def kill_all() -> None:
    """Kill every script still running (their process groups): for the CLI's Ctrl-C/SIGTERM
    path, where a probe may be running in a worker thread that the interrupt never reaches."""
    with _live_guard:
        for proc in _live:  # left unreaped (and listed) for their owners' kill()
            _kill_group(proc)
