"""The doctor's checks: stable ids, one function each, pure over the shared Facts. Each is
registered right above its function with `@check(...)` (registry.py: id, title, level, the facts
it gathers, its severity), in every group's module alike; this module imports those modules and
lists the registered checks in the order reports show them."""

from __future__ import annotations

# Each group's module registers its checks as it is imported.
from neuronctl.ops.doctor import (  # noqa: F401
    checks_cache,
    checks_cores,
    checks_hardware,
    checks_health,
    checks_lock,
    checks_model,
    checks_network,
    checks_packages,
    checks_rules,
    system_checks,
)
from neuronctl.ops.doctor.registry import REGISTERED, CheckSpec

REPORT_ORDER: tuple[str, ...] = (
    "python.version", "packages.torch-neuronx", "packages.legacy-xla", "packages.placeholders",
    "packages.coherence", "packages.lifecycle", "packages.system", "host.os", "hardware.chip",
    "hardware.driver", "hardware.errors", "runtime.compat", "runtime.cores", "cache.compile",
    "device.access", "device.holders", "network.efa", "device.probe", "model.smoke", "lock.drift",
)
"""The order reports list the checks in:
the interpreter, its packages, the machine, the devices, then the slow and the optional ones."""


def _in_report_order() -> tuple[CheckSpec, ...]:
    unlisted = sorted(set(REGISTERED) - set(REPORT_ORDER))
    missing = sorted(set(REPORT_ORDER) - set(REGISTERED))
    if unlisted or missing:  # a new check names its place in the reports; a removed one leaves
        raise RuntimeError(f"doctor checks registered but not in REPORT_ORDER: {unlisted}; "
                           f"in REPORT_ORDER but not registered: {missing}")
    return tuple(REGISTERED[i] for i in REPORT_ORDER)


CHECKS: tuple[CheckSpec, ...] = _in_report_order()
CHECK_IDS: tuple[str, ...] = tuple(c.id for c in CHECKS)
CHECK_LEVELS: dict[str, int] = {c.id: c.level for c in CHECKS}

__all__ = ["CHECKS", "CHECK_IDS", "CHECK_LEVELS", "REPORT_ORDER", "CheckSpec"]
