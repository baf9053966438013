"""Index routing as the user set it, in layers: bundled data, the user's config, the project's,
NEURONCTL_INDEX_<NAME>, a lock's recorded indexes, then --index / --route flags (each index and
each route on its own; the environment over the config is the one rule of neuronctl.settings).

A name that matches no index is an error, never a new index nobody uses: `--index neurn=URL` or
`NEURONCTL_INDEX_PYTORCHCPU` would otherwise be ignored while the run went to the internet. A new
index is accepted when a route (config or flag) sends a package to it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from msgspec import Struct, field
from msgspec.structs import replace

from neuronctl.errors import InputError
from neuronctl.routing import (
    IndexRouting,
    load_default_routing,
    parse_assignment,
    plain_http_elsewhere,
    redact_url,
    unknown_index,
    url_origin,
)

if TYPE_CHECKING:
    from neuronctl.settings import Resolver

INDEX_ENV_PREFIX = "NEURONCTL_INDEX_"


class _IndexSetting(Struct, frozen=True):
    """One index the user named, and where (an env var, the config, --index) for its errors."""

    name: str
    url: str
    where: str
    from_flag: bool = False


def env_var_for(index: str) -> str:
    return INDEX_ENV_PREFIX + index.upper().replace("-", "_")


def _env_settings(env: Mapping[str, str], known: Sequence[str]) -> list[_IndexSetting]:
    out = []
    for var, url in sorted(env.items()):
        if var.startswith(INDEX_ENV_PREFIX) and url:
            wanted = var[len(INDEX_ENV_PREFIX):].lower().replace("_", "-")
            name = next((n for n in known if n.replace("_", "-") == wanted), wanted)
            out.append(_IndexSetting(name, url, var))
    return out


class IndexSources(Struct, frozen=True):
    """The user's index and route settings, each layer apart: the config's tables (and the file
    they are in), the environment, and the flags. Resolved by neuronctl.settings' rule, env over
    config, within the layering route_indexes applies."""

    config_indexes: Mapping[str, str] = field(default_factory=dict)
    config_routes: Mapping[str, str] = field(default_factory=dict)
    config_source: str = "config"
    environ: Mapping[str, str] | None = None
    """None: this process's environment."""
    index_flags: Sequence[str] = ()
    route_flags: Sequence[str] = ()
    config_where: Mapping[str, str] = field(default_factory=dict)
    """An index's or route's config file where the tables merge two (the user's and the
    project's: "indexes: NAME" and "routes: PKG" keys), else config_source."""
    project_indexes: frozenset[str] = frozenset()
    """The indexes a project's pyproject.toml names (held to _project_index's rule)."""


def _index_settings(sources: IndexSources, env: Mapping[str, str],
                    known: Sequence[str]) -> list[_IndexSetting]:
    files = sources.config_where
    settings = [_IndexSetting(name, url, f"{files.get(f'indexes: {name}', sources.config_source)}: "
                                         f"indexes: {name}")
                for name, url in sources.config_indexes.items() if url]
    project = [s for s in settings if s.name in sources.project_indexes]
    settings += _env_settings(env, known)
    for text in sources.index_flags:
        name, url = parse_assignment(text, "--index")
        settings.append(_IndexSetting(name, url, f"--index {name}", from_flag=True))
    for setting in project:  # one the environment or a flag replaces is not used
        if [s.name for s in settings].count(setting.name) == 1:
            _project_index(setting)
    return settings


def _project_index(setting: _IndexSetting) -> None:
    """A project's pyproject.toml may name its indexes (a team's mirror), but not one over plain
    http off this machine: anyone on the way could change what it serves, and ~/.netrc's
    credentials for that host would go out in clear. The user's own config, the environment and
    --index may (their own network)."""
    if plain_http_elsewhere(setting.url):
        raise InputError(f"{setting.where}: {redact_url(setting.url)!r} is plain http, which a "
                         "project's file may not choose: use https, or set it in your own config "
                         f"or {env_var_for(setting.name)}")


def _route_settings(sources: IndexSources) -> list[tuple[str, str, str]]:
    files = sources.config_where
    routes = [(package, index,
               f"{files.get(f'routes: {package}', sources.config_source)}: routes: {package}")
              for package, index in sources.config_routes.items()]
    for text in sources.route_flags:
        package, index = parse_assignment(text, "--route")
        routes.append((package, index, f"--route {package}={index}"))
    return routes


def _unknown_error(setting: _IndexSetting, known: Sequence[str]) -> InputError:
    if setting.where.startswith(INDEX_ENV_PREFIX):
        import difflib

        names = sorted(env_var_for(n) for n in known)
        close = difflib.get_close_matches(setting.where, names, n=1)
        return InputError(f"{setting.where}: no index is named {setting.name!r} (known: "
                          f"{', '.join(names)})" + (f"; did you mean {close[0]!r}?" if close else ""),
                          hint=f"a new index also needs a package routed to it: config `routes` "
                               f"or --route PKG={setting.name}")
    return unknown_index(setting.name, known, setting.where)


def route_indexes(sources: IndexSources, recorded: Mapping[str, str] | None = None,
                  base: IndexRouting | None = None) -> IndexRouting:
    """Bundled routing (or `base`: a fallback lock's), then config, then NEURONCTL_INDEX_<NAME>
    (the environment over the config, as for every setting), then the indexes a lock recorded,
    then flags (last one wins)."""
    routing = base or load_default_routing()
    recorded = dict(recorded or {})
    known = list(dict.fromkeys([*routing.indexes, *recorded]))
    env = os.environ if sources.environ is None else sources.environ
    settings = _index_settings(sources, env, known)
    routes = _route_settings(sources)
    routed = {index for _pkg, index, _where in routes}
    for setting in settings:
        if setting.name not in known and setting.name not in routed:
            raise _unknown_error(setting, known)
    for setting in [s for s in settings if not s.from_flag]:
        routing = routing.with_index(setting.name, setting.url, setting.where)
    yours = frozenset(origin for s in settings if s.name not in sources.project_indexes
                      if (origin := url_origin(s.url)) is not None)
    routing = replace(routing, yours=routing.yours | yours)
    for name, url in recorded.items():
        routing.check_lock_url(url, f"the lock's index {name}")
        routing = routing.with_index(name, url, f"the lock's index {name}")
    for setting in [s for s in settings if s.from_flag]:
        routing = routing.with_index(setting.name, setting.url, setting.where)
    for package, index, where in routes:
        if index not in routing.indexes:
            raise unknown_index(index, routing.indexes, where)
        routing = routing.with_route(package, index)
    return routing


def index_sources(resolver: Resolver, index_flags: Sequence[str] = (),
                  route_flags: Sequence[str] = ()) -> IndexSources:
    """The index and route layers of this invocation (the config's tables, the environment)."""
    tables: dict[str, dict[str, str]] = {"indexes": {}, "routes": {}}
    where: dict[str, str] = {}
    project: set[str] = set()
    source = "config"
    for key, table in tables.items():  # the user's entries, then the project's over them
        for entries, source, is_project in resolver.config_tables(key):
            for name, value in entries.items():
                if not value:  # an empty entry names nothing: it replaces none of the user's
                    continue
                if is_project and table.get(name, value) != value:  # said: it moves your choice
                    resolver.note(f"{source}: {key}: {name} = {redact_url(str(value))!r} replaces "
                                  f"{redact_url(table[name])!r} from {where[f'{key}: {name}']}")
                table[name] = value
                where[f"{key}: {name}"] = source
                if key == "indexes":
                    (project.add if is_project else project.discard)(name)
    return IndexSources(tables["indexes"], tables["routes"], source, resolver.environ,
                        index_flags, route_flags, where, frozenset(project))

