"""Download a distribution into the content-addressed wheel cache, verified against its sha256
and size; a file that fails verification is never left where a later step could use it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from neuronctl.errors import FaultError, InputError, Interrupted
from neuronctl.resolvers.http_fetch import Fetcher
from neuronctl.routing import file_url_path, redact_url

CHUNK = 1 << 20
Progress = Callable[[int, int | None], None]
"""(bytes so far, total or None)."""
Stop = Callable[[], bool]
"""True once the caller wants the download abandoned (checked between chunks)."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def cached_wheel_path(cache_root: Path, sha256: str, filename: str) -> Path:
    return cache_root / "wheels" / sha256[:2] / sha256 / filename


def _check(filename: str, url: str, got_sha: str, got_size: int, sha256: str | None,
           size: int | None) -> None:
    if sha256 is not None and got_sha != sha256.lower():
        raise InputError(f"{filename} from {redact_url(url)}: sha256 mismatch: expected {sha256}, "
                         f"got {got_sha}; refusing to use it")
    if size is not None and got_size != size:
        raise InputError(f"{filename} from {redact_url(url)}: size mismatch: expected {size} bytes, "
                         f"got {got_size}; refusing to use it")


STALE_PARTIAL_S = 24 * 3600
"""A partial file this old was left by a process that was killed (a live download writes to its
file every moment), and is deleted by the next download."""


def _sweep_stale(staging: Path) -> None:
    cutoff = time.time() - STALE_PARTIAL_S
    for entry in os.scandir(staging):
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)


class _Staging:
    """The partial file a download goes into. Failing to write it (a full disk, a cache path that
    cannot be a directory) is a fault of the cache, reported as such and never retried as if the
    connection had dropped."""

    def __init__(self, cache_root: Path, filename: str) -> None:
        self.filename = filename
        self.wheels = cache_root / "wheels"
        with self._cache_faults():
            staging = self.wheels / "partial"
            staging.mkdir(parents=True, exist_ok=True)
            _sweep_stale(staging)
            fd, name = tempfile.mkstemp(prefix=f"{filename}.", dir=staging)
        self.path = Path(name)
        self._out = os.fdopen(fd, "wb")

    @contextlib.contextmanager
    def _cache_faults(self) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise FaultError(f"cannot write {self.filename} into the wheel cache {self.wheels}: "
                             f"{exc.strerror or exc}", hint="free some space there, or set "
                             "NEURONCTL_CACHE_DIR to another directory") from None

    def write(self, block: bytes) -> None:
        with self._cache_faults():
            self._out.write(block)

    def restart(self) -> None:
        with self._cache_faults():
            self._out.seek(0)
            self._out.truncate()

    def close(self) -> None:
        with self._cache_faults():
            self._out.close()

    def move_to(self, final: Path) -> None:
        with self._cache_faults():
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.path, final)

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self._out.close()
        self.path.unlink(missing_ok=True)


def download_verified(fetcher: Fetcher, url: str, filename: str, cache_root: Path, *,
                      sha256: str | None, size: int | None,
                      progress: Progress | None = None, stop: Stop | None = None) -> tuple[Path, str]:
    """The verified file in the cache and its sha256. Reuses a cached copy (re-verified).
    Raises Interrupted soon after stop() turns true, keeping nothing of the partial file."""
    if sha256 is not None:
        final = cached_wheel_path(cache_root, sha256.lower(), filename)
        if final.is_file():
            got = sha256_file(final)
            if got == sha256.lower():
                if progress:
                    progress(final.stat().st_size, final.stat().st_size)
                return final, got
            final.unlink()
    staged = _Staging(cache_root, filename)
    try:
        got_sha, got_size = _fetch_into(fetcher, url, staged, size, progress, stop)
        staged.close()
        _check(filename, url, got_sha, got_size, sha256, size)
        final = cached_wheel_path(cache_root, got_sha, filename)
        staged.move_to(final)
        return final, got_sha
    finally:
        staged.discard()


def _fetch_into(fetcher: Fetcher, url: str, out: _Staging, size: int | None,
                progress: Progress | None, stop: Stop | None) -> tuple[str, int]:
    source = file_url_path(url)
    if source is not None:
        if not source.is_file():
            raise InputError(f"{url}: no such file")
        digest = hashlib.sha256()
        try:
            with source.open("rb") as fh:
                for block in iter(lambda: fh.read(CHUNK), b""):
                    digest.update(block)
                    out.write(block)
        except OSError as exc:
            raise FaultError(f"{url}: cannot read it: {exc.strerror or exc}") from None
        return digest.hexdigest(), source.stat().st_size
    import requests

    last = ""
    for _attempt in range(fetcher.retries + 1):
        out.restart()
        digest = hashlib.sha256()
        done = 0
        response = fetcher.get(url, stream=True)
        total = size or int(response.headers.get("Content-Length") or 0) or None
        try:
            for block in response.iter_content(CHUNK):
                if stop is not None and stop():
                    raise Interrupted(f"{redact_url(url)}: download abandoned after {done} bytes")
                digest.update(block)
                out.write(block)
                done += len(block)
                if progress:
                    progress(done, total)
        except (requests.RequestException, OSError) as exc:
            last = f"connection lost after {done} bytes ({type(exc).__name__})"
            continue
        finally:
            response.close()
            fetcher.stats.add(done)
        return digest.hexdigest(), done
    raise FaultError(f"{redact_url(url)}: {last} (after {fetcher.retries + 1} attempts)")
