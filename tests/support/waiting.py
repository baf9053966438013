"""Waiting on a child process for an event, failing at once should it end first."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path


def wait_until(happened: Callable[[], object], proc: subprocess.Popen, timeout: float = 120.0) -> None:
    """Until `happened()` (a file the process makes, a line it says), failing at once should the
    process end first; checked every 20 ms, so no test waits longer than the event takes."""
    deadline = time.monotonic() + timeout
    while not happened() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert happened(), proc.communicate(timeout=60)[1] if proc.poll() is not None else "timed out"


def wait_for(marker: Path, proc: subprocess.Popen) -> None:
    wait_until(marker.exists, proc)
