"""Whether a process is still running, read from /proc (a zombie waiting for its reaper is not)."""

from __future__ import annotations

import time
from pathlib import Path


def alive(pid: int) -> bool:
    """Running, that is: neither gone nor a zombie (or dead) waiting for a reaper."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def gone(pid: int, within: float = 0.0) -> bool:
    """Whether pid is gone (or a zombie nobody of ours waits for), waiting up to `within` seconds."""
    until = time.monotonic() + within
    while alive(pid):
        if time.monotonic() >= until:
            return False
        time.sleep(0.05)
    return True
