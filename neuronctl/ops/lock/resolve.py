"""Run a resolution for every target of a request: the face wiring index clients, cache,
metadata fetching and the resolver together (each of those is pure or injectable on its own)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from neuronctl.ops.lock.request import StackRequest
from neuronctl.resolvers.download import download_verified
from neuronctl.resolvers.finder import Finder
from neuronctl.resolvers.http_fetch import Fetcher, cached_fetcher
from neuronctl.resolvers.lockfile import LockedPackage, merge, with_sizes
from neuronctl.resolvers.metadata_fetch import MetadataFetcher
from neuronctl.resolvers.resolve import Resolution, resolve
from neuronctl.resolvers.simple_index import DistFile, IndexClient
from neuronctl.resolvers.stack_roots import root_requirements, version_filter


@dataclass
class Resolved:
    resolutions: list[Resolution]
    packages: list[LockedPackage]
    fetcher: Fetcher
    metadata_methods: dict[str, str]
    hash_of: Callable[[DistFile], str]

    def summary(self) -> dict[str, object]:
        methods: dict[str, int] = {}
        for how in self.metadata_methods.values():
            methods[how] = methods.get(how, 0) + 1
        return {"network": self.fetcher.stats.to_json(), "metadata": dict(sorted(methods.items()))}


def resolve_request(request: StackRequest, *, offline: bool, timeout: float) -> Resolved:
    fetcher, cache_root = cached_fetcher(offline=offline, timeout=timeout,
                                         credentials=request.routing.credentials())
    metadata = MetadataFetcher(fetcher, fetcher.cache, cache_root)
    roots = root_requirements(request.plan, request.requirements)
    refuse = version_filter(request.plan)
    try:
        with Finder(IndexClient(fetcher), request.routing, metadata) as finder:
            resolutions = [resolve(finder, t, roots, version_filter=refuse) for t in request.targets]
            methods = dict(finder.metadata_methods)
    except BaseException:
        fetcher.abort()  # Ctrl-C, SIGTERM or a failure: no fetch in flight is waited for
        raise

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

    return Resolved(resolutions, with_sizes(merge(resolutions), metadata.sizes), fetcher, methods, hash_of)
