"""Legacy XLA stack detection from several independent signals, each reported with its evidence."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from msgspec import Struct
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from neuronctl.probes.pyenv import PythonEnv
from neuronctl.records import asdict
from neuronctl.torch_neuronx import classify, is_placeholder

Says = Literal["legacy", "native", "placeholder"]

# Retired or XLA-only packages whose presence marks the legacy stack.
LEGACY_PACKAGES: dict[str, str] = {
    "torch-xla": "PyTorch/XLA, the base of Neuron's legacy XLA flavour",
    "libneuronxla": "the legacy PJRT plugin",
    "transformers-neuronx": "retired in Neuron 2.26",
    "torch-neuron": "Inf1-only torch-neuron",
}


class Signal(Struct, frozen=True):
    """One independent sign of a legacy or native stack, with its evidence."""

    name: str
    says: Says
    detail: str


class LegacyReport(Struct, frozen=True):
    """Whether the target holds the legacy XLA stack, the native one or both, and why."""

    verdict: Literal["none", "native", "legacy", "mixed"]
    signals: tuple[Signal, ...]
    placeholders: tuple[str, ...]
    legacy_packages: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _requires_names(requires: tuple[str, ...]) -> set[str]:
    names = set()
    for req in requires:
        try:
            parsed = Requirement(req)
        except InvalidRequirement:
            continue
        if parsed.marker and "extra" in str(parsed.marker):
            continue
        names.add(str(canonicalize_name(parsed.name)))
    return names


def detect_legacy(env: PythonEnv, environ: Mapping[str, str]) -> LegacyReport:
    signals: list[Signal] = []
    placeholders: list[str] = []
    legacy_pkgs: set[str] = set()
    tnx = env.get("torch-neuronx")
    if tnx is not None:
        info = classify(tnx.version)
        if info.flavour == "xla":
            signals.append(Signal("torch-neuronx version", "legacy",
                                  f"{tnx.version} is the XLA line for torch {info.torch}"))
        elif info.flavour == "native":
            signals.append(Signal("torch-neuronx version", "native",
                                  f"{tnx.version} is TorchNeuron for torch {info.torch}"))
        deps = _requires_names(tnx.requires) & {"torch-xla", "libneuronxla"}
        if deps:
            signals.append(Signal("torch-neuronx Requires-Dist", "legacy",
                                  f"depends on {', '.join(sorted(deps))}"))
        if tnx.xla_impl:
            signals.append(Signal("torch-neuronx files", "legacy",
                                  "ships torch_neuronx/xla_impl/ (the XLA tracing library)"))
        if any(s.says == "legacy" for s in signals):
            legacy_pkgs.add("torch-neuronx")
    for name, why in LEGACY_PACKAGES.items():
        dist = env.get(name)
        if dist is None:
            continue
        if dist.wrong_package or is_placeholder(name, dist.version):
            continue
        signals.append(Signal(f"{name} installed", "legacy", f"{name} {dist.version}: {why}"))
        legacy_pkgs.add(name)
    if environ.get("PJRT_DEVICE", "").upper() == "NEURON":
        signals.append(Signal("PJRT_DEVICE", "legacy", "PJRT_DEVICE=NEURON selects the XLA runtime"))
    for key, dist in sorted(env.distributions.items()):
        if dist.wrong_package or is_placeholder(key, dist.version):
            placeholders.append(f"{dist.name} {dist.version}")
            signals.append(Signal(f"{dist.name} placeholder", "placeholder",
                                  f"{dist.name} {dist.version} is the PyPI placeholder "
                                  "(import raises 'WRONG PACKAGE')"))
    says = {s.says for s in signals if s.says != "placeholder"}
    verdict: Literal["none", "native", "legacy", "mixed"]
    if not says:
        verdict = "none"
    elif says == {"legacy"}:
        verdict = "legacy"
    elif says == {"native"}:
        verdict = "native"
    else:
        verdict = "mixed"
    return LegacyReport(verdict, tuple(signals), tuple(placeholders), tuple(sorted(legacy_pkgs)))
