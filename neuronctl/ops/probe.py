"""`neuronctl probe`: the device tiers alone."""

from __future__ import annotations

from neuronctl.probes.device import ProbeReport, run_device_probe
from neuronctl.probes.pyenv import resolve_python


def probe(python: str | None, device: str, timeout: float, compile_tier: bool) -> ProbeReport:
    """The device tiers in the target interpreter, stopping at the first failure."""
    return run_device_probe(resolve_python(python), device, timeout, compile_tier)
