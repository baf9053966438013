"""Download a distribution into the content-addressed wheel cache, verified against its sha256
and size; a file that fails verification is never left where a later step could use it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from neuronctl.errors import FaultError, InputError
from neuronctl.resolvers.http_fetch import Fetcher
from neuronctl.routing import file_url_path, redact_url

CHUNK = 1 << 20
Progress = Callable[[int, int | None], None]
"""(bytes so far, total or None)."""


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


def download_verified(fetcher: Fetcher, url: str, filename: str, cache_root: Path, *,
                      sha256: str | None, size: int | None,
                      progress: Progress | None = None) -> tuple[Path, str]:
    """The verified file in the cache and its sha256. Reuses a cached copy (re-verified)."""
    if sha256 is not None:
        final = cached_wheel_path(cache_root, sha256.lower(), filename)
        if final.is_file():
            got = sha256_file(final)
            if got == sha256.lower():
                if progress:
                    progress(final.stat().st_size, final.stat().st_size)
                return final, got
            final.unlink()
    staging = cache_root / "wheels" / "partial"
    staging.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f"{filename}.", dir=staging)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            got_sha, got_size = _fetch_into(fetcher, url, out, size, progress)
        _check(filename, url, got_sha, got_size, sha256, size)
        final = cached_wheel_path(cache_root, got_sha, filename)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, final)
        return final, got_sha
    finally:
        tmp.unlink(missing_ok=True)


def _fetch_into(fetcher: Fetcher, url: str, out: BinaryIO, size: int | None,
                progress: Progress | None) -> tuple[str, int]:
    source = file_url_path(url)
    if source is not None:
        if not source.is_file():
            raise InputError(f"{url}: no such file")
        digest = hashlib.sha256()
        with source.open("rb") as fh:
            for block in iter(lambda: fh.read(CHUNK), b""):
                digest.update(block)
                out.write(block)
        return digest.hexdigest(), source.stat().st_size
    import requests

    last = ""
    for _attempt in range(fetcher.retries + 1):
        out.seek(0)
        out.truncate()
        digest = hashlib.sha256()
        done = 0
        response = fetcher.get(url, stream=True)
        total = size or int(response.headers.get("Content-Length") or 0) or None
        try:
            for block in response.iter_content(CHUNK):
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
        out.flush()
        return digest.hexdigest(), done
    raise FaultError(f"{redact_url(url)}: {last} (after {fetcher.retries + 1} attempts)")
