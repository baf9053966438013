"""`neuronctl detect`: the hardware picture alone."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from neuronctl.probes.hardware import HardwareReport, detect_hardware
from neuronctl.probes.sysroot import SysRoot


def detect(sysroot: Path | None, environ: Mapping[str, str] | None = None) -> HardwareReport:
    """The machine read once (sysfs, PCI, DMI, IMDS where it may answer, neuron-ls, dpkg)."""
    # from_env validates --sysroot and NEURONCTL_SYSROOT (InputError: exit 2)
    return detect_hardware(SysRoot.from_env(sysroot), environ)

