"""Killing what a target script started, wherever it went (probes/target_run.py's `contain`).

A model or a torch may start children in a session or process group of their own, or daemons
that fork away from their parent: a kill of the script's process group misses them all. These
find them by /proc's parent links (the smoke script makes itself its descendants' subreaper, so
an orphan's link leads back to it) and by a token in their environment (which a daemon keeps
when its parent link is gone), and kill each by pid and start time, through a pidfd where there
is one, so that a pid reused meanwhile is never hit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

CONTAIN_VAR = "NEURONCTL_CONTAINED"
"""The environment variable whose value marks what a contained script started."""
DESCENDANTS_S = 2.0
"""How long the descendants of a contained script are looked for and killed, round after round
(a fork bomb outpacing the kills is left to the group kill and this limit)."""


def _proc_stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time in ticks) of `pid` from /proc; None where it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[-1].split()  # the name may hold ") "
        return int(fields[1]), fields[0].decode("ascii", "replace"), int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def _descendants(root: int) -> dict[int, int]:
    """pid -> start time of each live (not zombie) descendant of `root`, by parent links."""
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return {}
    children: dict[int, list[tuple[int, str, int]]] = {}
    for pid in pids:
        stat = _proc_stat(pid)
        if stat is not None:
            children.setdefault(stat[0], []).append((pid, stat[1], stat[2]))
    found: dict[int, int] = {}
    todo = [root]
    while todo:
        for pid, state, start in children.get(todo.pop(), ()):
            if pid not in found and pid != root:
                found[pid] = start if state != "Z" else -1
                todo.append(pid)
    return {pid: start for pid, start in found.items() if start >= 0}


def _kill_checked(pid: int, start: int) -> None:
    """SIGKILL `pid` only while it is still the process that started at `start`."""
    pidfd = -1
    with contextlib.suppress(OSError, AttributeError):
        pidfd = os.pidfd_open(pid)  # from here on the pid cannot be reused under us
    try:
        stat = _proc_stat(pid)
        if stat is None or stat[2] != start:
            return
        with contextlib.suppress(OSError):
            if pidfd >= 0:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def kill_descendants(root: int) -> None:
    """Stop the group `root` leads (nothing in it forks any more; the caller kills it after),
    then kill every descendant of `root`,
    round after round until a look finds none (or DESCENDANTS_S is up)."""
    with contextlib.suppress(OSError):
        os.killpg(root, signal.SIGSTOP)
    deadline = time.monotonic() + DESCENDANTS_S
    while time.monotonic() < deadline:
        live = _descendants(root)
        if not live:
            return
        for pid, start in live.items():
            _kill_checked(pid, start)
        time.sleep(0.002)  # the kernel reparents a killed parent's children as it dies


def kill_marked(token: bytes) -> None:
    """Kill every process whose environment holds `token` (what a contained script started,
    wherever it was reparented), round after round as kill_descendants does."""
    deadline = time.monotonic() + DESCENDANTS_S
    while token and time.monotonic() < deadline:
        marked: dict[int, int] = {}
        for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as fh:
                    held = token in fh.read().split(b"\0")
            except OSError:  # gone, or not ours to read (then not ours to have started either)
                continue
            stat = _proc_stat(int(name)) if held else None
            if stat is not None and stat[1] != "Z":
                marked[int(name)] = stat[2]
        if not marked:
            return
        for pid, start in marked.items():
            _kill_checked(pid, start)
        time.sleep(0.002)
