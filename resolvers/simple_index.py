"""A client for the simple repository API: PEP 691 JSON with content negotiation, PEP 503 HTML
fallback, `file://` indexes and find-links directories.

HTML parsing is mousebender's (it implements PEPs 503/592/629/658/700/714); this module adds the
PEP 691 JSON checks (the api-version, every field's type), the page-relative URL resolution the
PyTorch index needs (root-relative links), fetching with retries, and errors that say which index
and which project, credentials stripped.

Every file a page lists is checked where it enters: its hashes (known algorithm, exact hex
length), its file name (one plain path component), its link (http(s), or file: only from a
file: index) and the type of every field. A file that fails is kept as *unusable*, with the
reason, so that resolution reports it among the files turned away and never fetches it.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from mousebender import simple
from msgspec import Struct, field
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)

from neuronctl.errors import InputError
from neuronctl.resolvers.http_fetch import Fetcher
from neuronctl.routing import downgrades, file_url_path, redact_url
from neuronctl.safety import checked_hashes, checked_url, contained, safe_filename

ACCEPT = simple.ACCEPT_SUPPORTED
API_MAJOR = 1
API_MINOR = 4
"""The newest simple API version this client knows (PEP 700's 1.1 fields; 1.2-1.4 add none it uses)."""
MAX_FILE_PAGE_BYTES = 128 << 20
"""An index.html in a file:// index: far more than thousands of files need."""
MAX_SIZE = 1 << 63
"""A size a lock (TOML's 64-bit integers) and every installer can hold."""
_API_VERSION = re.compile(r"(\d{1,6})\.(\d{1,6})")


class DistFile(Struct, frozen=True):
    """One file an index lists (PEP 691/503), its fields checked where they entered."""

    filename: str
    url: str
    hashes: Mapping[str, str] = field(default_factory=dict)
    requires_python: str | None = None
    yanked: bool | str = False
    size: int | None = None
    upload_time: str | None = None
    core_metadata: bool | Mapping[str, str] = False
    unusable: str | None = None
    """Why this file may not be used (a bad hash, an unsafe name or link, a field of the wrong
    type). Such a file carries no hashes, and `filename` is then only fit for display."""

    @property
    def is_wheel(self) -> bool:
        return self.filename.endswith(".whl")


def project_url(index_url: str, project: str) -> str:
    return simple.create_project_url(index_url, project)


def parse_project_page(body: str, content_type: str, page_url: str, project: str) -> list[DistFile]:
    """PEP 691 JSON or PEP 503 HTML -> files with absolute URLs. A page that cannot be read is
    InputError naming its URL; a file entry with a bad field comes back unusable."""
    where = f"index response from {redact_url(page_url)}"
    details = _page_details(body, content_type, project, where)
    raw_files = details.get("files")
    if not isinstance(raw_files, list):
        raise InputError(f"{where}: malformed page: no 'files' list")
    local = page_url.startswith("file:")
    return [_dist_file(raw, f"{where}: files[{i}]", page_url, local) for i, raw in enumerate(raw_files)]


def _page_details(body: str, content_type: str, project: str, where: str) -> dict[str, Any]:
    mime = content_type.split(";", 1)[0].strip().lower()
    try:
        if mime == simple.ACCEPT_JSON_V1:
            details: Any = json.loads(body)
            if not isinstance(details, dict):
                raise InputError(f"{where}: malformed page: not a JSON object")
            _check_api_version(details.get("meta"), where)
        else:
            details = simple.parse_project_details(body, mime, project)
    except simple.UnsupportedMIMEType:
        raise InputError(f"{where}: unsupported content type {content_type[:80]!r}") from None
    except simple.UnsupportedAPIVersion as exc:
        raise InputError(f"{where}: {exc}; this client speaks version {API_MAJOR}.x") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise InputError(f"{where}: malformed page: nested too deeply") from None
    except (ValueError, KeyError, TypeError, AssertionError) as exc:
        raise InputError(f"{where}: malformed page: {str(exc)[:200]}") from None
    return dict(details)


def _check_api_version(meta: object, where: str) -> None:
    """PEP 629/691: refuse a major version this client does not speak; warn on a newer minor."""
    if meta is None or (isinstance(meta, dict) and "api-version" not in meta):
        return  # not sent by every server; pip and uv read such pages as 1.0
    version = meta.get("api-version") if isinstance(meta, dict) else None
    match = _API_VERSION.fullmatch(version) if isinstance(version, str) else None
    if match is None:
        raise InputError(f"{where}: malformed page: meta.api-version must be \"MAJOR.MINOR\"")
    major, minor = int(match[1]), int(match[2])
    if major != API_MAJOR:
        raise InputError(f"{where}: unsupported simple API version {match[0]}; this client speaks "
                         f"version {API_MAJOR}.x")
    if minor > API_MINOR:
        warnings.warn(simple.APIVersionWarning(match[0]), stacklevel=2)


def _dist_file(raw: object, where: str, page_url: str, local: bool) -> DistFile:
    if not isinstance(raw, dict) or not isinstance(raw.get("filename"), str) \
            or not isinstance(raw.get("url"), str):
        raise InputError(f"{where}: expected an object with filename and url")
    try:
        return _checked_file(raw, where, page_url, local)
    except InputError as exc:
        shown = raw["filename"]
        if not _is_safe(shown):
            shown = ascii(shown)[:100]
        return DistFile(shown, "", unusable=exc.message.removeprefix(f"{where}: "))


def _is_safe(name: str) -> bool:
    try:
        safe_filename(name, "")
    except InputError:
        return False
    return True


def _checked_file(raw: dict[str, Any], where: str, page_url: str, local: bool) -> DistFile:
    """The file entry with every field checked; InputError (the file is unusable) on any fault."""
    filename = safe_filename(raw["filename"], where)
    url = _checked_url(page_url, raw["url"], local, where)
    hashes = raw.get("hashes")
    metadata = raw.get("core-metadata", raw.get("dist-info-metadata", False))
    if metadata is None:
        metadata = False
    if isinstance(metadata, dict):
        metadata = checked_hashes(metadata, f"{where}: core-metadata")
    elif not isinstance(metadata, bool):
        raise InputError(f"{where}: core-metadata must be a boolean or a hashes object")
    return DistFile(
        filename=filename, url=url,
        hashes=checked_hashes({} if hashes is None else hashes, where),
        requires_python=_requires_python(raw.get("requires-python"), where),
        yanked=_typed(raw, "yanked", (bool, str), where) or False,
        size=_size(raw.get("size"), where),
        upload_time=_typed(raw, "upload-time", (str,), where),
        core_metadata=metadata,
    )


def _checked_url(page_url: str, link: str, local: bool, where: str) -> str:
    # The link as written: urljoin silently drops the tabs and newlines a link may hide.
    if any(ch.isspace() or not ch.isprintable() for ch in link):
        raise InputError(f"{where}: the link {ascii(link)[:120]} holds whitespace or control characters")
    try:
        url = urljoin(page_url, link)
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        raise InputError(f"{where}: unreadable link {link[:80]!r}") from None
    if downgrades(page_url, url):
        raise InputError(f"{where}: an https page links a plain http file off this machine "
                         f"({redact_url(url)[:120]}); refusing it")
    if scheme in ("http", "https") or (scheme == "file" and local):
        return checked_url(url, where)
    raise InputError(f"{where}: link to a {scheme or 'relative'}: URL; an index page may only link "
                     "to http(s) files (file: only from a file: index)")


def _typed(raw: Mapping[str, Any], key: str, types: tuple[type, ...], where: str) -> Any:
    value = raw.get(key)
    if value is not None and not isinstance(value, types):
        names = " or ".join("boolean" if t is bool else "string" for t in types)
        raise InputError(f"{where}: {key} must be a {names}, not {type(value).__name__}")
    return value


def _requires_python(value: object, where: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InputError(f"{where}: requires-python must be a string, not {type(value).__name__}")
    try:
        SpecifierSet(value)
    except InvalidSpecifier:
        raise InputError(f"{where}: invalid requires-python {value[:80]!r}") from None
    return value


def _size(value: object, where: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < MAX_SIZE:
        raise InputError(f"{where}: size must be a non-negative integer (below 2**63)")
    return value


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
            if _is_safe(path.name):
                out.append(DistFile(path.name, path.resolve().as_uri(), size=path.stat().st_size))
            else:
                out.append(DistFile(ascii(path.name)[:100], "", unusable="not a safe file name"))
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
            raise InputError(f"index {redact_url(index_url)}: no such directory")
        page_dir = contained(root, str(canonicalize_name(project)))
        page = page_dir / "index.html"
        if page.is_file():
            return parse_project_page(_read_page(page), "text/html", page_dir.as_uri() + "/", project)
        if page_dir.is_dir():
            return None
        files = find_links_files(root, project)
        return files or None


def _read_page(page: Path) -> str:
    try:
        with page.open("rb") as fh:
            data = fh.read(MAX_FILE_PAGE_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{page}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_PAGE_BYTES:
        raise InputError(f"{page}: larger than {MAX_FILE_PAGE_BYTES >> 20} MiB; not an index page")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{page}: not UTF-8 text") from None
