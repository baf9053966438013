"""Which package index serves which package. Indexes are never merged: each name has one home."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from packaging.utils import canonicalize_name

from neuronctl.errors import InputError
from neuronctl.jsonfields import Fields


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

    def with_index(self, name: str, url: str) -> IndexRouting:
        if not name or not all(c.isalnum() or c in "-_" for c in name):
            raise InputError(f"invalid index name {name!r}: use letters, digits, '-' and '_'")
        check_index_url(url, f"index {name}")
        return replace(self, indexes={**self.indexes, name: url.rstrip("/")})

    def with_route(self, package: str, index: str) -> IndexRouting:
        if index not in self.indexes:
            raise InputError(f"route {package}={index}: unknown index {index!r} "
                             f"(known: {', '.join(self.indexes)})")
        return replace(self, routes={**self.routes, str(canonicalize_name(package)): index})

    def to_json(self) -> dict[str, object]:
        return {"default": self.default,
                "indexes": {k: redact_url(v) for k, v in self.indexes.items()},
                "routes": dict(sorted(self.routes.items()))}


def check_index_url(url: str, where: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https", "file") or (parts.scheme != "file" and not parts.netloc):
        raise InputError(f"{where}: {redact_url(url)!r} is not an http(s):// or file:// URL")


def redact_url(url: str) -> str:
    """Drop credentials from a URL so that it can be printed, logged or locked."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def file_url_path(url: str) -> Path | None:
    """The local path of a file:// URL (None for other schemes); POSIX hosts only, like Neuron."""
    parts = urlsplit(url)
    if parts.scheme != "file":
        return None
    return Path(unquote(parts.path))


def parse_assignment(text: str, flag: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise InputError(f"{flag} {text!r}: expected NAME=VALUE")
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
        indexes[name] = entry.req_text("url")
    routes_f = top.obj("routes")
    assert routes_f is not None
    routes = {str(canonicalize_name(pkg)): index
              for index in routes_f for pkg in routes_f.texts(index)}
    return IndexRouting(indexes, routes, top.req_text("default"))
