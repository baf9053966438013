"""`neuronctl probe`: the device tiers alone."""

from __future__ import annotations

from neuronctl.ops.reporter import Reporter, status
from neuronctl.probes.device import ProbeReport, run_device_probe
from neuronctl.probes.pyenv import resolve_python


def probe(python: str | None, device: str, timeout: float, compile_tier: bool,
          reporter: Reporter | None = None) -> ProbeReport:
    """The device tiers in the target interpreter, stopping at the first failure; the tier
    running is a status event for `reporter`."""
    tell = None if reporter is None else (
        lambda tier: reporter.emit(status(f"device probe: tier {tier}")))
    return run_device_probe(resolve_python(python), device, timeout, compile_tier, on_tier=tell)
