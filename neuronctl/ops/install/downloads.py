"""Files downloaded by neuronctl itself, verified against their sha256 and size, in parallel with
progress; the first failure (or Ctrl-C, SIGTERM) stops the others. `install` no longer uses this
(the engine fetches and verifies each file in one pass); it is here for a wheel directory
(`neuronctl download`), where neuronctl itself keeps the files."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from neuronctl.backend.plan import Wanted
from neuronctl.errors import InputError
from neuronctl.ops.reporter import Reporter
from neuronctl.resolvers.download import cached_wheel_path, download_verified
from neuronctl.resolvers.http_fetch import Fetcher

LABEL_WIDTH = 28
WORKERS = 4


def planned_path(cache_root: Path, wanted: Wanted) -> Path:
    """Where the verified file will be: named by its checked sha256 and file name, inside the cache
    (cached_wheel_path refuses anything else); a file with no sha256 has no such place."""
    if wanted.sha256 is None:
        raise InputError(f"{wanted.filename[:80]}: no sha256; neuronctl verifies every file")
    return cached_wheel_path(cache_root, wanted.sha256, wanted.filename)


def progress_label(wanted: Wanted) -> str:
    """"torch 2.14.0+cpu": short enough that bar, size and speed fit beside it on 80 columns
    (wheel file names run to 80 characters)."""
    label = f"{wanted.name} {wanted.version}"
    return label if len(label) <= LABEL_WIDTH else label[:LABEL_WIDTH - 1] + "…"


def download_all(wanted: Sequence[Wanted], fetcher: Fetcher, cache_root: Path,
                 reporter: Reporter) -> dict[str, Path]:
    """name -> the verified file in the cache; the first failure wins and nothing unverified is
    kept. Each file's bytes go to reporter.progress (keyed by file name, labelled by
    progress_label) and its end to reporter.finished."""
    if not wanted:
        return {}
    abandon = threading.Event()

    def one(w: Wanted) -> tuple[str, Path]:
        def progress(done: int, total: int | None) -> None:
            reporter.progress(w.filename, progress_label(w), done, total)

        progress(0, w.size)
        path, _ = download_verified(fetcher, w.url, w.filename, cache_root, sha256=w.sha256,
                                    size=w.size, progress=progress, stop=abandon.is_set)
        reporter.finished(w.filename, f"verified {w.filename} ({path.stat().st_size:,} bytes, "
                                      "sha256 ok)")
        return w.name, path

    # The first failure, or Ctrl-C, stops the other downloads too instead of waiting them out.
    pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="neuronctl-download")
    try:
        return dict(pool.map(one, wanted))
    except BaseException:
        abandon.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
