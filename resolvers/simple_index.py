"""A client for the simple repository API: PEP 691 JSON with content negotiation, PEP 503 HTML
fallback, `file://` indexes and find-links directories.

Parsing is mousebender's (it implements PEPs 503/592/629/658/691/700/714); this module adds the
page-relative URL resolution the PyTorch index needs (root-relative links), fetching with
retries, and errors that say which index and which project, credentials stripped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from mousebender import simple
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)

from neuronctl.errors import InputError
from neuronctl.resolvers.http_fetch import Fetcher
from neuronctl.routing import file_url_path, redact_url

ACCEPT = simple.ACCEPT_SUPPORTED


@dataclass(frozen=True)
class DistFile:
    filename: str
    url: str
    hashes: Mapping[str, str] = field(default_factory=dict)
    requires_python: str | None = None
    yanked: bool | str = False
    size: int | None = None
    upload_time: str | None = None
    core_metadata: bool | Mapping[str, str] = False

    @property
    def is_wheel(self) -> bool:
        return self.filename.endswith(".whl")


def project_url(index_url: str, project: str) -> str:
    return simple.create_project_url(index_url, project)


def parse_project_page(body: str, content_type: str, page_url: str, project: str) -> list[DistFile]:
    """PEP 691 JSON or PEP 503 HTML -> files with absolute URLs. Bad responses are InputError."""
    where = f"index response from {redact_url(page_url)}"
    mime = content_type.split(";", 1)[0].strip().lower()
    try:
        details: Any = simple.parse_project_details(body, mime, project)
    except simple.UnsupportedMIMEType:
        raise InputError(f"{where}: unsupported content type {content_type!r}") from None
    except simple.UnsupportedAPIVersion as exc:
        raise InputError(f"{where}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{where}: malformed page: {exc}") from None
    if not isinstance(details, dict) or not isinstance(details.get("files"), list):
        raise InputError(f"{where}: malformed page: no 'files' list")
    files = []
    for i, raw in enumerate(details["files"]):
        if not isinstance(raw, dict) or not isinstance(raw.get("filename"), str) \
                or not isinstance(raw.get("url"), str):
            raise InputError(f"{where}: files[{i}]: expected an object with filename and url")
        hashes = raw.get("hashes") or {}
        if not isinstance(hashes, dict):
            raise InputError(f"{where}: files[{i}].hashes: expected an object")
        metadata = raw.get("core-metadata", raw.get("dist-info-metadata", False))
        size = raw.get("size")
        if size is not None and (not isinstance(size, int) or isinstance(size, bool)):
            raise InputError(f"{where}: files[{i}].size: expected an integer")
        files.append(DistFile(
            filename=raw["filename"],
            url=urljoin(page_url, raw["url"]),
            hashes={str(k).lower(): str(v) for k, v in hashes.items()},
            requires_python=raw.get("requires-python") or None,
            yanked=raw.get("yanked", False) or False,
            size=size,
            upload_time=raw.get("upload-time"),
            core_metadata=metadata if isinstance(metadata, dict | bool) else False,
        ))
    return files


def _project_of(filename: str) -> str | None:
    try:
        if filename.endswith(".whl"):
            return str(parse_wheel_filename(filename)[0])
        return str(parse_sdist_filename(filename)[0])
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None


def find_links_files(directory: Path, project: str) -> list[DistFile]:
    """A flat directory of distributions (pip's --find-links), as an air-gapped mirror."""
    want = canonicalize_name(project)
    out = []
    for path in sorted(directory.iterdir()):
        if path.is_file() and _project_of(path.name) == want:
            out.append(DistFile(path.name, path.resolve().as_uri(), size=path.stat().st_size))
    return out


class IndexClient:
    """Fetch project pages through a Fetcher (retries, HTTP cache, offline mode)."""

    def __init__(self, fetcher: Fetcher | None = None) -> None:
        self.fetcher = fetcher or Fetcher()

    def project_files(self, index_url: str, project: str) -> list[DistFile] | None:
        """The files an index offers for a project, or None when the index has no such project."""
        if index_url.startswith("file:"):
            return self._file_index(index_url, project)
        url = project_url(index_url, project)
        page = self.fetcher.get_page(url, ACCEPT)
        if page is None:
            return None
        try:
            body = page.body.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"index response from {redact_url(url)}: not UTF-8 text") from None
        return parse_project_page(body, page.content_type, page.url, project)

    def _file_index(self, index_url: str, project: str) -> list[DistFile] | None:
        root = file_url_path(index_url)
        assert root is not None
        if not root.is_dir():
            raise InputError(f"index {index_url}: no such directory")
        page_dir = root / str(canonicalize_name(project))
        page = page_dir / "index.html"
        if page.is_file():
            return parse_project_page(page.read_text(encoding="utf-8"), "text/html",
                                      page_dir.as_uri() + "/", project)
        if page_dir.is_dir():
            return None
        files = find_links_files(root, project)
        return files or None
