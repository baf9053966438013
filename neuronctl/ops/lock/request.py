"""What the user asks for (resolved by neuronctl.settings: flag > environment > [tool.neuronctl]
> default), turned into one validated request: the stack (shared by lock and install) and, for
lock, where and in which format the lock goes."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from msgspec import Struct

from neuronctl.devices import FALLBACK_DEVICES
from neuronctl.errors import InputError
from neuronctl.ops.index_routing import route_indexes
from neuronctl.ops.lock.stack_settings import StackSettings
from neuronctl.release.model import Manifest, Release
from neuronctl.resolvers.lock_record import LockInputs
from neuronctl.resolvers.stack_plan import (
    Fallback,
    StackPlan,
    pick_release,
    plan_fallback,
    plan_stack,
    select_framework,
)
from neuronctl.resolvers.targets import PlatformTarget, make_targets
from neuronctl.routing import (
    IndexRouting,
    cuda_variant_number,
    fallback_base_routing,
    fallback_only_indexes,
    load_fallback_routing,
)
from neuronctl.safety import expand_user

LockFormat = Literal["pylock", "requirements"]
STDOUT = "-"


class StackRequest(Struct, frozen=True):
    """The stack to lock: release plan, extra requirements, targets and index routing."""

    plan: StackPlan
    requirements: tuple[str, ...]
    targets: tuple[PlatformTarget, ...]
    routing: IndexRouting

    def inputs(self) -> LockInputs:
        fw, fallback = self.plan.framework, self.plan.fallback
        return LockInputs(self.plan.release.version, fw.flavour, fw.torch, fw.torch_neuronx,
                          self.plan.latest, self.requirements, self.targets, dict(self.plan.pins),
                          self._recorded_indexes(), fallback.to_tool() if fallback else None,
                          unpublished=dict(self.plan.unpublished))

    def _recorded_indexes(self) -> dict[str, str]:
        """The indexes the lock records, less those only fallback locks use (pytorch-cuda)
        when nothing is routed there: a Neuron lock does not depend on them."""
        used = {*self.routing.routes.values(), *self.routing.patterns.values(), self.routing.default}
        unused = fallback_only_indexes() - used
        return {k: v for k, v in self.routing.indexes.items() if k not in unused}


class LockRequest(Struct, frozen=True):
    """What `neuronctl lock` was asked: the stack, where and how to write it, or --check."""

    stack: StackRequest
    output: str
    """The lock's path, or "-" for stdout."""
    fmt: LockFormat
    check: bool
    """Compare the lock with the request instead of writing it."""
    offline: bool
    timeout: float
    allow_unsupported: bool = False
    """--allow-unsupported: proceed where a documented rule forbids the stack (it is named)."""

    @property
    def to_stdout(self) -> bool:
        return self.output == STDOUT


def parse_fallback(text: str | None) -> tuple[str, str | None] | None:
    """`cuda`, `cuda=cu128` or `cpu` -> (device, variant or None)."""
    if text is None:
        return None
    device, sep, variant = text.strip().partition("=")
    device, variant = device.strip().lower(), variant.strip().lower()
    if device not in FALLBACK_DEVICES:
        raise InputError(f"--fallback {text!r}: expected cuda, cuda=VARIANT (e.g. cuda=cu128) or cpu")
    if sep and (device != "cuda" or not variant):
        raise InputError(f"--fallback {text!r}: only cuda takes a variant, as cuda=cu128")
    if variant:
        try:
            cuda_variant_number(variant)
        except InputError as exc:
            raise InputError(f"--fallback {text!r}: {exc.message}") from None
    return device, variant or None


def _fallback_plan(rel: Release, torch: str | None, latest: bool, device: str,
                   variant: str | None) -> StackPlan:
    """The fallback's plan; CUDA without a variant takes the newest one PyTorch publishes for
    the torch line (the bundled table in routing.json)."""
    fw = select_framework(rel, torch)
    if device == "cuda" and variant is None:
        variant = load_fallback_routing()["cuda"].default_variant(fw.torch)
        if variant is None:
            raise InputError(f"--fallback cuda: no CUDA variant is known for torch {fw.torch}",
                             hint="name one: --fallback cuda=cu130")
    return plan_fallback(rel, torch, latest, Fallback(device, variant if device == "cuda" else None))


def plan_request(manifest: Manifest, settings: StackSettings) -> StackRequest:
    """The stack request from resolved settings and the manifest."""
    release = settings.release
    try:
        rel = pick_release(manifest, release.value)
    except InputError as exc:  # a release from the config or the environment: say which
        if release.source.kind in ("flag", "default"):
            raise
        raise InputError(f"{exc.message} (from {release.source.label})", hint=exc.hint) from None
    device = parse_fallback(settings.fallback)
    torch, latest = settings.torch, settings.latest
    plan = _fallback_plan(rel, torch, latest, *device) if device else plan_stack(rel, torch, latest)
    fw = plan.framework
    py = list(settings.python_versions) or list(fw.python[:1])
    targets = make_targets(py, list(settings.platforms), settings.python_source)
    for target in targets:
        if fw.python and target.python_minor not in fw.python:
            raise InputError(f"{settings.python_source} {target.python}: Neuron {rel.version} with "
                             f"torch {fw.torch} supports Python {', '.join(fw.python)}")
    base = fallback_base_routing(*device) if device else None
    return StackRequest(plan, settings.requirements, targets,
                        route_indexes(settings.indexes, base=base))


_KIND = {"cuda": "the CUDA fallback lock", "cpu": "the CPU fallback lock"}


def fallback_path(main: str, device: str, fmt: LockFormat = "pylock", *,
                  where: str | None = None) -> str:
    """Where a fallback lock goes: beside `main` (what -o or config `lock` names), under its own
    name and never over the Neuron lock. A pylock is PEP 751's named form, pylock.cuda.toml (the
    name `install --lock` looks for beside any pylock.toml or pylock.NAME.toml); a requirements
    export takes the device before its suffix, requirements.cuda.txt. A name that is already the
    device's is kept; the other fallback device's name is bad input (`where`: how to name main)."""
    if main == STDOUT:
        return main
    path = Path(main)
    if fmt == "pylock":
        taken = {f"pylock.{d}.toml": d for d in FALLBACK_DEVICES if d != device}
        name = f"pylock.{device}.toml"
    else:
        stem, dot, suffix = path.name.rpartition(".")
        if not dot:
            stem, suffix = path.name, ""
        ends = next((d for d in FALLBACK_DEVICES if stem.lower().endswith(f".{d}")), None)
        if ends == device:
            return main
        taken = {path.name: ends} if ends else {}
        stem = stem[:-len(ends) - 1] if ends else stem
        name = f"{stem}.{device}{dot}{suffix}"
    # Case-blind: on a case-insensitive disk pylock.CUDA.toml is pylock.cuda.toml.
    taken = {k.lower(): v for k, v in taken.items()}
    if path.name.lower() in taken:
        raise InputError(f"{where or main}: that is {_KIND[taken[path.name.lower()]]}'s name; a "
                         f"{device} fallback lock is written as {name}")
    return str(path.with_name(name))


def lock_output(output: str | None, fmt: str | None, fallback: str | None = None, *,
                check: bool = False, config_lock: str | None = None) -> tuple[str, LockFormat]:
    """Where the lock goes and its format (--format, else by the file name). The Neuron lock: -o,
    else config `lock`, else pylock.toml, named as PEP 751 says and never a fallback lock's name
    (install would take it for the GPU's); a fallback lock beside that path (fallback_path)."""
    main = output or config_lock or "pylock.toml"
    where = f"-o {main}" if output else f"config `lock` {main}"
    if fmt not in (None, "pylock", "requirements"):
        raise InputError(f"--format {fmt!r}: expected pylock or requirements")
    by_name = "requirements" if main.endswith(".txt") else "pylock"
    chosen: LockFormat = "requirements" if (fmt or by_name) == "requirements" else "pylock"
    if main == STDOUT:
        return main, chosen
    if expand_user(main, where).is_dir():
        raise InputError(f"{where}: that is a directory; name the lock file in it "
                         f"(e.g. {Path(main) / 'pylock.toml'})")
    if chosen == "pylock":
        from packaging.pylock import is_valid_pylock_path

        if not is_valid_pylock_path(Path(main)):
            raise InputError(f"{where}: PEP 751 lock files are named pylock.toml or pylock.NAME.toml "
                             "(use --format requirements for a requirements file)")
        named = next((d for d in FALLBACK_DEVICES if Path(main).name.lower() == f"pylock.{d}.toml"),
                     None)
        if named and not fallback and not check:
            raise InputError(f"{where}: that is {_KIND[named]}'s name, which `install --lock` picks "
                             f"for that device; write the Neuron lock as pylock.toml or "
                             f"pylock.NAME.toml, or the fallback with --fallback {named}")
    out = fallback_path(main, fallback, chosen, where=where) if fallback else main
    if out != main and expand_user(out, where).is_dir():
        raise InputError(f"{where}: the fallback lock's place {out} is a directory")
    if not check:  # written after resolving: its place is checked before
        from neuronctl.ops.output_path import check_output_file

        check_output_file(out, "-o" if output else "config `lock`")
    return out, chosen


def build_lock_request(stack: StackRequest, *, output: str | None, fmt: str | None, check: bool,
                       offline: bool, timeout: float, config_lock: str | None = None) -> LockRequest:
    """`config_lock`: config `lock`, where the lock goes without -o."""
    device = stack.plan.fallback.device if stack.plan.fallback else None
    out, chosen = lock_output(output, fmt, device, check=check, config_lock=config_lock)
    if check and out == STDOUT:
        raise InputError("--check needs a lock file, not -o -")
    return LockRequest(stack, out, chosen, check, offline, timeout)
