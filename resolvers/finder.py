"""Project pages and metadata for resolution, fetched concurrently and each exactly once, each
project from the one index its routing names."""

from __future__ import annotations

import contextlib
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
Then = Callable[[T], None]
"""What a prefetch does with its result once it is in, on the worker that fetched it: more
prefetches. It can raise nothing (a guess that went wrong is no failure) and returns nothing."""
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
                 *, workers: int = 8, progress: FetchProgress | None = None) -> None:
        self.client = client
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
        fetches in flight: the caller aborts those, and the process does not wait for them."""
        self._pool.shutdown(wait=wait, cancel_futures=True)

    def __enter__(self) -> Finder:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        self.close(wait=kind is None)

    def _once(self, key: tuple[str, str], project: str, work: Callable[[], T]) -> Future[T]:
        with self._lock:
            future = self._futures.get(key)
            if future is None:
                kind = "index pages" if key[0] == "files" else "metadata"
                self._asked[kind] = self._asked.get(kind, 0) + 1
                future = self._pool.submit(self._counted, kind, project, work)
                self._futures[key] = future
        return future  # type: ignore[return-value]

    def _counted(self, kind: str, project: str, work: Callable[[], T]) -> T:
        self._tell(kind, project)
        try:
            return work()
        finally:
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

    def _load_files(self, project: NormalizedName) -> list[DistFile]:
        index, url = self.index_of(project)
        try:
            files = self.client.project_files(url, project)
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

    def prefetch(self, projects: Iterable[str], then: Then[list[DistFile]] | None = None) -> None:
        """Fetch these projects' pages in the background (each once); `then` with each page's
        files once it is in."""
        for project in projects:
            name = canonicalize_name(project)
            future = self._once(("files", name), name,
                                lambda n=name: self._load_files(n))  # type: ignore[misc]
            if then is not None:
                future.add_done_callback(functools.partial(_after, then))

    def files(self, project: str) -> list[DistFile]:
        name = canonicalize_name(project)
        return self._once(("files", name), name, lambda: self._load_files(name)).result()

    def _load_metadata(self, dist: DistFile, project: str) -> CoreMetadata:
        md, how = self.metadata_fetcher.fetch(dist, project)
        self.metadata_methods[dist.filename] = how
        return md

    def prefetch_metadata(self, dist: DistFile, project: str, then: Then[CoreMetadata] | None = None
                          ) -> None:
        """Fetch this file's metadata in the background (once); `then` with it once it is in."""
        future = self._once(("metadata", dist.url), project, lambda: self._load_metadata(dist, project))
        if then is not None:
            future.add_done_callback(functools.partial(_after, then))

    def metadata(self, dist: DistFile, project: str) -> CoreMetadata:
        return self._once(("metadata", dist.url), project,
                          lambda: self._load_metadata(dist, project)).result()


def _after(then: Then[T], future: Future[T]) -> None:
    """A prefetch's `then`, where it succeeded: a fetch that failed fails again, and is reported,
    where the resolution itself asks for it; one it never asks for is no concern of the lock's."""
    if future.cancelled() or future.exception() is not None:
        return
    with contextlib.suppress(Exception):  # a guess that went wrong costs a fetch, never the lock
        then(future.result())
