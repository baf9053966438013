"""The doctor's checks: stable ids, one function each, pure over the shared Facts (the functions
live by group: checks_packages, checks_hardware, checks_lock, system_checks, checks_model)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from neuronctl.ops.doctor.checks_cache import check_compile_cache
from neuronctl.ops.doctor.checks_cores import check_runtime_cores
from neuronctl.ops.doctor.checks_hardware import check_chip, check_device, check_driver_and_kernel
from neuronctl.ops.doctor.checks_health import check_hardware_errors
from neuronctl.ops.doctor.checks_lock import check_lock
from neuronctl.ops.doctor.checks_model import check_model
from neuronctl.ops.doctor.checks_network import check_efa
from neuronctl.ops.doctor.checks_packages import (
    check_coherence,
    check_legacy,
    check_placeholders,
    check_python,
    check_torch_neuronx,
)
from neuronctl.ops.doctor.checks_rules import check_host_os, check_lifecycle, check_runtime_compat
from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.runner import Outcome, Severity
from neuronctl.ops.doctor.system_checks import SYSTEM_CHECKS


@dataclass(frozen=True)
class CheckSpec:
    """One doctor check as listed: its stable id, title, function, level, the facts it reads."""

    id: str
    title: str
    run: Callable[[Facts], Outcome]
    level: int = 1
    """The lowest doctor level that runs it (levels.py)."""
    gathers: frozenset[str] = frozenset()
    """The Facts it reads besides the interpreter (a fix may use them only when some chosen
    check gathers them anyway: Facts.knows)."""
    severity: Severity = "fix"
    """Its warnings' and failures' severity unless the outcome names one (docs/checks.md)."""


HARDWARE = frozenset({"hardware"})
_SYSTEM = {check_id: (title, run) for check_id, title, run in SYSTEM_CHECKS}

CHECKS: tuple[CheckSpec, ...] = (
    CheckSpec("python.version", "Python interpreter", check_python),
    CheckSpec("packages.torch-neuronx", "torch-neuronx", check_torch_neuronx, gathers=HARDWARE),
    CheckSpec("packages.legacy-xla", "Legacy XLA stack", check_legacy, gathers=HARDWARE),
    CheckSpec("packages.placeholders", "PyPI placeholder packages", check_placeholders),
    CheckSpec("packages.coherence", "Package versions agree", check_coherence, gathers=HARDWARE),
    CheckSpec("packages.lifecycle", "Support windows", check_lifecycle, gathers=HARDWARE),
    CheckSpec("packages.system", *_SYSTEM["packages.system"]),
    CheckSpec("host.os", "Operating system", check_host_os, gathers=HARDWARE),
    CheckSpec("hardware.chip", "Chip generation", check_chip, gathers=HARDWARE),
    CheckSpec("hardware.driver", "Neuron driver", check_driver_and_kernel, gathers=HARDWARE),
    CheckSpec("hardware.errors", "Neuron hardware errors", check_hardware_errors,
              gathers=HARDWARE, severity="drain"),
    CheckSpec("runtime.compat", "Neuron runtime", check_runtime_compat, gathers=HARDWARE),
    CheckSpec("runtime.cores", "NeuronCore allocation", check_runtime_cores, gathers=HARDWARE),
    CheckSpec("cache.compile", "Compile caches", check_compile_cache),
    CheckSpec("device.access", *_SYSTEM["device.access"]),
    CheckSpec("device.holders", *_SYSTEM["device.holders"]),
    CheckSpec("network.efa", "EFA for multi-node jobs", check_efa, level=2,
              gathers=frozenset({"hardware", "efa"})),
    CheckSpec("device.probe", "Device probe", check_device, level=2,
              gathers=frozenset({"hardware", "probe"})),
    CheckSpec("model.smoke", "Your model on the device", check_model, level=3,
              gathers=frozenset({"smoke"})),
    CheckSpec("lock.drift", "Lock file drift", check_lock),
)
CHECK_IDS: tuple[str, ...] = tuple(c.id for c in CHECKS)
CHECK_LEVELS: dict[str, int] = {c.id: c.level for c in CHECKS}
