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

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from msgspec import Struct

from neuronctl import proc
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
"""What a held script waits for on stdin before its stdin closes (inspect_hold.py's RELEASE; the
scripts import nothing of neuronctl's, so it is written there again)."""

def printable(text: str, limit: int = 300) -> str:
    """Untrusted text made safe to show: no credentials (an import error may quote an index URL),
    no control characters or escape sequences, bounded. Redacted whole, then cut, so that a cut
    cannot split a credential from the '@' that marks it."""
    return "".join(ch if ch.isprintable() else "?" for ch in redact(text)[:limit])


def json_record(line: str, cap: int, malformed: type[ValueError]) -> dict[str, Any]:
    """One line of a script's channel as a JSON object, bounded (`cap` characters, no deep
    nesting), else `malformed` saying why: what every channel reader takes a record by."""
    if len(line) > cap:
        raise malformed(f"a line of {len(line)} characters")
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        raise malformed("not JSON") from None
    if not isinstance(record, dict):
        raise malformed("not a JSON object")
    return record


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


class ScriptRun(Struct, frozen=True):
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


class ScriptExit(Struct, frozen=True):
    """How a target script's interpreter ended, beside the lines it wrote (what the device
    probe's and the smoke run's parsers judge together with those lines)."""

    returncode: int | None
    """Exit status (negative: killed by that signal); None when it was killed at the deadline."""
    timeout: float
    wall_ms: float
    stderr_tail: str = ""
    channel_overflow: bool = False


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
        channel = proc.Channel()
        self.child = proc.Child(
            [python, *flags, path, str(channel.fd), *args], stdin=proc.HELD if held else None,
            env=child_env if child_env is not None else env, cwd=cwd, channels=[channel],
            before_kill=self._contain if contain else None)

    def release(self) -> None:
        """Write RELEASE to a held script's stdin, then close it: it goes on, and can tell that
        from its start-up code closing stdin (idempotent; nothing for one not held)."""
        self.child.release(RELEASE)

    def collect(self, timeout: float, channel_cap: int = CHANNEL_CAP,
                on_channel: Callable[[bytes], None] | None = None) -> ScriptRun:
        """Everything the script says, once it has ended; `on_channel` sees each chunk of its
        channel as it comes (a live status: smoke's steps). At the deadline, or EXIT_GRACE_S
        after the interpreter exits, reading stops; its group is killed on every path."""
        self.release()
        done = self.child.collect(proc.Bounds(timeout, exit_grace=EXIT_GRACE_S, poll=POLL_S),
                                  stdout=proc.Keep(tail=TAIL_CAP), stderr=proc.Keep(tail=TAIL_CAP),
                                  channels=[proc.Keep(channel_cap, sink=on_channel)])
        channel = done.channels[0]
        return ScriptRun(channel.head, channel.dropped > 0,
                         None if done.timed_out else done.returncode, done.stdout.text(),
                         done.stderr.text(), round(done.duration * 1000, 1))

    def _contain(self, pid: int) -> None:
        kill_descendants(pid)
        kill_marked(self._token)

    def kill(self) -> None:
        """Kill the interpreter's whole process group, reap it, close the pipes (idempotent)."""
        self.child.kill()

