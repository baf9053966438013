"""Classify torch-neuronx versions: native TorchNeuron, legacy XLA, or a PyPI placeholder.

Rule (Neuron 2.33 release notes): "Starting with Neuron 2.33.0, torch-neuronx for PyTorch 2.13
and 2.14 is TorchNeuron"; 2.9 was the last XLA line. Legacy versions embed the torch version
they target (`<torch X.Y.Z>.<neuron A.B.C>`, e.g. 2.9.0.2.15.32035). PyPI holds placeholder
packages (torch-neuronx 1.0) that only raise "WRONG PACKAGE" on import.
"""

from __future__ import annotations

from typing import Literal

from msgspec import Struct
from packaging.version import InvalidVersion, Version

from neuronctl.errors import InputError

Flavour = Literal["native", "xla", "placeholder", "unknown"]
"""What a torch-neuronx build is: the flavour (an "engine" is pip or uv, never this)."""
Backend = Flavour  # the old name, for modules not yet moved to the word "flavour"

FIRST_NATIVE_LINE = (2, 13)
LAST_XLA_LINE = (2, 9)

# Versions of the PyPI placeholder projects (their import raises "WRONG PACKAGE. Please install
# the package from Neuron Repository - pip.repos.neuron.amazonaws.com"; transformers-neuronx's
# points to its GitHub install instructions). A doctor flags each if found installed.
PLACEHOLDERS: dict[str, tuple[str, ...]] = {
    "torch-neuronx": ("1.0",),
    "neuronx-cc": ("1.0", "1.0.post1"),
    "nki": ("0.0.1",),
    "libneuronxla": ("1.0",),
    "torch-neuron": ("1.0",),
    "neuron-cc": ("1.0", "1.0.post1"),
    "jax-neuron": ("1.0",),
    "jaxlib-neuronx": ("1.0",),
    "neuronx-hwm": ("1.0",),
    "tensorflow-neuronx": ("1.0",),
    "tensorboard-neuron": ("1.0",),
    "tensorboard-plugin-neuronx": ("1.0",),
    "libtorch-neuronx-lite": ("0.0.1",),
    "transformers-neuronx": ("0.1",),
}
PLACEHOLDER_SOURCES: dict[str, str] = {
    # Each project's pypi.org page (read 2026-12-01). torch-neuronx, neuronx-cc, nki,
    # libneuronxla and torch-neuron: NEURON-FACTS (public PyPI placeholders whose import raises
    # "WRONG PACKAGE"); no page of theirs was in the copies read for RELEASE-FACTS section 8.
    name: f"https://pypi.org/project/{name}/" for name in PLACEHOLDERS
}

class TorchNeuronxVersion(Struct, frozen=True):
    """A torch-neuronx version taken apart: native, legacy XLA or placeholder, and its torch."""

    version: str
    public: str
    local: str | None
    flavour: Flavour
    torch: str | None
    """The torch it targets: "2.9.0" for legacy builds, the series "2.14" for native ones."""
    neuron: str | None
    """For legacy builds, the Neuron part of the version ("2.15.32035")."""

    @property
    def line(self) -> str:
        parts = self.public.split(".")
        return ".".join(parts[:2])

    def torch_requirement(self) -> str | None:
        if self.torch is None:
            return None
        return f"=={self.torch}.*" if self.flavour == "native" else f"=={self.torch}"


def parse_version(text: str, *, what: str = "version") -> Version:
    try:
        return Version(text.strip())
    except InvalidVersion:
        raise InputError(f"invalid {what} {text!r}: not a PEP 440 version") from None


def is_placeholder(package: str, version: str) -> bool:
    name = package.lower().replace("_", "-")
    try:
        ver = Version(version)
    except InvalidVersion:
        return False
    return any(ver == Version(v) for v in PLACEHOLDERS.get(name, ()))


def classify(version: str) -> TorchNeuronxVersion:
    """Say what a torch-neuronx version is. Local labels (`+de43f57c`) are allowed."""
    ver = parse_version(version, what="torch-neuronx version")
    public = ver.public
    release = ver.release
    line = release[:2]
    if is_placeholder("torch-neuronx", public):
        return TorchNeuronxVersion(version, public, ver.local, "placeholder", None, None)
    if len(release) >= 5:
        torch = ".".join(str(p) for p in release[:3])
        neuron = ".".join(str(p) for p in release[3:])
        if line <= LAST_XLA_LINE:
            return TorchNeuronxVersion(version, public, ver.local, "xla", torch, neuron)
    if line >= FIRST_NATIVE_LINE:
        series = f"{release[0]}.{release[1]}"
        return TorchNeuronxVersion(version, public, ver.local, "native", series, None)
    if line <= LAST_XLA_LINE and len(release) >= 3:
        torch = ".".join(str(p) for p in release[:3])
        return TorchNeuronxVersion(version, public, ver.local, "xla", torch, None)
    return TorchNeuronxVersion(version, public, ver.local, "unknown", None, None)


def torch_matches(torch_version: str, tnx: TorchNeuronxVersion) -> bool:
    """Whether an installed torch fits what a torch-neuronx build targets (local labels ignored)."""
    if tnx.torch is None:
        return False
    try:
        torch = Version(torch_version)
    except InvalidVersion:
        return False
    if tnx.flavour == "native":
        return f"{torch.major}.{torch.minor}" == tnx.torch
    return torch.public == Version(tnx.torch).public
