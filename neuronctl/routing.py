"""Which package index serves which package. Indexes are never merged: each name has one home."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from packaging.utils import canonicalize_name

from neuronctl.errors import InputError
from neuronctl.jsonfields import Fields
from neuronctl.redact import MASK, redact

Origin = tuple[str, str, int]
"""(scheme, host, port) of a URL: the scope of an index's credentials."""
DEFAULT_PORTS = {"http": 80, "https": 443}


class IndexURL(str):
    """An index URL as it may be shown anywhere: its text is the URL without credentials, so
    every use as a str (messages, locks, urljoin, JSON) is safe. Credentials given in the URL ride
    along privately; only the HTTP layer asks for them (`IndexRouting.credentials`), and applies
    them to requests to this origin alone."""

    _credentials: tuple[str, str] | None

    def __new__(cls, url: str) -> IndexURL:
        if isinstance(url, IndexURL):
            return url
        public, credentials = split_credentials(url)
        made = super().__new__(cls, public.rstrip("/"))
        made._credentials = credentials
        return made

    def __repr__(self) -> str:
        return f"IndexURL({str(self)!r})"

    def __reduce__(self) -> tuple[type[str], tuple[str]]:
        return (str, (str(self),))  # a copy or a pickle never carries the credentials

    def origin_credentials(self) -> tuple[Origin, tuple[str, str]] | None:
        if self._credentials is None:
            return None
        origin = url_origin(self)
        return None if origin is None else (origin, self._credentials)


def url_origin(url: str) -> Origin | None:
    """(scheme, host, port) of an http(s) URL; None for other schemes and unparsable URLs."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """The URL without its user:password@ part, and that part (unquoted) if there was one."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url), None
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url, None
    user, _, password = userinfo.partition(":")
    public = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return public, (unquote(user), unquote(password))


def _close(name: str, known: Iterable[str]) -> str:
    import difflib

    match = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {match[0]!r}?" if match else ""


def unknown_index(name: str, known: Iterable[str], where: str) -> InputError:
    known = sorted(known)
    return InputError(f"{where}: unknown index {name!r} (known: {', '.join(known)}){_close(name, known)}",
                      hint=f"a new index also needs a package routed to it: --route PKG={name} "
                           "or config `routes`")


@dataclass(frozen=True)
class IndexRouting:
    indexes: Mapping[str, str]
    routes: Mapping[str, str] = field(default_factory=dict)
    """Canonical package name -> index name."""
    default: str = "pypi"

    def index_for(self, package: str) -> str:
        return self.routes.get(str(canonicalize_name(package)), self.default)

    def url_for(self, package: str) -> str:
        return self.indexes[self.index_for(package)]

    def with_index(self, name: str, url: str, where: str | None = None) -> IndexRouting:
        where = where or f"--index {name}"
        if not name or not all(c.isalnum() or c in "-_" for c in name):
            raise InputError(f"{where}: invalid index name {name!r}: use letters, digits, '-' and '_'")
        check_index_url(url, where)
        return replace(self, indexes={**self.indexes, name: IndexURL(url)})

    def with_route(self, package: str, index: str) -> IndexRouting:
        if index not in self.indexes:
            raise unknown_index(index, self.indexes, f"route {package}={index}")
        return replace(self, routes={**self.routes, str(canonicalize_name(package)): index})

    def credentials(self) -> dict[Origin, tuple[str, str]]:
        """Origin -> (user, password) for the indexes whose URLs carried credentials: for the
        HTTP layer only, which sends them to that origin and nowhere else."""
        out = {}
        for url in self.indexes.values():
            found = url.origin_credentials() if isinstance(url, IndexURL) else None
            if found is not None:
                out[found[0]] = found[1]
        return out

    def to_json(self) -> dict[str, object]:
        return {"default": self.default,
                "indexes": {k: redact_url(v) for k, v in self.indexes.items()},
                "routes": dict(sorted(self.routes.items()))}


def check_index_url(url: str, where: str) -> None:
    bad = InputError(f"{where}: {redact_url(url)!r} is not an http(s):// or file:// URL")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        raise bad from None
    if parts.scheme not in ("http", "https", "file") or (parts.scheme != "file" and not parts.hostname):
        raise bad


def redact_url(url: str) -> str:
    """Drop credentials from a URL so that it can be printed, logged or locked; never raises.
    Text that is not a URL with a host loses whatever precedes an '@' (it may be user:password)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    if "@" in parts.netloc:
        host = parts.netloc.rpartition("@")[2]
        return redact(urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)))
    if not parts.netloc and "@" in url:
        before, _, after = url.rpartition("@")
        scheme = f"{parts.scheme}:" if parts.scheme and before.startswith(f"{parts.scheme}:") else ""
        return redact(f"{scheme}{MASK}@{after}")
    return redact(url)


def file_url_path(url: str) -> Path | None:
    """The local path of a file:// URL (None for other schemes); POSIX hosts only, like Neuron."""
    parts = urlsplit(url)
    if parts.scheme != "file":
        return None
    return Path(unquote(parts.path))


def parse_assignment(text: str, flag: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise InputError(f"{flag} {redact_url(text)!r}: expected NAME=VALUE")
    return name.strip(), value.strip()


@functools.cache
def load_default_routing() -> IndexRouting:
    """Parsed once per process: several doctor checks build fixes from it."""
    data = json.loads(resources.files("neuronctl.data").joinpath("routing.json").read_text("utf-8"))
    top = Fields(data, "bundled routing")
    idx = top.obj("indexes")
    assert idx is not None
    indexes = {}
    for name in idx:
        entry = idx.obj(name)
        assert entry is not None
        indexes[name] = IndexURL(entry.req_text("url"))
    routes_f = top.obj("routes")
    assert routes_f is not None
    routes = {str(canonicalize_name(pkg)): index
              for index in routes_f for pkg in routes_f.texts(index)}
    return IndexRouting(indexes, routes, top.req_text("default"))
