"""An install's fresh resolution (no --lock): the stack for the target, every index reached for
at once, then resolved with the command's one Fetcher (index pages and metadata; the wheels are
fetched by the engine, not by neuronctl). Only this path loads the HTTP stack."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct

from neuronctl.atomic import write_text_atomic
from neuronctl.locked_file import LockedFile
from neuronctl.ops.install.request import InstallRequest
from neuronctl.ops.install.source_types import InstallSource, Sourced
from neuronctl.ops.lock.net_preflight import preflight_stack
from neuronctl.ops.lock.request import StackRequest
from neuronctl.ops.lock.resolve import Resolved, resolve_request
from neuronctl.resolvers.http_fetch import cached_fetcher
from neuronctl.resolvers.lock_record import build_pylock, render_pylock
from neuronctl.resolvers.stack_plan import StackPlan
from neuronctl.resolvers.targets import PlatformTarget


class Resolution(Struct, frozen=True):
    """A fresh resolution with the request it answered (what --write-lock writes)."""

    resolved: Resolved
    stack: StackRequest

    def write(self, path: Path) -> None:
        doc = build_pylock(self.resolved.packages, self.stack.inputs(), self.resolved.hash_of)
        write_text_atomic(path, render_pylock(doc))


def resolve(request: InstallRequest, target: PlatformTarget, stack: StackRequest) -> Sourced:
    """The fresh resolution of `stack` for the target: every index checked at once, then the
    wheels chosen, each with its sha256."""
    plan = stack.plan
    fetcher, cache_root = cached_fetcher(offline=request.offline, timeout=request.timeout,
                                         credentials=stack.routing.credentials())
    preflight_stack(stack, fetcher)  # every index at once, before resolving
    resolved = resolve_request(stack, offline=request.offline, timeout=request.timeout,
                               fetcher=fetcher, cache_root=cache_root)
    found = from_resolution(resolved.packages, target, resolved.hash_of, plan)
    return Sourced(found, stack.routing, Resolution(resolved, stack))


def from_resolution(packages: Sequence[Any], target: PlatformTarget, hash_of: Any,
                    plan: StackPlan) -> InstallSource:
    """The wheels a fresh resolution chose for the target."""
    version, framework = plan.release.version, plan.framework
    wanted = []
    for pkg in packages:
        dist = pkg.best[target]
        wanted.append(LockedFile(str(pkg.name), str(pkg.version), dist.filename, dist.url,
                                 hash_of(dist), dist.size, pkg.index_url))
    return InstallSource(tuple(wanted), version, framework,
                         f"Neuron {version} with torch {framework.torch}, resolved now")
