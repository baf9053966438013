"""Project pages and metadata for resolution, fetched concurrently and each exactly once, each
project from the one index its routing names; pages the resolver is likely to ask for next,
fetched ahead on the side (`ahead`)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from packaging.utils import NormalizedName, canonicalize_name

from neuronctl.errors import FaultError, InputError, Interrupted
from neuronctl.resolvers.core_metadata import CoreMetadata
from neuronctl.resolvers.metadata_fetch import MetadataFetcher
from neuronctl.resolvers.simple_index import DistFile, IndexClient
from neuronctl.routing import IndexRouting, redact_url

T = TypeVar("T")
AHEAD_WORKERS = 4
"""Pages fetched ahead at once: on a pool of their own, so the resolver's own fetches never
queue behind a guess."""
AHEAD_MOST = 256
"""Pages fetched ahead by one Finder (a lock's resolutions, one a target) at the most: a package
whose metadata lists thousands of dependencies makes the resolver fetch them only if it pins it,
not on a guess."""
FetchProgress = Callable[[str, int, int, str], None]
"""(what, done, total, project): called as each fetch starts and ends, "index pages" or
"metadata", with how many of that kind are done of those asked for so far. The caller renders it
(the resolvers never import the operations)."""


def _elsewhere(index: str) -> str:
    env = "NEURONCTL_INDEX_" + index.upper().replace("-", "_")
    return (f"point {index} at a reachable mirror with --index {index}=URL, {env}=URL or config "
            f"`indexes`")


class Finder:
    def __init__(self, client: IndexClient, routing: IndexRouting, metadata: MetadataFetcher,
                 *, workers: int = 8, progress: FetchProgress | None = None,
                 ahead: IndexClient | None = None) -> None:
        """`ahead`: the client pages fetched ahead go through (on a `Fetcher.branch()`, which
        close() aborts); None: nothing is fetched ahead."""
        self.client = client
        self._ahead = ahead
        self._ahead_pool = ThreadPoolExecutor(max_workers=AHEAD_WORKERS,
                                              thread_name_prefix="neuronctl-ahead")
        self._guesses: dict[object, bool] = {}
        """Keys of fetches begun on a guess that the resolver has not asked for yet, each with
        whether it is counted for the progress already (metadata is; a page fetched ahead is
        counted once the resolver asks for it)."""
        self._ahead_left = AHEAD_MOST
        self._closed = False
        self.routing = routing
        self.metadata_fetcher = metadata
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="neuronctl-fetch")
        self._lock = threading.Lock()
        self._futures: dict[object, Future[object]] = {}
        self._progress = progress
        self._asked: dict[str, int] = {}
        self._done: dict[str, int] = {}
        self.metadata_methods: dict[str, str] = {}
        """filename -> how its metadata was obtained (sidecar, range, download, file, cache)."""

    def close(self, *, wait: bool = True) -> None:
        """Stop the workers; with wait=False (a failure, Ctrl-C, SIGTERM) without waiting for the
        fetches in flight: the caller aborts those, and the process does not wait for them.
        Pages fetched ahead that nothing asked for are cut off, never waited for."""
        with self._lock:
            self._closed = True
        if self._ahead is not None:
            self._ahead.fetcher.abort()
        self._ahead_pool.shutdown(wait=wait, cancel_futures=True)
        self._pool.shutdown(wait=wait, cancel_futures=True)

    def __enter__(self) -> Finder:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        self.close(wait=kind is None)

    def _once(self, key: tuple[str, str], project: str, work: Callable[[], T], *,
              guess: bool = False) -> Future[T]:
        """The fetch of `key`, begun once. A fetch begun on a guess (`guess`, or Finder.ahead)
        that the resolver then asks for is the resolver's own from then on, unless it failed or
        had not begun: then it is fetched again, as if never guessed (a guess may have met a
        moment's outage, or stopped short of a download the resolver does want)."""
        kind = "index pages" if key[0] == "files" else "metadata"
        adopted = False
        with self._lock:
            future = self._futures.get(key)
            if future is not None and not guess and key in self._guesses:
                counted = self._guesses.pop(key)
                if future.cancel() or (future.done() and future.exception() is not None):
                    future = None
                elif not future.done():  # on its way: waited for, and fetched again if it fails
                    again = functools.partial(_or_again, future, work)
                    if not counted:
                        self._asked[kind] = self._asked.get(kind, 0) + 1
                    future = self._pool.submit(again) if counted else \
                        self._pool.submit(self._counted, kind, project, again)
                    self._futures[key] = future
                elif not counted:  # a page fetched ahead: counted as the resolver asks for it
                    self._asked[kind] = self._asked.get(kind, 0) + 1
                    adopted = True
            if future is None:
                self._asked[kind] = self._asked.get(kind, 0) + 1
                future = self._pool.submit(self._counted, kind, project, work)
                self._futures[key] = future
                if guess:
                    self._guesses[key] = True
        if adopted:  # outside the lock: a done future calls back at once
            future.add_done_callback(lambda _: self._ended(kind, project))
        return future  # type: ignore[return-value]

    def ahead(self, projects: Iterable[str]) -> None:
        """Fetch these projects' pages on the side, in case the resolver asks for them next
        (each once, AHEAD_MOST at the most, none once closed): a page it asks for is then in,
        or on its way; one it never asks for is dropped at close()."""
        if self._ahead is None:
            return
        with self._lock:
            for project in projects:
                name = canonicalize_name(project)
                key = ("files", name)
                if self._closed or self._ahead_left <= 0 or key in self._futures:
                    continue
                self._ahead_left -= 1
                self._guesses[key] = False
                self._futures[key] = self._ahead_pool.submit(self._load_files, name, self._ahead)

    def _counted(self, kind: str, project: str, work: Callable[[], T]) -> T:
        self._tell(kind, project)
        try:
            return work()
        finally:
            self._ended(kind, project)

    def _ended(self, kind: str, project: str) -> None:
        with self._lock:
            self._done[kind] = self._done.get(kind, 0) + 1
        self._tell(kind, project)

    def _tell(self, kind: str, project: str) -> None:
        if self._progress is None:
            return
        with self._lock:
            done, total = self._done.get(kind, 0), self._asked.get(kind, 0)
        self._progress(kind, done, total, project)

    def index_of(self, project: str) -> tuple[str, str]:
        name = self.routing.index_for(project)
        return name, self.routing.indexes[name]

    def _load_files(self, project: NormalizedName, client: IndexClient | None = None) -> list[DistFile]:
        index, url = self.index_of(project)
        try:
            files = (client or self.client).project_files(url, project)
        except Interrupted:
            raise
        except FaultError as exc:
            raise FaultError(f"index {index!r}: {exc.message}", hint=_elsewhere(index)) from None
        if files is None:
            others = [name for name in self.routing.indexes if name != index]
            raise InputError(
                f"package {project!r} is routed to index {index!r} ({redact_url(url)}), which does "
                "not have it; neuronctl never falls back to another index",
                hint=f"check the name; if {project} lives on another index, route it there with "
                     f"--route {project}=INDEX (other indexes: {', '.join(others) or 'none'})")
        return files

    def prefetch(self, projects: Iterable[str]) -> None:
        for project in projects:
            name = canonicalize_name(project)
            self._once(("files", name), name,
                       lambda n=name: self._load_files(n))  # type: ignore[misc]

    def files(self, project: str) -> list[DistFile]:
        name = canonicalize_name(project)
        return self._once(("files", name), name, lambda: self._load_files(name)).result()

    def _load_metadata(self, dist: DistFile, project: str, *, download: bool = True) -> CoreMetadata:
        md, how = self.metadata_fetcher.fetch(dist, project, download=download)
        self.metadata_methods[dist.filename] = how
        return md

    def prefetch_metadata(self, dist: DistFile, project: str,
                          then: Callable[[CoreMetadata], None] | None = None) -> None:
        """Fetch this file's metadata in the background (once), on a guess: by sidecar or range
        read, never by downloading the whole file (metadata() does, if the resolver needs it);
        `then` with it once it is in (on the worker that read it, or here if it is in already),
        where it could be read."""
        future = self._once(("metadata", dist.url), project,
                            lambda: self._load_metadata(dist, project, download=False), guess=True)
        if then is not None:
            future.add_done_callback(functools.partial(_read, then))

    def metadata(self, dist: DistFile, project: str) -> CoreMetadata:
        return self._once(("metadata", dist.url), project,
                          lambda: self._load_metadata(dist, project)).result()


def _read(then: Callable[[T], None], future: Future[T]) -> None:
    """`then` with a fetch's result, where it succeeded (one that failed fails again, and is
    reported, where the resolution itself asks for it)."""
    if not future.cancelled() and future.exception() is None:
        then(future.result())


def _or_again(guess: Future[T], work: Callable[[], T]) -> T:
    """What a fetch begun on a guess got, or, where it failed, `work` done now (on a worker of
    the main pool: `guess` runs on a worker of its own, so waiting for it here cannot starve)."""
    try:
        return guess.result()
    except Exception:
        return work()
