"""What the user asks for (flags > environment > [tool.neuronctl] > bundled defaults), turned
into one validated request that lock and install share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from neuronctl.config import Config
from neuronctl.errors import InputError
from neuronctl.manifest import Manifest
from neuronctl.ops.index_routing import build_routing
from neuronctl.resolvers.lockfile import LockInputs
from neuronctl.resolvers.stack_plan import StackPlan, pick_release, plan_stack
from neuronctl.resolvers.targets import Target, make_targets
from neuronctl.routing import IndexRouting


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


def build_request(config: Config, manifest: Manifest, *, release: str | None, torch: str | None,
                  pythons: Sequence[str], platforms: Sequence[str], requirements: Sequence[str],
                  index_flags: Sequence[str], route_flags: Sequence[str], latest: bool) -> StackRequest:
    wanted = release or config.get("release")
    rel = pick_release(manifest, wanted)
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
