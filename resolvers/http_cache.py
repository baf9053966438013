"""An on-disk HTTP cache for index pages (revalidated with ETag / Last-Modified) and for
immutable metadata (keyed by content), in the user cache directory.

Entries are written atomically (temp file, then rename), so concurrent neuronctl runs and a
crash mid-write never leave a torn entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

from msgspec import Struct

from neuronctl.atomic import write_bytes_atomic
from neuronctl.routing import redact_url


class CachedPage(Struct, frozen=True):
    """An index page as cached on disk, with the validators to revalidate it."""

    body: bytes
    content_type: str
    url: str
    etag: str | None
    last_modified: str | None


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


MAX_ENTRY = 64 << 20
"""The most a cache entry is read back (an index page's own cap): a planted or corrupt huge file
in the cache costs a refetch, not the memory."""
MAX_META = 64 << 10


def _read_bounded(path: Path, limit: int) -> bytes | None:
    """The file's bytes, or None when it is missing, unreadable or bigger than `limit`."""
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError:
        return None
    return data if len(data) <= limit else None


def _text_or_none(value: object) -> str | None:
    # Sent back as a header: only a short single-line string is.
    if isinstance(value, str) and len(value) < 1024 and value.isprintable():
        return value
    return None


def _write_entry(path: Path, data: bytes) -> None:
    # Not fsynced: a cache entry lost in a crash only costs a refetch.
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, data, durable=False)


class HttpCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _page_paths(self, url: str) -> tuple[Path, Path]:
        # Keyed by the full URL (credentials included) so two users' mirrors never share an entry;
        # only the redacted form is stored in the metadata file.
        key = _key(url)
        base = self.root / "pages" / key[:2] / key
        return base.with_suffix(".json"), base.with_suffix(".body")

    def get_page(self, url: str) -> CachedPage | None:
        meta_path, body_path = self._page_paths(url)
        raw, body = _read_bounded(meta_path, MAX_META), _read_bounded(body_path, MAX_ENTRY)
        if raw is None or body is None:
            return None
        try:
            meta = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        if not isinstance(meta, dict) or meta.get("sha256") != hashlib.sha256(body).hexdigest():
            return None
        return CachedPage(body, str(meta.get("content_type", "")), str(meta.get("url", url)),
                          _text_or_none(meta.get("etag")), _text_or_none(meta.get("last_modified")))

    def put_page(self, url: str, page: CachedPage) -> None:
        meta_path, body_path = self._page_paths(url)
        try:
            _write_entry(body_path, page.body)
            meta = {"url": redact_url(page.url), "content_type": page.content_type, "etag": page.etag,
                    "last_modified": page.last_modified,
                    "sha256": hashlib.sha256(page.body).hexdigest()}
            _write_entry(meta_path, json.dumps(meta).encode())
        except OSError:
            pass  # a cache that cannot be written only costs a refetch

    def _blob_path(self, kind: str, key: str) -> Path:
        digest = _key(key)
        return self.root / kind / digest[:2] / digest

    def get_blob(self, kind: str, key: str, limit: int | None = None) -> bytes | None:
        return _read_bounded(self._blob_path(kind, key), MAX_ENTRY if limit is None else limit)

    def put_blob(self, kind: str, key: str, data: bytes) -> None:
        with contextlib.suppress(OSError):  # a cache that cannot be written only costs a refetch
            _write_entry(self._blob_path(kind, key), data)
