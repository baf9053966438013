# ruff: noqa: UP006, UP035  (runs in the target interpreter: whatever Python its torch needs, 3.8 on)
"""What a model's smoke run leaves running: its orphans are reparented to the smoke script's
interpreter (its subreaper), and killed as that interpreter exits. Loaded by path by
smoke_run.py inside the target interpreter.
"""

import contextlib
import os
import sys
import time
from typing import Dict, List, Tuple

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Orphans of what the model starts (a daemon that forks twice, a child in its own session)
    are then reparented to this interpreter, not to init: end_descendants() and neuronctl's
    kill find them by their parent links (Linux 3.4+; elsewhere nothing)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        pass


def live_descendants() -> "Dict[int, int]":
    """pid -> start time of each live descendant of this interpreter, by /proc's parent links."""
    children: Dict[int, List[Tuple[int, bool, int]]] = {}
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        try:
            with open("/proc/" + name + "/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[-1].split()
            children.setdefault(int(fields[1]), []).append((int(name), fields[0] == b"Z", int(fields[19])))
        except (OSError, IndexError, ValueError):
            continue
    found: Dict[int, int] = {}
    todo = [os.getpid()]
    while todo:
        for pid, zombie, start in children.get(todo.pop(), ()):
            if pid not in found:
                found[pid] = -1 if zombie else start
                todo.append(pid)
    return {pid: start for pid, start in found.items() if start >= 0}


def end_descendants() -> None:
    """Kill whatever the model started and left running (round after round: one that forks as
    its parent dies is found next time, reparented here), then reap it: run as this interpreter
    exits, after every other exit handler (which may still stop their workers nicely)."""
    import signal

    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        live = live_descendants()
        if not live:
            break
        now = live_descendants()  # a second look: a pid reused since the first has another start
        for pid, start in live.items():
            if now.get(pid) == start:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
