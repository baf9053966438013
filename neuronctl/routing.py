"""Which package index serves which package. Indexes are never merged: each name has one home."""

from __future__ import annotations

import fnmatch
import functools
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from msgspec import Struct, field
from msgspec.structs import replace
from packaging.utils import canonicalize_name

from neuronctl.data import bundled_text
from neuronctl.devices import FALLBACK_DEVICES
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


class IndexRouting(Struct, frozen=True):
    """Which index each package comes from: named indexes, exact routes, patterns, a default."""

    indexes: Mapping[str, str]
    routes: Mapping[str, str] = field(default_factory=dict)
    """Canonical package name -> index name."""
    default: str = "pypi"
    yours: frozenset[Origin] = frozenset()
    """The origins of the indexes the user set (their config, NEURONCTL_INDEX_*, --index): where
    a lock may point over plain http off this machine (check_lock_url)."""
    patterns: Mapping[str, str] = field(default_factory=dict)
    """fnmatch pattern on the canonical name (e.g. "nvidia-*") -> index name; an exact route
    wins over a pattern. A family whose names keep growing (NVIDIA's CUDA wheels) needs one."""

    def index_for(self, package: str) -> str:
        name = str(canonicalize_name(package))
        if name in self.routes:
            return self.routes[name]
        return next((index for pattern, index in self.patterns.items()
                     if fnmatch.fnmatchcase(name, pattern)), self.default)

    def url_for(self, package: str) -> str:
        return self.indexes[self.index_for(package)]

    def with_index(self, name: str, url: str, where: str | None = None) -> IndexRouting:
        where = where or f"--index {name}"
        # ASCII only: a name with a Greek omicron would print as the Neuron index's own
        if not name or not name.isascii() or not all(c.isalnum() or c in "-_" for c in name):
            raise InputError(f"{where}: invalid index name {name!r}: use letters, digits, '-' and '_'")
        check_index_url(url, where)
        return replace(self, indexes={**self.indexes, name: IndexURL(url)})

    def with_route(self, package: str, index: str) -> IndexRouting:
        if index not in self.indexes:
            raise unknown_index(index, self.indexes, f"route {package}={index}")
        return replace(self, routes={**self.routes, str(canonicalize_name(package)): index})

    def check_lock_url(self, url: str, where: str) -> None:
        """A lock's URL (a file, a recorded index): plain http off this machine only to an
        origin the user set an index on. A lock is a checkout's file: it says what to install,
        not whom to trust, and pip, uv and neuronctl send ~/.netrc's password for the host."""
        if plain_http_elsewhere(url) and url_origin(url) not in self.yours:
            raise InputError(f"{where}: {redact_url(url)[:120]!r} is plain http off this machine, "
                             "which a lock may not choose: set that index in your own config, "
                             "NEURONCTL_INDEX_<NAME> or --index to use it")

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
        out: dict[str, object] = {"default": self.default,
                                   "indexes": {k: redact_url(v) for k, v in self.indexes.items()},
                                   "routes": dict(sorted(self.routes.items()))}
        if self.patterns:
            out["patterns"] = dict(sorted(self.patterns.items()))
        return out


def check_index_url(url: str, where: str) -> None:
    bad = InputError(f"{where}: {redact_url(url)!r} is not an http(s):// or file:// URL")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        raise bad from None
    if parts.scheme not in ("http", "https", "file") or (parts.scheme != "file" and not parts.hostname):
        raise bad
    if "\\" in url:  # Python reads "http://evil\\@127.0.0.1/" as loopback; uv (WHATWG) as evil
        raise InputError(f"{where}: {redact_url(url)!r} holds a backslash, which URL parsers read "
                         "differently; write the URL with '/' only")


def is_loopback_host(host: str) -> bool:
    """localhost, or 127.0.0.0/8 or ::1 written as an address ("127.evil.example" is a name)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def plain_http_elsewhere(url: str) -> bool:
    """Whether `url` is plain http off this machine: what comes over it can be changed on the way,
    and the credentials ~/.netrc holds for its host would go out in clear (the one rule for a
    project's index, a lock's URLs, a redirect and a page's link)."""
    try:
        parts = urlsplit(url)
        return parts.scheme.lower() == "http" and not is_loopback_host(parts.hostname or "")
    except ValueError:
        return False


def downgrades(source: str, target: str) -> bool:
    """Whether going from `source` to `target` (a redirect, a page's link) leaves https for plain
    http off this machine."""
    return source.lower().startswith("https:") and plain_http_elsewhere(target)


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
    data = json.loads(bundled_text("routing.json"))
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


# Fallback locks (a CUDA or CPU torch instead of the Neuron stack)

_CUDA_VARIANT = re.compile(r"^cu(\d{2,4})$")


class FallbackRouting(Struct, frozen=True):
    """What the bundled data says about one fallback device's lock."""

    device: str
    index: str
    """The index its torch family comes from (pytorch-cuda, pytorch-cpu)."""
    packages: tuple[str, ...]
    """Names (or fnmatch patterns: nvidia-*) routed to that index in this lock only."""
    url_template: str | None = None
    """The index URL with {variant} in it (CUDA: one index per variant)."""
    min_driver: Mapping[str, str] = field(default_factory=dict)
    """CUDA variant -> the oldest Linux NVIDIA driver that runs it."""
    torch_variants: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """torch line (2.10) -> the CUDA variants PyTorch publishes for it."""

    def variants_for(self, torch: str) -> tuple[str, ...]:
        """The variants of a torch line; a line newer than the table gets the newest line's
        (PyTorch keeps its CUDA variants across neighbouring releases)."""
        line = ".".join(torch.split("+", maxsplit=1)[0].split(".")[:2])
        if line in self.torch_variants:
            return self.torch_variants[line]
        known = sorted(self.torch_variants, key=_line_key)
        newer = [k for k in known if _line_key(k) <= _line_key(line)]
        return self.torch_variants[(newer or known)[-1]] if known else ()

    def default_variant(self, torch: str) -> str | None:
        """The newest CUDA variant published for this torch line."""
        variants = self.variants_for(torch)
        return max(variants, key=cuda_variant_number) if variants else None

    def index_url(self, variant: str | None) -> str | None:
        if self.url_template is None or variant is None:
            return None
        return self.url_template.format(variant=variant)


def _line_key(line: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in line.split("."))


def cuda_variant_number(variant: str) -> int:
    """cu130 -> 130; InputError for anything that is not a CUDA variant name."""
    m = _CUDA_VARIANT.match(variant)
    if not m:
        raise InputError(f"CUDA variant {variant!r}: expected a name such as cu126, cu128 or cu130")
    return int(m.group(1))


@functools.cache
def load_fallback_routing() -> dict[str, FallbackRouting]:
    """device -> its bundled fallback routing (parsed once per process)."""
    data = json.loads(bundled_text("routing.json"))
    section = Fields(data, "bundled routing").obj("fallbacks")
    assert section is not None
    out: dict[str, FallbackRouting] = {}
    for device in FALLBACK_DEVICES:
        entry = section.obj(device)
        assert entry is not None
        drivers = entry.obj("min_driver", required=False)
        lines = entry.obj("torch_variants", required=False)
        out[device] = FallbackRouting(
            device, entry.req_text("index"), tuple(entry.texts("packages")),
            entry.text("url_template", required=False),
            {k: drivers.req_text(k) for k in drivers} if drivers else {},
            {k: tuple(lines.texts(k)) for k in lines} if lines else {})
    return out


def fallback_only_indexes() -> frozenset[str]:
    """Indexes only fallback locks use: a Neuron lock neither routes to them nor records them."""
    used = {fb.index for fb in load_fallback_routing().values()}
    return frozenset(used - set(load_default_routing().routes.values()) - {load_default_routing().default})


def fallback_base_routing(device: str, variant: str | None) -> IndexRouting:
    """The bundled routing for a fallback lock: the device's packages (and patterns) sent to its
    index, and for CUDA that index at the variant's URL."""
    fb = load_fallback_routing()[device]
    routing = load_default_routing()
    url = fb.index_url(variant)
    if url is not None:
        routing = routing.with_index(fb.index, url, f"bundled {fb.index} index for {variant}")
    routes = dict(routing.routes)
    patterns = dict(routing.patterns)
    for name in fb.packages:
        if any(c in name for c in "*?["):
            patterns[name] = fb.index
        else:
            routes[str(canonicalize_name(name))] = fb.index
    return replace(routing, routes=routes, patterns=patterns)
