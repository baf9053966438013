"""From "Neuron release X with torch Y" to root requirements: exact pins from the release
manifest by default, or the newest builds within the release's lines with `latest`.

The version filter keeps the wrong stack out whatever an index serves: legacy XLA torch-neuronx
never enters a native lock (nor native a legacy one), and PyPI placeholder versions never at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from neuronctl.resolvers.resolve import Req, VersionFilter
from packaging.requirements import InvalidRequirement
from packaging.utils import NormalizedName
from packaging.version import InvalidVersion, Version

from neuronctl.errors import InputError
from neuronctl.manifest import Framework, Release
from neuronctl.torch_neuronx import classify, is_placeholder

STACK_PACKAGES = ("neuronx-cc", "nki")
"""Release packages pinned next to torch and torch-neuronx (libneuronxla and torch-xla belong to
the legacy stack and arrive as its dependencies)."""


@dataclass(frozen=True)
class StackPlan:
    release: Release
    framework: Framework
    latest: bool
    pins: dict[str, str]
    """name -> the manifest's version."""


def select_framework(release: Release, torch: str | None) -> Framework:
    if not release.frameworks:
        newer = "a release with a PyTorch framework (see `neuronctl releases`)"
        raise InputError(f"Neuron release {release.version} ships no PyTorch framework; pick {newer}")
    if torch is None:
        return release.default_framework() or release.frameworks[0]
    try:
        found = release.framework_for_torch(torch)
    except InvalidVersion:
        raise InputError(f"--torch {torch!r}: not a version such as 2.14 or 2.14.0") from None
    if found is None:
        offered = ", ".join(f.torch for f in release.frameworks)
        raise InputError(f"--torch {torch}: Neuron release {release.version} offers torch {offered}")
    return found


def plan_stack(release: Release, torch: str | None, latest: bool) -> StackPlan:
    fw = select_framework(release, torch)
    pins = {"torch": fw.torch, "torch-neuronx": fw.torch_neuronx}
    for name in STACK_PACKAGES:
        version = release.package_version(name)
        if version:
            pins[name] = version
    return StackPlan(release, fw, latest, pins)


def _line(version: str, parts: int) -> str:
    return ".".join(Version(version).base_version.split(".")[:parts])


def root_requirements(plan: StackPlan, extra: Sequence[str]) -> list[Req]:
    source = f"Neuron release {plan.release.version}"
    roots = []
    for name, version in plan.pins.items():
        # --latest: newer builds of the same major.minor line, never an older one.
        spec = f"=={_line(version, 2)}.*,>={version}" if plan.latest else f"=={version}"
        roots.append(Req.parse(f"{name}{spec}", source))
    for text in extra:
        try:
            req = Req.parse(text, "--with")
        except InvalidRequirement as exc:
            reason = str(exc).splitlines()[0]
            raise InputError(f"--with {text!r}: not a valid requirement ({reason})") from None
        if req.name in {r.name for r in roots}:
            raise InputError(f"--with {text!r}: {req.name} is part of the Neuron stack; pick it with "
                             "--release/--torch instead")
        roots.append(req)
    return roots


def version_filter(plan: StackPlan) -> VersionFilter:
    backend = plan.framework.backend

    def refuse(name: NormalizedName, version: Version) -> str | None:
        if is_placeholder(name, str(version)):
            return "PyPI placeholder package, never installable"
        if name == "torch-neuronx":
            kind = classify(str(version)).backend
            if kind != backend:
                return f"{kind} build of torch-neuronx; this lock is for the {backend} stack"
        return None

    return refuse
