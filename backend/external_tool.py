"""Run an engine command: argv only (never a shell), a cleaned environment so no inherited
PIP_* / UV_* setting can reintroduce an index, and a failure that says what ran and why it failed."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence

from neuronctl.errors import FaultError

DROPPED_PREFIXES = ("PIP_", "UV_")
DROPPED = frozenset({"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONUSERBASE"})
KEPT = frozenset({"UV_CACHE_DIR", "UV_LINK_MODE"})
"""Where uv keeps its cache and how it links files: no index can come in through these."""


def clean_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in (os.environ if environ is None else environ).items()
           if (k in KEPT or not k.startswith(DROPPED_PREFIXES)) and k not in DROPPED}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
               UV_NO_CONFIG="1", UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1")
    return env


def shown(argv: Sequence[str]) -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in argv)


def run_engine(argv: Sequence[str], *, timeout: float = 1800.0,
               environ: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL, env=clean_environment(environ))
    except subprocess.TimeoutExpired:
        raise FaultError(f"`{shown(argv)}` timed out after {timeout:g}s") from None
    except OSError as exc:
        raise FaultError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        tail = [ln for ln in (proc.stderr or proc.stdout).strip().splitlines() if ln.strip()][-3:]
        said = f": {' | '.join(tail)}" if tail else ""
        raise FaultError(f"`{shown(argv)}` failed ({exit_status(proc.returncode)}){said}")
    return proc


def exit_status(returncode: int) -> str:
    """"exit 2", or for a process a signal ended "killed by SIGKILL" (subprocess reports those as
    negative return codes, which read as nonsense exit codes)."""
    if returncode >= 0:
        return f"exit {returncode}"
    import signal

    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"killed by {name}"
