# ruff: noqa: UP006, UP035  (runs on Python 3.6+: no builtin generics)
"""A held inspection's wait, inside the target interpreter: loaded by path by inspect_env.py,
only when it is held (option "hold"). It waits until neuronctl releases it, then tells whether
what the interpreter loaded as it started is still what is on disk.
"""

import os
import sys
import time

# Annotations are strings and typing is not imported when it runs (see inspect_env.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, List, Tuple

RELEASE = b"go\n"
"""What neuronctl writes to a held inspection's stdin before closing it."""
STALE = 3
"""Exit status of a held inspection whose stdin closed without RELEASE (start-up code took or
closed it), or whose start-up modules changed while it waited: it reports nothing, and neuronctl
asks a new interpreter."""


def wait_for_release() -> bool:
    """Until stdin closes (neuronctl closes it after the install, or dies): everything else this
    inspection reports is fixed for the life of the interpreter, the distributions are not.
    True only where neuronctl's RELEASE came first."""
    got = b""
    while len(got) <= len(RELEASE):
        try:
            chunk = os.read(0, 64)
        except OSError:
            return False
        if not chunk:
            return got == RELEASE
        got += chunk
    return False


def started_at(script_start: float) -> float:
    """A moment before this interpreter started (wall clock: what file ctimes are), from /proc;
    never later than inspect_env.py's start (`script_start`), and 10 s before it where /proc
    cannot say."""
    try:
        with open("/proc/self/stat") as fh:
            ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        age = uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        age = 10.0
    # ctimes come from a clock that may lag by a tick, and /proc counts in ticks: the margin
    # keeps a change just after the start from looking older than it.
    return min(time.time() - max(age, 0.0), script_start) - 0.05


def start_up_changed(at_start: "List[Tuple[str, Any]]", since: float) -> bool:
    """Whether a file of a module loaded as this interpreter started was changed (or removed)
    since `since`: start-up code may then run differently in a new interpreter."""
    for name, module in at_start:
        path = getattr(module, "__file__", None)
        if name == "__main__" or not isinstance(path, str):
            continue
        try:
            if os.stat(path).st_ctime > since:
                return True
        except OSError:
            return True
    return False


def forget_listings() -> None:
    """importlib.metadata caches what it listed (keyed on mtimes, which one tick may not tell
    apart): where start-up code used it before the install, it lists again."""
    if "importlib.metadata" in sys.modules:
        sys.modules["importlib"].invalidate_caches()


def released_unchanged(at_start: "List[Tuple[str, Any]]", script_start: float) -> bool:
    """Wait for neuronctl's release; True where it came and the start-up modules (`at_start`,
    taken before inspect_env.py's own imports) are unchanged since this interpreter started."""
    since = started_at(script_start)
    if not wait_for_release() or start_up_changed(at_start, since):
        return False
    forget_listings()
    return True
