"""One `neuronctl install` at a time per environment: a second one waits for the first to finish
(then plans against what it left) instead of running an engine over a half-changed environment.
pip takes no lock of its own; uv locks only while it runs, not across plan, apply and check."""

from __future__ import annotations

import fcntl
import os
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def environment_lock(environment: str, cache_root: Path, on_wait: Callable[[], None]) -> Iterator[bool]:
    """Hold the environment's lock (a file under the cache, so the environment itself is never
    touched); yields whether it had to wait. Where the cache cannot hold the lock file, installs
    go on unlocked rather than fail."""
    # The name only has to be the same for the same environment: two checksums of its path, not
    # sha256 (hashlib loads OpenSSL, ~4 ms of an install with nothing to do). Two environments
    # that shared a name would only take turns. (Versions before this one named it by sha256:
    # an older and a newer neuronctl installing into one environment at the same moment do not
    # take turns; uv still locks the environment while it runs.)
    key = environment.encode()
    path = cache_root / "locks" / f"{zlib.crc32(key):08x}{zlib.adler32(key):08x}.lock"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield False
        return
    try:
        waited = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait()
            waited = True
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield waited
    finally:
        os.close(fd)  # releases the lock
