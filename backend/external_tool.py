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
from collections.abc import Callable, Mapping, Sequence

from neuronctl import proc
from neuronctl.backend.engine_watch import Limits, Watch
from neuronctl.errors import FaultError
from neuronctl.redact import redact

DROPPED_PREFIXES = ("PIP_", "UV_")
DROPPED = frozenset({"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONUSERBASE",
                     "PYTHONSTARTUP", "PYTHONINSPECT"})
KEPT = frozenset({"UV_CACHE_DIR", "UV_LINK_MODE", "UV_HTTP_RETRIES", "PIP_RETRIES"})
"""Where uv keeps its cache, how it links files, and how often an engine retries a failed
request (a flaky network's setting, or a CI's that wants a failure fast): no index can come in
through these."""
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


shown = proc.shown


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
        code, said = _run(argv, bounds, env, then, cwd, show)
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
    # redacted whole, then cut: a cut first can drop the '@' after a long password (an index
    # token of a thousand characters), and the rest would be shown
    return [redact(ln)[:300] for ln in chosen]


def _run(argv: Sequence[str], limits: Limits, env: dict[str, str], started: Callable[[], None],
         cwd: str, show: bool) -> tuple[int, str]:
    """The engine run through neuronctl.proc: stderr with stdout (on a terminal, one pty, drawn
    on neuronctl's stderr as it comes), its tail kept, its limits watched."""
    child = proc.Child(argv, env=env, cwd=cwd, stderr=proc.STDOUT, terminal=show)
    watch = Watch(child.pid, limits)

    def seen(chunk: bytes) -> None:
        watch.output(len(chunk))  # its writes of what we read are no progress
        if show:
            os.write(2, chunk)

    bounds = proc.Bounds(stop_grace=STOP_GRACE, watch=watch.due, poll=POLL_S)
    try:
        started()
    except BaseException as exc:
        child.stop(exc, STOP_GRACE)
        raise
    done = child.collect(bounds, stdout=proc.Keep(tail=TAIL_BYTES, sink=seen))
    if done.stopped is not None:
        raise FaultError(f"`{shown(argv)}` {done.stopped}")
    assert done.returncode is not None
    return done.returncode, done.stdout.text()


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
