"""Run a resolution for every target of a request: index clients, cache, metadata fetching and
the resolver wired together (each of those is pure or injectable on its own), on one Fetcher
(one HTTP session) for the whole command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from msgspec import Struct

from neuronctl.ops.lock.request import StackRequest
from neuronctl.ops.reporter import Reporter, status
from neuronctl.resolvers.download import download_verified
from neuronctl.resolvers.finder import FetchProgress, Finder
from neuronctl.resolvers.http_fetch import Fetcher, cached_fetcher
from neuronctl.resolvers.lock_record import LockedPackage, merge, with_sizes
from neuronctl.resolvers.metadata_fetch import MetadataFetcher
from neuronctl.resolvers.resolve import Resolution, resolve
from neuronctl.resolvers.simple_index import DistFile, IndexClient
from neuronctl.resolvers.stack_roots import root_requirements, version_filter


class Resolved(Struct):
    """A fresh resolution for each target, its packages, and how their files were reached."""

    resolutions: list[Resolution]
    packages: list[LockedPackage]
    fetcher: Fetcher
    metadata_methods: dict[str, str]
    hash_of: Callable[[DistFile], str]

    def metadata_counts(self) -> dict[str, int]:
        """How many files' metadata came each way (sidecar, range, download, file, cache)."""
        methods: dict[str, int] = {}
        for how in self.metadata_methods.values():
            methods[how] = methods.get(how, 0) + 1
        return dict(sorted(methods.items()))

    def summary(self) -> dict[str, object]:
        return {"network": self.fetcher.stats.to_json(), "metadata": self.metadata_counts()}


def request_fetcher(request: StackRequest, *, offline: bool, timeout: float) -> tuple[Fetcher, Path]:
    """The command's one Fetcher (on the user cache, with the routing's index credentials) and
    the cache root; pass both to resolve_request and to whatever downloads afterwards."""
    return cached_fetcher(offline=offline, timeout=timeout, credentials=request.routing.credentials())


def fetch_status(reporter: Reporter) -> FetchProgress:
    """The resolvers' fetch progress as the reporter's `status` events ("fetching index pages:
    12 of 30 (torch-neuronx)"), for a live line on a terminal."""
    def tell(what: str, done: int, total: int, project: str) -> None:
        reporter.emit(status(f"fetching {what}: {done} of {total} ({project})", done, total,
                             (project,)))

    return tell


def resolve_request(request: StackRequest, *, offline: bool, timeout: float,
                    fetcher: Fetcher | None = None, cache_root: Path | None = None,
                    progress: FetchProgress | None = None) -> Resolved:
    """Every target of `request` resolved, merged into the packages of one lock. With no
    `fetcher`, one is made (request_fetcher); a caller that fetches more passes its own.
    `progress` hears of each index page and metadata fetch (fetch_status)."""
    if fetcher is None or cache_root is None:
        fetcher, cache_root = request_fetcher(request, offline=offline, timeout=timeout)
    metadata = MetadataFetcher(fetcher, fetcher.cache, cache_root)
    roots = root_requirements(request.plan, request.requirements)
    refuse = version_filter(request.plan)
    try:
        with Finder(IndexClient(fetcher), request.routing, metadata, progress=progress,
                    ahead=IndexClient(fetcher.branch())) as finder:
            resolutions = [resolve(finder, t, roots, version_filter=refuse) for t in request.targets]
            methods = dict(finder.metadata_methods)
    except BaseException:
        fetcher.abort()  # Ctrl-C, SIGTERM or a failure: no fetch in flight is waited for
        raise
    packages = with_sizes(merge(resolutions), metadata.sizes)
    return Resolved(resolutions, packages, fetcher, methods, _hasher(fetcher, cache_root))


def _hasher(fetcher: Fetcher, cache_root: Path) -> Callable[[DistFile], str]:
    """A wheel's sha256: the index's, else (once per file, reported) from downloading it."""
    hashes: dict[str, str] = {}

    def hash_of(dist: DistFile) -> str:
        known = dist.hashes.get("sha256")
        if known:
            return known.lower()
        if dist.url not in hashes:
            path, digest = download_verified(fetcher, dist.url, dist.filename, cache_root,
                                             sha256=None, size=dist.size)
            if not dist.url.startswith("file:"):
                fetcher.stats.downloaded(f"{dist.filename} ({path.stat().st_size} bytes): "
                                         "the index publishes no sha256 for it")
            hashes[dist.url] = digest
        return hashes[dist.url]

    return hash_of
