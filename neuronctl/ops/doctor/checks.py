"""The doctor's checks: stable ids, one function each, pure over the shared Facts (the functions
live by group: checks_packages, checks_hardware, checks_lock)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from neuronctl.ops.doctor.checks_hardware import check_chip, check_device, check_driver, check_runtime
from neuronctl.ops.doctor.checks_lock import check_lock
from neuronctl.ops.doctor.checks_packages import (
    check_coherence,
    check_legacy,
    check_placeholders,
    check_python,
    check_torch_neuronx,
)
from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.runner import Outcome


@dataclass(frozen=True)
class CheckSpec:
    id: str
    title: str
    run: Callable[[Facts], Outcome]


CHECKS: tuple[CheckSpec, ...] = (
    CheckSpec("python.version", "Python interpreter", check_python),
    CheckSpec("packages.torch-neuronx", "torch-neuronx", check_torch_neuronx),
    CheckSpec("packages.legacy-xla", "Legacy XLA stack", check_legacy),
    CheckSpec("packages.placeholders", "PyPI placeholder packages", check_placeholders),
    CheckSpec("packages.coherence", "Package versions agree", check_coherence),
    CheckSpec("hardware.chip", "Chip generation", check_chip),
    CheckSpec("hardware.driver", "Neuron driver", check_driver),
    CheckSpec("runtime.compat", "Neuron runtime", check_runtime),
    CheckSpec("device.probe", "Device probe", check_device),
    CheckSpec("lock.drift", "Lock file drift", check_lock),
)
CHECK_IDS: tuple[str, ...] = tuple(c.id for c in CHECKS)
