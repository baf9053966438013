"""Download a distribution into the content-addressed wheel cache, verified against its sha256
and size; a file that fails verification is never left where a later step could use it.

Below the cache root (which may itself be a link: ~/.cache on another disk) every folder is a
real one, made here, and a symbolic link where a folder or the file should be is never followed:
a folder that is a link is refused (a link planted in a shared wheelhouse would put files, or the
sweep of stale partial files, outside it), a file name that is a link is replaced, as a rename
replaces it, never written through.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from neuronctl.errors import FaultError, InputError, Interrupted
from neuronctl.resolvers.http_body import Transient
from neuronctl.resolvers.http_fetch import Fetcher
from neuronctl.routing import file_url_path, redact_url
from neuronctl.safety import checked_hash, contained, safe_filename

CHUNK = 1 << 20
MIN_RATE = 128 * 1024
"""Bytes a second a download may not fall below on average. A wheel's time limit is
--timeout (for the connection and headers) plus its size at this rate: 700 MB (the largest
compiler wheel) gets 1.5 hours, a 100 kB one a second more. A connection silent for --timeout is
dropped and retried sooner; one that trickles (a byte a second never trips a per-read timeout) is
cut off at the deadline instead of holding the install for ever."""
MAX_UNDECLARED = 4 << 30
"""A file whose size neither the lock nor the index declares may be at most this big (a CUDA
torch wheel is under 1 GiB); a declared size is the exact limit, so an endless response stops
there instead of filling the disk."""
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
    """Where a file with this sha256 lives in the wheel cache. Both parts come from locks and
    index pages, so both are checked (InputError) before they name anything on disk, and the
    result is refused unless it stays inside the cache."""
    digest = checked_hash("sha256", sha256, filename[:80] if isinstance(filename, str) else "file")
    name = safe_filename(filename, "wheel file name")
    # The folder is resolved and checked; the name (one safe component) is not resolved: a link
    # there is an entry to replace, not a place to write.
    return contained(cache_root / "wheels", digest[:2], digest) / name


def real_folder(root: Path, folder: Path) -> Path:
    """`folder` (inside `root`) with every folder below `root` a real directory, made where
    missing; one that is a symbolic link or not a directory is refused (InputError)."""
    base = Path(os.path.abspath(root))
    base.mkdir(parents=True, exist_ok=True)
    path = base
    for part in _below(base, folder):
        path = path / part
        with contextlib.suppress(FileExistsError):
            os.mkdir(path)
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise InputError(f"{path}: a symbolic link or not a folder; neuronctl writes only into "
                             "real folders there (remove it)")
    return path


def _below(base: Path, folder: Path) -> tuple[str, ...]:
    try:
        return Path(os.path.abspath(folder)).relative_to(base).parts
    except ValueError:  # resolved through a link out of the root
        raise InputError(f"{folder}: outside {base} (a symbolic link on the way?); refusing to "
                         "write there") from None


def _regular_in_real_folders(root: Path, path: Path) -> bool:
    """A regular file at `path` itself (a link to one is not), every folder between `root` and
    it a real directory (a cached copy found through a link is not the cache's)."""
    base = Path(os.path.abspath(root.resolve()))
    try:
        parts = Path(os.path.abspath(path)).relative_to(base).parts
        folder = base
        for part in parts[:-1]:
            folder = folder / part
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                return False
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


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
        self.root = cache_root.resolve()
        self.wheels = self.root / "wheels"
        with self._cache_faults():
            staging = real_folder(self.root, self.wheels / "partial")  # swept: never a link
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
            real_folder(self.root, final.parent)
            os.replace(self.path, final)  # a link at `final` is replaced, its target untouched

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self._out.close()
        self.path.unlink(missing_ok=True)


def download_verified(fetcher: Fetcher, url: str, filename: str, cache_root: Path, *,
                      sha256: str | None, size: int | None,
                      progress: Progress | None = None, stop: Stop | None = None) -> tuple[Path, str]:
    """The verified file in the cache and its sha256. Reuses a cached copy (re-verified).
    Raises Interrupted soon after stop() turns true, keeping nothing of the partial file.

    `filename` and `sha256` are untrusted (a lock, an index page): both are checked before any
    path is built from them. Nothing outside this run's own partial file is ever deleted: a cached
    copy that fails verification is replaced (atomically) by the verified download instead."""
    where = f"{str(filename)[:80]} from {redact_url(url)}"
    filename = safe_filename(filename, where)
    if sha256 is not None:
        sha256 = checked_hash("sha256", sha256, where)
        final = cached_wheel_path(cache_root, sha256, filename)
        if _regular_in_real_folders(cache_root, final):
            got = sha256_file(final)
            if got == sha256:
                if progress:
                    progress(final.stat().st_size, final.stat().st_size)
                return final, got
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
                    if size is not None and fh.tell() > size:
                        raise InputError(f"{url}: larger than {_limit_text(size)}; refusing it")
        except OSError as exc:
            raise FaultError(f"{url}: cannot read it: {exc.strerror or exc}") from None
        return digest.hexdigest(), source.stat().st_size
    last = ""
    for _attempt in range(fetcher.retries + 1):
        out.restart()
        digest = hashlib.sha256()
        done = 0
        try:
            with fetcher.attempt(url, limit=size if size is not None else MAX_UNDECLARED,
                                 what=_limit_text(size), stop=stop, min_rate=MIN_RATE) as response:
                total = size or int(response.headers.get("Content-Length") or 0) or None
                for block in response.iter_content(CHUNK):
                    if stop is not None and stop():
                        raise Interrupted("stopped")
                    digest.update(block)
                    out.write(block)
                    done += len(block)
                    if progress:
                        progress(done, total)
        except Transient as exc:
            last = f"connection lost after {done} bytes ({exc.why})"
            continue
        except Interrupted:
            raise Interrupted(f"{redact_url(url)}: download abandoned after {done} bytes") from None
        finally:
            fetcher.stats.add(done)
        return digest.hexdigest(), done
    raise FaultError(f"{redact_url(url)}: {last} (after {fetcher.retries + 1} attempts)")


def _limit_text(size: int | None) -> str:
    if size is not None:
        return f"the {size:,} bytes the lock or index declares"
    return f"the {MAX_UNDECLARED >> 30} GiB neuronctl allows a file of undeclared size"
