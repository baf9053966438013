"""Index routing as the user set it: bundled data, config, NEURONCTL_INDEX_<NAME>, a lock's
recorded indexes, then --index / --route flags."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from neuronctl.cli.config import Config
from neuronctl.errors import InputError
from neuronctl.routing import IndexRouting, load_default_routing, parse_assignment

INDEX_ENV_PREFIX = "NEURONCTL_INDEX_"


def build_routing(config: Config, index_flags: Sequence[str], route_flags: Sequence[str],
                  environ: Mapping[str, str] | None = None,
                  recorded: Mapping[str, str] | None = None) -> IndexRouting:
    """Bundled routing, then config, then NEURONCTL_INDEX_<NAME>, then the indexes a lock
    recorded, then flags (last one wins)."""
    routing = load_default_routing()
    where = config.source or "config"
    for name, url in (config.get("indexes") or {}).items():
        routing = routing.with_index(name, url) if url else routing
    env = os.environ if environ is None else environ
    for var, url in sorted(env.items()):
        if var.startswith(INDEX_ENV_PREFIX) and url:
            wanted = var[len(INDEX_ENV_PREFIX):].lower().replace("_", "-")
            name = next((n for n in routing.indexes if n.replace("_", "-") == wanted), wanted)
            routing = routing.with_index(name, url)
    for name, url in (recorded or {}).items():
        routing = routing.with_index(name, url)
    for text in index_flags:
        routing = routing.with_index(*parse_assignment(text, "--index"))
    for package, index in (config.get("routes") or {}).items():
        try:
            routing = routing.with_route(package, index)
        except InputError as exc:
            raise InputError(f"{where}: routes: {exc}") from None
    for text in route_flags:
        routing = routing.with_route(*parse_assignment(text, "--route"))
    return routing
