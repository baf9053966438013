"""Dependency metadata for a distribution without downloading whole wheels: the PEP 658 sidecar
when the index offers one, else HTTP range requests on the wheel's zip directory, else a full
(verified, cached, reported) download."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from neuronctl.errors import FaultError, InputError
from neuronctl.resolvers.core_metadata import CoreMetadata, MetadataMismatch, checked_metadata
from neuronctl.resolvers.download import download_verified
from neuronctl.resolvers.http_cache import HttpCache
from neuronctl.resolvers.http_fetch import Fetcher
from neuronctl.resolvers.lazy_wheel import TAIL, RangeFile, parse_content_range, read_metadata_from_zip
from neuronctl.resolvers.simple_index import DistFile
from neuronctl.routing import file_url_path, redact_url


class WholeFileNeeded(Exception):
    """Only downloading the whole file would give its metadata (the server ignores range
    requests), and this fetch was a guess, which never downloads a file."""


class MetadataFetcher:
    def __init__(self, fetcher: Fetcher, cache: HttpCache | None, cache_root: Path) -> None:
        self.fetcher = fetcher
        self.cache = cache
        self.cache_root = cache_root
        self.sizes: dict[str, int] = {}
        """url -> file size learned on the way (Content-Range, a download): HTML indexes omit it."""
        self.notes: list[str] = []
        """Metadata set aside on the way (a sidecar contradicting its wheel), for the report."""

    def fetch(self, dist: DistFile, project: str, *, download: bool = True) -> tuple[CoreMetadata, str]:
        """The parsed metadata and how it was obtained: file, cache, sidecar, range or download
        (not without `download`: WholeFileNeeded, where only the whole file would tell).

        Metadata that contradicts its file (another Name or Version than the file name, another
        Requires-Python than the index page) is never used: a sidecar that does so is set aside
        for the wheel's own METADATA; a wheel that does so is MetadataMismatch."""
        where = f"{dist.filename} from {redact_url(dist.url)}"
        path = file_url_path(dist.url)
        if path is not None:
            try:
                text = read_metadata_from_zip(str(path), project)
            except (OSError, ValueError) as exc:
                raise InputError(f"{where}: {exc}") from None
            return checked_metadata(text, dist.filename, dist.requires_python, where), "file"
        cached = self._from_cache(dist, where)
        if cached is not None:
            return cached, "cache"
        if self.fetcher.offline:
            raise FaultError(f"{where}: metadata not in the cache, and --offline forbids the network")
        md: CoreMetadata | None = None
        if dist.core_metadata:
            text, how = self._sidecar(dist, where), "sidecar"
            try:
                md = checked_metadata(text, dist.filename, dist.requires_python, where)
            except MetadataMismatch as exc:
                self.notes.append(f"{exc}; read the wheel's own METADATA instead")
        if md is None:
            text, how = self._by_range(dist, project, where, download)
            md = checked_metadata(text, dist.filename, dist.requires_python, where)
        if self.cache is not None:
            key = self._cache_key(dist)
            self.cache.put_blob("metadata", key, text.encode("utf-8"))
            if dist.url in self.sizes:
                self.cache.put_blob("size", key, str(self.sizes[dist.url]).encode())
        return md, how

    def _cache_key(self, dist: DistFile) -> str:
        sha = dist.hashes.get("sha256")
        return f"sha256:{sha}" if sha else dist.url

    def _from_cache(self, dist: DistFile, where: str) -> CoreMetadata | None:
        if self.cache is None:
            return None
        key = self._cache_key(dist)
        blob = self.cache.get_blob("metadata", key)
        if blob is None:
            return None
        try:
            md = checked_metadata(blob.decode("utf-8"), dist.filename, dist.requires_python,
                                  where)
        except (UnicodeDecodeError, InputError):
            return None  # a damaged or contradicting entry: fetched again, and replaced
        self.fetcher.stats.hit()
        size = self.cache.get_blob("size", key)
        if size is not None and size.isdigit():
            self.sizes[dist.url] = int(size)  # so a cached run writes the same lock
        return md

    def _sidecar(self, dist: DistFile, where: str) -> str:
        response = self.fetcher.get(dist.url + ".metadata")
        expected = dist.core_metadata if isinstance(dist.core_metadata, Mapping) else {}
        for algorithm, digest in expected.items():  # checked hex of a known algorithm (simple_index)
            if hashlib.new(algorithm, response.content).hexdigest() != digest:
                raise InputError(f"{where}: metadata sidecar {algorithm} does not match the index's "
                                 f"core-metadata hash; refusing it")
        try:
            return response.content.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{where}: metadata sidecar is not UTF-8") from None

    def _by_range(self, dist: DistFile, project: str, where: str, download: bool = True
                  ) -> tuple[str, str]:
        response = self.fetcher.get(dist.url, {"Range": f"bytes=-{TAIL}",
                                               "Accept-Encoding": "identity"},
                                    ok=frozenset({200, 206}), stream=True)
        try:
            served = parse_content_range(response.headers.get("Content-Range"))
            if response.status_code == 206 and served is not None:
                tail = response.content
                self.fetcher.stats.add(len(tail))
                size = served[2]
                self.sizes[dist.url] = size
            else:
                size = -1
        finally:
            response.close()
        if size < 0:
            if not download:
                raise WholeFileNeeded(where)
            return self._by_download(dist, project, where), "download"

        def fetch_range(start: int, end: int) -> bytes:
            r = self.fetcher.get(dist.url, {"Range": f"bytes={start}-{end - 1}",
                                            "Accept-Encoding": "identity"}, ok=frozenset({206}))
            return r.content

        try:
            return read_metadata_from_zip(RangeFile(size, fetch_range, tail), project), "range"
        except ValueError as exc:
            raise InputError(f"{where}: {exc}") from None

    def _by_download(self, dist: DistFile, project: str, where: str) -> str:
        path, _ = download_verified(self.fetcher, dist.url, dist.filename, self.cache_root,
                                    sha256=dist.hashes.get("sha256"), size=dist.size)
        self.sizes[dist.url] = path.stat().st_size
        self.fetcher.stats.downloaded(f"{dist.filename} ({path.stat().st_size} bytes): "
                                      "the server does not honour range requests")
        try:
            return read_metadata_from_zip(str(path), project)
        except ValueError as exc:
            raise InputError(f"{where}: {exc}") from None
