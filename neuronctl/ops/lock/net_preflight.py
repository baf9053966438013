"""The network preflight as lock, install and download call it: which hosts each needs (the
indexes the routing sends packages to; the hosts a lock's file URLs are on) and how the user
routes around each one (resolvers/preflight.py does the checking)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from neuronctl.ops.index_routing import env_var_for
from neuronctl.ops.lock.request import StackRequest
from neuronctl.resolvers.http_fetch import Fetcher
from neuronctl.resolvers.preflight import Host, require_reachable
from neuronctl.resolvers.stack_roots import root_requirements
from neuronctl.routing import DEFAULT_PORTS, IndexRouting, redact_url, url_origin


def index_hosts(routing: IndexRouting, roots: Iterable[str]) -> list[Host]:
    """The indexes a resolution of `roots` goes to, by each root /simple/ page: the default
    (most dependencies), the roots' own and the family patterns' (a CUDA torch's nvidia-*);
    an index only named in routes for packages nobody asks for (a fallback lock's Neuron
    index) is not needed, and not tried. A dependency routed elsewhere still fails as before."""
    return [Host(f"index '{name}'", f"{str(routing.indexes[name]).rstrip('/')}/",
                 f"to use a mirror: --index {name}=URL, {env_var_for(name)}=URL or config "
                 f"`indexes`")
            for name in used_indexes(routing, roots)]


def used_indexes(routing: IndexRouting, roots: Iterable[str]) -> list[str]:
    """The names of the indexes a resolution of `roots` reads (see index_hosts), in order."""
    used = dict.fromkeys([routing.default, *(routing.index_for(n) for n in roots),
                          *routing.patterns.values()])
    return [name for name in used if name in routing.indexes]


LOCK_FILES = ("the lock's files are there: lock against a mirror (neuronctl lock --index "
              "NAME=URL), or run this where the host is reachable")


def file_hosts(urls: Iterable[str], override: str = LOCK_FILES) -> list[Host]:
    """The hosts a lock's files are on (each origin once, by its root)."""
    origins = dict.fromkeys(o for o in (url_origin(u) for u in urls) if o is not None)
    hosts = []
    for scheme, host, port in origins:
        shown = f"[{host}]" if ":" in host else host
        root = f"{scheme}://{shown}" + ("" if DEFAULT_PORTS.get(scheme) == port else f":{port}") + "/"
        hosts.append(Host(f"host {host}", root, override))
    return hosts


def preflight_stack(stack: StackRequest, fetcher: Fetcher) -> None:
    """Before a resolution: its inputs (a bad --with is exit 2, not a network error), then
    every index it can reach for, at once (offline: every root page the cache lacks, at once)."""
    roots = [r.name for r in root_requirements(stack.plan, stack.requirements)]
    if fetcher.offline:
        offline_gaps(stack.routing, roots, fetcher)
    preflight(index_hosts(stack.routing, roots), fetcher)


def offline_gaps(routing: IndexRouting, roots: Sequence[str], fetcher: Fetcher) -> None:
    """--offline: the stack's own packages whose index page the cache lacks, every one of them
    and every index the resolution reads named in one error (not one index a try). A local
    index (file://) needs no cache."""
    from neuronctl.errors import FaultError
    from neuronctl.resolvers.simple_index import project_url

    missing: dict[str, list[str]] = {}
    for name in roots:
        index = routing.index_for(name)
        url = str(routing.indexes[index])
        if url.startswith("file:"):
            continue
        if fetcher.cache is None or fetcher.cache.get_page(project_url(url, name)) is None:
            missing.setdefault(index, []).append(name)
    if not missing:
        return
    gaps = "; ".join(f"{', '.join(names)} on index '{index}' ({redact_url(str(routing.indexes[index]))})"
                     for index, names in missing.items())
    others = [f"index '{i}' ({redact_url(str(routing.indexes[i]).rstrip('/') + '/')})"
              for i in used_indexes(routing, roots)
              if i not in missing and not str(routing.indexes[i]).startswith("file:")]
    reads = f"; the resolution also reads {', '.join(others)}" if others else ""
    raise FaultError(f"--offline: no cached index page for {gaps}{reads}",
                     hint="run it once online to fill the cache, or point each index at a mirror "
                          "or a local directory: --index NAME=URL (file:///DIR too)")


def preflight(hosts: list[Host], fetcher: Fetcher) -> None:
    """All of them at once through the command's own session (its proxies and credentials);
    nothing to do offline (the cache and file:// only)."""
    if hosts and not fetcher.offline:
        require_reachable(hosts, fetcher.session, timeout=min(fetcher.timeout, 5.0))
