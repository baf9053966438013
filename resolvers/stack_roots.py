"""From "Neuron release X with torch Y" to root requirements: exact pins from the release
manifest by default, or the newest builds within the release's lines with `latest`.

The version filter keeps the wrong stack out whatever an index serves: legacy XLA torch-neuronx
never enters a native lock (nor native a legacy one), and PyPI placeholder versions never at all.
"""

from __future__ import annotations

from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName
from packaging.version import Version

from neuronctl.errors import InputError
from neuronctl.resolvers.resolve import Req, VersionFilter
from neuronctl.resolvers.stack_plan import StackPlan
from neuronctl.routing import load_default_routing
from neuronctl.torch_neuronx import classify, is_placeholder


def _line(version: str, parts: int) -> str:
    return ".".join(Version(version).base_version.split(".")[:parts])


def root_requirements(plan: StackPlan, extra: Sequence[str]) -> list[Req]:
    source = f"Neuron release {plan.release.version}"
    roots = []
    for name, version in plan.pins.items():
        # --latest: newer builds of the same major.minor line, never an older one.
        spec = (f"=={_line(version, 2)}.*,>={Version(version).public}" if plan.latest
                else f"=={version}")
        roots.append(Req.parse(f"{name}{spec}", source))
    for name, constraint in plan.unpublished.items():
        # No published pin: the newest build the index has within AWS's recipe constraint.
        roots.append(Req.parse(f"{name}{constraint}",
                               f"{source} (pin not published; AWS's recipe: "
                               f"{name}{constraint or ' unpinned'})"))
    for text in extra:
        try:
            req = Req.parse(text, "--with")
        except InvalidRequirement as exc:
            reason = str(exc).splitlines()[0]
            raise InputError(f"--with {text!r}: not a valid requirement ({reason})") from None
        if Requirement(text).url:
            raise InputError(f"--with {text!r}: direct references (name @ URL) cannot be locked; "
                             "every package comes from its index",
                             hint="serve the file from an index (a directory of wheels works: "
                                  "--index NAME=file:///DIR --route PKG=NAME) and require it by name")
        if plan.fallback is not None and req.name in neuron_packages():
            raise InputError(f"--with {text!r}: a {plan.fallback.device} fallback lock holds no "
                             "Neuron package; lock it into the Neuron lock (without --fallback)")
        if req.name in {r.name for r in roots}:
            raise InputError(f"--with {text!r}: {req.name} is part of the Neuron stack; pick it with "
                             "--release/--torch instead")
        roots.append(req)
    return roots


def neuron_packages() -> frozenset[str]:
    """The names the bundled routing sends to the Neuron repository."""
    routing = load_default_routing()
    return frozenset(name for name, index in routing.routes.items() if index == "neuron")


TORCH_FAMILY = frozenset({"torch", "torchvision", "torchaudio"})
"""Packages PyTorch builds per device, with the device as the local version label (+cu130)."""


def version_filter(plan: StackPlan) -> VersionFilter:
    flavour = plan.framework.flavour
    fallback = plan.fallback
    neuron = neuron_packages() if fallback is not None else frozenset()

    def refuse(name: NormalizedName, version: Version) -> str | None:
        if is_placeholder(name, str(version)):
            return "PyPI placeholder package, never installable"
        if fallback is not None:
            if name in neuron:
                return f"a Neuron package; this is a {fallback.device} fallback lock"
            if name in TORCH_FAMILY and version.local != fallback.local:
                build = f"+{version.local}" if version.local else "a build without a local label"
                return f"{build}; this lock is for +{fallback.local}"
            return None
        if name == "torch-neuronx":
            kind = classify(str(version)).flavour
            if kind != flavour:
                return f"{kind} build of torch-neuronx; this lock is for the {flavour} stack"
        return None

    return refuse
