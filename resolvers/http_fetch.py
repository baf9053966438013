"""HTTP for the resolvers: one requests Session, retries with backoff for idempotent GETs,
conditional requests against the on-disk cache, an offline mode, and a byte count.

Every request is bounded: --timeout for the whole of it (http_deadline cuts the socket off; a
download also gets its size at a minimum rate), its body by a size limit (http_body), and
abort() or a caller's stop() ends it within a tenth of a second.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from neuronctl.cache_dir import user_cache_dir
from neuronctl.errors import FaultError, Interrupted
from neuronctl.resolvers.http_body import (
    MAX_BODY,
    MAX_PAGE,
    BoundedRaw,
    Transient,
    classify,
    refuse_downgrade,
)
from neuronctl.resolvers.http_cache import CachedPage, HttpCache
from neuronctl.resolvers.http_deadline import Guard, guarded
from neuronctl.routing import Origin, redact_url

if TYPE_CHECKING:
    import requests

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class Stats:
    """What went over the wire, for the summary and the benchmark (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.bytes = 0
        self.cache_hits = 0
        self.revalidated = 0
        self.full_downloads: list[str] = []

    def add(self, nbytes: int) -> None:
        with self._lock:
            self.requests += 1
            self.bytes += nbytes

    def hit(self, revalidated: bool = False) -> None:
        with self._lock:
            self.cache_hits += 1
            self.revalidated += int(revalidated)

    def downloaded(self, what: str) -> None:
        with self._lock:
            self.full_downloads.append(what)

    def to_json(self) -> dict[str, object]:
        return {"requests": self.requests, "bytes": self.bytes, "cache_hits": self.cache_hits,
                "revalidated": self.revalidated, "full_downloads": list(self.full_downloads)}


class Fetcher:
    def __init__(self, *, cache: HttpCache | None = None, offline: bool = False,
                 timeout: float = 30.0, retries: int = 3, backoff: float = 0.5,
                 session: requests.Session | None = None,
                 credentials: Mapping[Origin, tuple[str, str]] | None = None) -> None:
        self.cache = cache
        self._credentials = dict(credentials or {})  # origin -> (user, password); never shown
        self.offline = offline
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.stats = Stats()
        self._session = session
        self._session_lock = threading.Lock()
        self._aborted = threading.Event()
        self._trunk: Fetcher | None = None
        self._branches: list[Fetcher] = []

    def branch(self) -> Fetcher:
        """A Fetcher on this one's session (its connections, proxies and credentials), cache and
        counts, whose abort() cuts off only its own requests, while this one's abort() cuts off
        the branch's too: for pages fetched ahead of need, dropped once nothing can need them."""
        branch = copy.copy(self)  # the same settings, credentials, cache and counts
        branch._aborted, branch._trunk, branch._branches = threading.Event(), self, []
        with self._session_lock:
            self._branches.append(branch)
        if self._aborted.is_set():
            branch.abort()
        return branch

    @property
    def session(self) -> requests.Session:
        # requests (0.15-0.2 s to import) loads on the first request: an install whose files are
        # all in the cache, a dry run, or an offline lock never needs it.
        if self._trunk is not None:
            return self._trunk.session
        with self._session_lock:
            if self._session is None:
                import requests

                from neuronctl.resolvers.http_adapter import GuardedAdapter

                session = requests.Session()
                session.hooks["response"].append(refuse_downgrade)
                adapter = GuardedAdapter(pool_connections=8, pool_maxsize=16)
                session.mount("http://", adapter)
                session.mount("https://", adapter)
                if self._credentials:
                    from neuronctl.resolvers.index_auth import origin_auth

                    session.auth = origin_auth(self._credentials)
                self._session = session
            return self._session

    def abort(self) -> None:
        """Cut off every request in flight (within POLL_S) and refuse new ones: a run that failed
        or was interrupted does not wait for the network. Its branches' too."""
        self._aborted.set()
        with self._session_lock:
            branches, self._branches = self._branches, []
        for branch in branches:
            branch.abort()
        if self._trunk is not None:  # done with: its trunk need not hold it any longer
            with self._trunk._session_lock:
                if self in self._trunk._branches:
                    self._trunk._branches.remove(self)

    def _budget(self) -> float:
        # A little over the timeout, so that a server that sends nothing at all is caught by the
        # per-read timeout (retried) and only one that trickles by this deadline (not retried).
        return self.timeout + max(0.5, 0.1 * self.timeout)

    @contextlib.contextmanager
    def attempt(self, url: str, headers: Mapping[str, str] | None = None, *,
                ok: frozenset[int] = frozenset({200}), limit: int = MAX_BODY, what: str | None = None,
                stop: Callable[[], bool] | None = None, min_rate: float | None = None,
                keep: bool = False) -> Iterator[requests.Response]:
        """One GET, no retries: the response (headers read) with its body readable only up to
        `limit` bytes and only within the request's deadline, --timeout for the whole request
        (plus, with `min_rate`, the time the expected size takes at that many bytes a second).
        stop() or abort() cuts it off within POLL_S (Interrupted). Transient for what another
        attempt may cure. With `keep`, the response stays open and guarded after the block."""
        shown = redact_url(url)
        if self._aborted.is_set():
            raise Interrupted(f"{shown}: stopped")
        stopper = self._aborted.is_set if stop is None else (lambda: self._aborted.is_set() or stop())
        guard = Guard(time.monotonic() + self._budget(), stopper)
        kept = False
        with guarded(guard, keep=lambda: kept):
            try:
                response = self.session.get(url, headers=dict(headers or {}), stream=True,
                                            timeout=(self.timeout, self.timeout))
            except Exception as exc:  # classify() re-raises what is not the request's
                raise classify(exc, guard, shown, self.timeout) from None
            try:
                if response.status_code in RETRY_STATUSES:
                    raise Transient(f"HTTP {response.status_code}", shown)
                if response.status_code not in ok:
                    raise FaultError(f"{shown}: HTTP {response.status_code}")
                if min_rate:
                    declared = response.headers.get("Content-Length", "")
                    expected = min(limit, int(declared)) if declared.isdigit() else limit
                    guard.deadline += expected / min_rate
                    guard.allowance = f" plus {expected:,} bytes at {min_rate / 1024:g} KiB/s"
                response.raw = BoundedRaw(response.raw, limit, what or f"{limit:,} bytes", guard,
                                          shown, self.timeout)
                yield response
                kept = keep
            finally:
                if not kept:
                    response.close()

    def get(self, url: str, headers: Mapping[str, str] | None = None, *,
            ok: frozenset[int] = frozenset({200}), stream: bool = False,
            limit: int = MAX_BODY) -> requests.Response:
        """GET with retries on dropped connections, silence for the timeout, 429 and 5xx; other
        statuses not in `ok` are a FaultError naming the URL (credentials stripped). The body is
        read (bounded, see attempt()) before returning, unless `stream`."""
        if self.offline:
            raise FaultError(f"{redact_url(url)}: not in the cache and --offline forbids the network")
        last = ""
        for n in range(self.retries + 1):
            if n and self._aborted.wait(self.backoff * (2 ** (n - 1))):
                raise Interrupted(f"{redact_url(url)}: stopped")
            try:
                with self.attempt(url, headers, ok=ok, limit=limit, keep=stream) as response:
                    if not stream:
                        self.stats.add(len(response.content))
                    return response
            except Transient as exc:
                last = exc.why
        raise FaultError(f"{redact_url(url)}: {last} (after {self.retries + 1} attempts)")

    def get_page(self, url: str, accept: str) -> CachedPage | None:
        """A cacheable page (an index project page): None on 404. Revalidates a cached copy with
        If-None-Match / If-Modified-Since; offline, the cached copy is used as it is."""
        cached = self.cache.get_page(url) if self.cache else None
        if self.offline:
            if cached is None:
                raise FaultError(f"{redact_url(url)}: no cached copy, and --offline forbids the network")
            self.stats.hit()
            return cached
        headers = {"Accept": accept}
        if cached is not None:
            if cached.etag:
                headers["If-None-Match"] = cached.etag
            if cached.last_modified:
                headers["If-Modified-Since"] = cached.last_modified
        response = self.get(url, headers, ok=frozenset({200, 304, 404}), limit=MAX_PAGE)
        if response.status_code == 404:
            return None
        if response.status_code == 304 and cached is not None:
            self.stats.hit(revalidated=True)
            return cached
        page = CachedPage(response.content, response.headers.get("Content-Type", ""),
                          response.url or url, response.headers.get("ETag"),
                          response.headers.get("Last-Modified"))
        if self.cache is not None:
            self.cache.put_page(url, page)
        return page


def cached_fetcher(*, offline: bool, timeout: float, cache_root: Path | None = None,
                   credentials: Mapping[Origin, tuple[str, str]] | None = None) -> tuple[Fetcher, Path]:
    """A Fetcher on the user cache (pages under http/, wheels under wheels/) and that cache's root;
    `credentials` (IndexRouting.credentials()) are sent to their own origins only."""
    root = cache_root or user_cache_dir()
    return Fetcher(cache=HttpCache(root / "http"), offline=offline, timeout=timeout,
                   credentials=credentials), root
