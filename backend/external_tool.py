"""Run an engine command: argv only (never a shell), a cleaned environment so no inherited
PIP_* / UV_* setting can reintroduce an index, and a failure that says what ran and why it failed.

On a terminal (`show`) the engine's own progress (uv's bars on stderr, pip's on stdout) reaches
the person through a pseudo-terminal, so the engine draws them as it would, while the last of what
it said is kept for the failure message. Otherwise everything is captured. The engine runs in a
process group of its own: Ctrl-C and SIGTERM reach it through neuronctl, which forwards the signal
and waits for it to stop (a download in flight ends; an engine mid-install finishes its step)
before killing it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence

from neuronctl.backend.engine_watch import Limits, Watch
from neuronctl.errors import FaultError, TerminateSignal

DROPPED_PREFIXES = ("PIP_", "UV_")
DROPPED = frozenset({"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONUSERBASE",
                     "PYTHONSTARTUP", "PYTHONINSPECT"})
KEPT = frozenset({"UV_CACHE_DIR", "UV_LINK_MODE"})
"""Where uv keeps its cache and how it links files: no index can come in through these."""
TAIL_BYTES = 64 << 10
POLL_S = 0.25
"""How often a running engine's limits are checked while it says nothing."""
STOP_GRACE = 10.0
"""Seconds an engine gets to stop after the forwarded signal before it is killed."""
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def clean_environment(environ: Mapping[str, str] | None = None, *, progress: bool = False) -> dict[str, str]:
    env = {k: v for k, v in (os.environ if environ is None else environ).items()
           if (k in KEPT or not k.startswith(DROPPED_PREFIXES)) and k not in DROPPED}
    # PYTHONSAFEPATH (3.11+): no directory of the caller's first on a Python engine's sys.path,
    # nor on its children's (venv's ensurepip); the empty working directory covers 3.10.
    env.update(PYTHONSAFEPATH="1",
               PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
               UV_NO_CONFIG="1", UV_PYTHON_DOWNLOADS="never",
               # uv reads a pylock.toml as a preview feature; this says it is meant (no warning).
               UV_PREVIEW_FEATURES="pylock")
    if not progress:
        env["UV_NO_PROGRESS"] = "1"
    return env


def shown(argv: Sequence[str]) -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in argv)


class Stalled(Exception):
    """The engine ran past one of its limits (engine_watch.Watch says which)."""


def run_engine(argv: Sequence[str], *, timeout: float = 1800.0,
               environ: Mapping[str, str] | None = None, show: bool = False,
               started: Callable[[], None] | None = None, limits: Limits | None = None) -> str:
    """Run `argv`; returns what it said (the tail, when `show` sent it to the terminal).
    `started` is called once it runs (work of the caller's that should not delay its start).
    `limits`: how long it may run and go without progress (default: `timeout` in all).
    It runs in an empty private directory: a Python engine (`python -m pip`, `-m venv`, which
    runs `-m ensurepip`) puts its working directory first on sys.path, and the caller's may hold
    a ./pip/ of someone else's."""
    import shutil
    import tempfile

    def then() -> None:
        # The caller's extra work is not the engine's: its failure must not stop an engine that
        # may be changing the environment (the caller does without what it would have made).
        try:
            if started is not None:
                started()
        except Exception:
            pass

    bounds = limits or Limits(timeout)
    env = clean_environment(environ, progress=show)
    if bounds.read is not None:  # the engines' own per-read timeouts (pip's --timeout)
        import math  # whole seconds: uv reads an integer

        env["PIP_TIMEOUT"] = env["UV_HTTP_TIMEOUT"] = str(max(math.ceil(bounds.read), 1))
    try:
        cwd = tempfile.mkdtemp(prefix="neuronctl-engine-")  # mode 0700, empty
    except OSError as exc:
        raise FaultError(f"cannot make a working directory for {argv[0]}: {exc.strerror or exc}") from None
    try:
        runner = _run_on_terminal if show else _run_captured
        code, said = runner(argv, bounds, env, then, cwd)
    except Stalled as exc:
        raise FaultError(f"`{shown(argv)}` {exc}") from None
    except OSError as exc:
        raise FaultError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
    if code != 0:
        lines = failure_lines(said)
        told = f": {' | '.join(lines)}" if lines else ""
        raise FaultError(f"`{shown(argv)}` failed ({exit_status(code)}){told}")
    return said


def failure_lines(said: str, most: int = 4) -> list[str]:
    """The lines of an engine's output that say why it failed: its error lines (uv's `error:`
    and `Caused by:`, pip's `ERROR:`) and what follows them, else its last lines."""
    lines = [ln.strip() for ln in _ANSI.sub("", said).replace("\r", "\n").splitlines() if ln.strip()]
    first = next((i for i, ln in enumerate(lines)
                  if ln.lower().startswith(("error", "caused by", "\u00d7", "hint:"))), None)
    chosen = lines[first:first + most] if first is not None else lines[-3:]
    return [ln[:300] for ln in chosen]


def _start(argv: Sequence[str], env: dict[str, str], out: int, err: int,
           cwd: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                            cwd=cwd, start_new_session=True)


def _pump(proc: subprocess.Popen[bytes], fd: int, watch: Watch, sink: Callable[[bytes], None]) -> None:
    """Read the engine's output from `fd` until it ends and the engine exits, checking its limits
    (Stalled when one is reached)."""
    import select

    while True:
        why = watch.due()
        if why is not None:
            raise Stalled(why)
        ready, _, _ = select.select([fd], [], [], max(min(watch.left(), POLL_S), 0.0))
        if not ready:
            continue
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # EIO: every writer closed the terminal's end; the engine is done
            break
        if not chunk:
            break
        watch.output(len(chunk))
        sink(chunk)
    while True:  # its output has ended; it may still be running (a child it left behind)
        why = watch.due()
        if why is not None:
            raise Stalled(why)
        try:
            proc.wait(timeout=max(min(watch.left(), POLL_S), 0.01))
            return
        except subprocess.TimeoutExpired:
            continue


def _run_captured(argv: Sequence[str], limits: Limits, env: dict[str, str],
                  started: Callable[[], None], cwd: str) -> tuple[int, str]:
    proc = _start(argv, env, subprocess.PIPE, subprocess.STDOUT, cwd)
    assert proc.stdout is not None
    tail = bytearray()

    def keep(chunk: bytes) -> None:
        tail.extend(chunk)
        del tail[:-TAIL_BYTES]

    try:
        started()
        _pump(proc, proc.stdout.fileno(), Watch(proc.pid, limits), keep)
    except BaseException as exc:
        _stop(proc, exc)
        raise
    finally:
        proc.stdout.close()
    return proc.returncode, tail.decode("utf-8", errors="replace")


def _run_on_terminal(argv: Sequence[str], limits: Limits, env: dict[str, str],
                     started: Callable[[], None], cwd: str) -> tuple[int, str]:
    import pty

    master, slave = pty.openpty()
    _copy_window_size(slave)
    try:
        proc = _start(argv, env, slave, slave, cwd)
    finally:
        os.close(slave)
    tail = bytearray()

    def show(chunk: bytes) -> None:
        os.write(2, chunk)
        tail.extend(chunk)
        del tail[:-TAIL_BYTES]

    try:
        started()
        _pump(proc, master, Watch(proc.pid, limits), show)
    except BaseException as exc:
        _stop(proc, exc)
        raise
    finally:
        os.close(master)
    return proc.returncode, tail.decode("utf-8", errors="replace")


def _copy_window_size(slave: int) -> None:
    """The engine draws its bars for the width of neuronctl's own terminal."""
    import fcntl
    import termios

    try:
        size = fcntl.ioctl(2, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
    except OSError:
        pass


def _stop(proc: subprocess.Popen[bytes], why: BaseException) -> None:
    """Stop the engine's process group: the signal neuronctl got (SIGTERM or SIGINT) first, then,
    if it has not ended within STOP_GRACE seconds, SIGKILL."""
    if proc.poll() is not None:
        return
    sig = signal.SIGTERM if isinstance(why, TerminateSignal) or not isinstance(
        why, KeyboardInterrupt) else signal.SIGINT
    for each in (sig, signal.SIGKILL):
        try:
            os.killpg(proc.pid, each)
        except OSError:
            return
        try:
            proc.wait(timeout=STOP_GRACE)
            return
        except subprocess.TimeoutExpired:
            continue
        except KeyboardInterrupt:  # a second Ctrl-C: no more waiting
            continue


def exit_status(returncode: int) -> str:
    """"exit 2", or for a process a signal ended "killed by SIGKILL" (subprocess reports those as
    negative return codes, which read as nonsense exit codes)."""
    if returncode >= 0:
        return f"exit {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"killed by {name}"
