"""Which framework line and which exact versions a Neuron release pins for a torch request:
pure manifest logic, shared by lock, install and init (and cheap to import)."""

from __future__ import annotations

from msgspec import Struct, field
from packaging.version import InvalidVersion

from neuronctl.errors import InputError
from neuronctl.release.model import Framework, Manifest, Release

STACK_PACKAGES = ("neuronx-cc", "nki")
"""Release packages pinned next to torch and torch-neuronx (libneuronxla and torch-xla belong to
the legacy stack and arrive as its dependencies)."""


class StackPlan(Struct, frozen=True):
    """The stack a torch request gets from a release: framework line, pinned versions, fallback."""

    release: Release
    framework: Framework
    latest: bool
    pins: dict[str, str]
    """name -> the manifest's version."""
    fallback: Fallback | None = None
    """Set for a fallback lock: the same torch for another device, no Neuron packages."""
    unpublished: dict[str, str] = field(default_factory=dict)
    """name -> the constraint AWS's install recipe gives, for a pin the release does not
    publish (2.34.0's neuronx-cc==2.*, nki unpinned): resolved from the index within it."""


class Fallback(Struct, frozen=True):
    """A fallback lock's device and, for CUDA, the PyTorch variant (cu130)."""

    device: str
    variant: str | None = None

    @property
    def local(self) -> str:
        """The torch build's local version label: +cu130, +cpu."""
        return self.variant or self.device

    @property
    def label(self) -> str:
        return f"{self.device} ({self.variant})" if self.variant else self.device

    def to_tool(self) -> dict[str, str]:
        return {"device": self.device, **({"variant": self.variant} if self.variant else {})}


def decided(plan: StackPlan) -> str:
    """What the release data decides before any index is read: the release, its Python range,
    each pin, and what is left to the index (an unpublished pin's constraint)."""
    release = plan.release
    python = f"Python {release.python[0]}-{release.python[-1]}" if release.python else "Python: not published"
    pins = ", ".join(f"{name}=={version}" for name, version in plan.pins.items())
    text = f"the release data decides: Neuron {release.version} ({python}): {pins}"
    if plan.unpublished:
        left = ", ".join(f"{name}{spec or ' (any version)'}" for name, spec in plan.unpublished.items())
        text += f"; from the index, within AWS's recipe: {left}"
    return text


def pick_release(manifest: Manifest, version: str | None) -> Release:
    """The release asked for, else the newest native one (the newest of all if none is native)."""
    if version:
        return manifest.get(version)
    return manifest.latest_with_flavour("native") or manifest.latest


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
    unpublished = {}
    for name in STACK_PACKAGES:
        version = release.package_version(name)
        if version:
            pins[name] = version
        elif name in release.constraints:
            unpublished[name] = release.constraints[name]
    return StackPlan(release, fw, latest, pins, unpublished=unpublished)


def plan_fallback(release: Release, torch: str | None, latest: bool, fallback: Fallback) -> StackPlan:
    """The release's torch line built for another device: torch pinned to the device's local
    build (2.14.0+cu130), no Neuron package."""
    fw = select_framework(release, torch)
    return StackPlan(release, fw, latest, {"torch": f"{fw.torch}+{fallback.local}"}, fallback)
