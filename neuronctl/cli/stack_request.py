"""What the user asks for (flags > environment > [tool.neuronctl] > bundled defaults), turned
into one validated request that lock and install share."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from neuronctl.cli.config import Config
from neuronctl.errors import InputError
from neuronctl.manifest import Manifest
from neuronctl.resolvers.lockfile import LockInputs
from neuronctl.resolvers.neuron_set import StackPlan, plan_stack
from neuronctl.resolvers.targets import Target, make_targets
from neuronctl.routing import IndexRouting, load_default_routing, parse_assignment

INDEX_ENV_PREFIX = "NEURONCTL_INDEX_"


@dataclass(frozen=True)
class StackRequest:
    plan: StackPlan
    requirements: tuple[str, ...]
    targets: tuple[Target, ...]
    routing: IndexRouting

    def inputs(self) -> LockInputs:
        fw = self.plan.framework
        return LockInputs(self.plan.release.version, fw.backend, fw.torch, fw.torch_neuronx,
                          self.plan.latest, self.requirements, self.targets, dict(self.plan.pins),
                          dict(self.routing.indexes))


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


def build_request(config: Config, manifest: Manifest, *, release: str | None, torch: str | None,
                  pythons: Sequence[str], platforms: Sequence[str], requirements: Sequence[str],
                  index_flags: Sequence[str], route_flags: Sequence[str], latest: bool) -> StackRequest:
    wanted = release or config.get("release")
    rel = manifest.get(wanted) if wanted else manifest.latest_with_backend("native") or manifest.latest
    plan = plan_stack(rel, torch or config.get("torch"), latest)
    fw = plan.framework
    py = list(pythons) or config.list("python") or list(fw.python[:1])
    targets = make_targets(py, list(platforms) or config.list("platform"))
    for target in targets:
        if fw.python and target.python_minor not in fw.python:
            raise InputError(f"--python {target.python}: Neuron {rel.version} with torch {fw.torch} "
                             f"supports Python {', '.join(fw.python)}")
    reqs = tuple(requirements) or tuple(config.list("with"))
    return StackRequest(plan, reqs, targets, build_routing(config, index_flags, route_flags))
