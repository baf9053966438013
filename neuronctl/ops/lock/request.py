"""What the user asks for (flags > environment > [tool.neuronctl] > bundled defaults), turned
into one validated request: the stack (shared by lock and install) and, for lock, where and in
which format the lock goes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from neuronctl.config import Config
from neuronctl.errors import InputError
from neuronctl.manifest import Manifest
from neuronctl.ops.index_routing import build_routing
from neuronctl.resolvers.pylock import LockInputs
from neuronctl.resolvers.stack_plan import StackPlan, pick_release, plan_stack
from neuronctl.resolvers.targets import Target, make_targets
from neuronctl.routing import IndexRouting

LockFormat = Literal["pylock", "requirements"]
STDOUT = "-"


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


@dataclass(frozen=True)
class LockRequest:
    stack: StackRequest
    output: str
    """The lock's path, or "-" for stdout."""
    fmt: LockFormat
    check: bool
    """Compare the lock with the request instead of writing it."""
    offline: bool
    timeout: float

    @property
    def to_stdout(self) -> bool:
        return self.output == STDOUT


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


def lock_output(config: Config, output: str | None, fmt: str | None) -> tuple[str, LockFormat]:
    """Where the lock goes (-o, else config `lock`, else pylock.toml) and its format (--format,
    else by the file name); a pylock file must be named as PEP 751 says."""
    out = output or config.get("lock") or "pylock.toml"
    if fmt not in (None, "pylock", "requirements"):
        raise InputError(f"--format {fmt!r}: expected pylock or requirements")
    by_name = "requirements" if out.endswith(".txt") else "pylock"
    chosen: LockFormat = "requirements" if (fmt or by_name) == "requirements" else "pylock"
    if chosen == "pylock" and out != STDOUT:
        from packaging.pylock import is_valid_pylock_path

        if not is_valid_pylock_path(Path(out)):
            raise InputError(f"-o {out}: PEP 751 lock files are named pylock.toml or pylock.NAME.toml "
                             "(use --format requirements for a requirements file)")
    return out, chosen


def build_lock_request(stack: StackRequest, config: Config, *, output: str | None, fmt: str | None,
                       check: bool, offline: bool, timeout: float) -> LockRequest:
    out, chosen = lock_output(config, output, fmt)
    if check and out == STDOUT:
        raise InputError("--check needs a lock file, not -o -")
    return LockRequest(stack, out, chosen, check, offline, timeout)
