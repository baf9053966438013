"""`hardware.errors`: the failures that take a node out of a cluster, from the kernel log (the
documented NEURON_HW_ERR codes), each device's sysfs health (driver 2.30.2+) and its corrected
ECC counters; and Neuron devices the bus shows but the driver does not. Pure over the Facts:
the reading is in probes/kernel_log.py and probes/device_health.py, the matching in
health_rules.py."""

from __future__ import annotations

from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.registry import HARDWARE, check
from neuronctl.ops.doctor.runner import CheckOutcome

WHAT_TO_DO = ("drain the node (scontrol update NodeName=<node> State=DRAIN, or let "
              "`neuronctl doctor --slurm-drain` do it) and open an AWS support case with "
              "`neuronctl bundle` attached")


def _log_problems(f: Facts) -> tuple[list[str], list[str]]:
    """(failures, details) from the kernel log."""
    # the signals' tables and patterns: read only where there is Neuron hardware to check
    from neuronctl.ops.doctor.health_rules import (
        HW_ERROR_CODES,
        NPD_CONFIG_SOURCE,
        match_hw_errors,
        within_lookback,
    )

    log = f.kernel_log
    details = [f"kernel log: {log.source or 'none'}, {log.bytes_read} bytes read"
               + (", older messages beyond the bound not read" if log.truncated else "")
               + (f", within the last {f.lookback_s:g} s" if f.lookback_s else ", since boot")]
    if log.problem:
        details.append(f"kernel log not read: {log.problem}")
    newest = log.uptime_s if log.source in ("/dev/kmsg", "journalctl -k -b") else None
    hits = match_hw_errors(within_lookback(log.lines, f.lookback_s, newest))
    failures = []
    for hit in hits:
        where = hit.device or "a device the message does not name"
        failures.append(f"{where}: NEURON_HW_ERR={hit.code} x{hit.count} in the kernel log "
                        f"(node-problem-detector reason {HW_ERROR_CODES[hit.code]})")
        details.append(f"last {hit.code} line: {hit.last[:300]}")
    if hits:
        details.append(f"codes as AWS's node-problem-detector matches them: {NPD_CONFIG_SOURCE}")
    return failures, details


def _sysfs_problems(f: Facts) -> tuple[list[str], list[str], list[str]]:
    """(failures, warnings, details) from each device's sysfs health."""
    from neuronctl.ops.doctor.health_rules import (  # as in _log_problems: hardware only
        DRIVER_2_30_2_SOURCE,
        ECC_CORRECTED_WARN,
        UNHEALTHY_COMPONENTS,
        ecc_over,
    )

    failures, warnings, details = [], [], []
    exposed = 0
    for dev in f.device_health:
        if dev.unhealthy is not None:
            exposed += 1
            for component in dev.unhealthy:
                known = "" if component in UNHEALTHY_COMPONENTS else " (a value not documented)"
                failures.append(f"{dev.name}: component {component} unhealthy{known} "
                                "(stats/hardware/health_status/unhealthy_components)")
        for name, value in sorted(ecc_over(dev.ecc).items()):
            warnings.append(f"{dev.name}: {name} = {value} corrected ECC errors "
                            f"(over {ECC_CORRECTED_WARN})")
        details += [f"{dev.name}: {name} = {value}" for name, value in sorted(dev.ecc.items())]
        details += [f"{dev.name}: {name} is not a count" for name in dev.unreadable]
    if f.device_health and not exposed:
        details.append("the driver exposes no stats/hardware/health_status (added in driver "
                       "2.30.2): device health from the kernel log only")
    if exposed or any(d.ecc for d in f.device_health):
        details.append(f"sysfs health as documented: {DRIVER_2_30_2_SOURCE}")
    return failures, warnings, details


def _missing_devices(f: Facts) -> str | None:
    """Neuron PCI functions the loaded driver does not show as devices."""
    hw = f.hardware
    if hw.driver_version is None or not hw.pci_devices:
        return None
    if len(hw.sysfs_devices) < len(hw.pci_devices):
        return (f"{len(hw.pci_devices)} Neuron PCI device(s) but the driver shows "
                f"{len(hw.sysfs_devices)} under /sys/class/neuron_device: devices missing")
    return None


@check("hardware.errors", "Neuron hardware errors", gathers=HARDWARE, severity="drain")
def check_hardware_errors(f: Facts) -> CheckOutcome:
    hw = f.hardware
    if not hw.present:
        return CheckOutcome("skip", "no Neuron hardware on this machine: no hardware errors to read")
    failures, details = _log_problems(f)
    sys_failures, warnings, sys_details = _sysfs_problems(f)
    failures += sys_failures
    details += sys_details
    missing = _missing_devices(f)
    if missing:
        failures.append(missing)
    if failures:
        return CheckOutcome("fail", "; ".join(failures[:20]), WHAT_TO_DO, tuple(details), "drain")
    if warnings:
        return CheckOutcome("warn", "; ".join(warnings[:20]),
                       "watch the counters; drain and contact AWS support (with "
                       "`neuronctl bundle`) if they keep rising or an uncorrectable error appears",
                       tuple(details), "info")
    if f.kernel_log.source is None and not any(d.unhealthy is not None for d in f.device_health):
        # absent is not healthy: nothing was read that could show an error
        return CheckOutcome("skip", f"no kernel log readable ({f.kernel_log.problem}) and no sysfs "
                               "health exposed: run as root (or with access to the journal)",
                       None, tuple(details))
    seen = f"{len(f.device_health)} device(s)"
    return CheckOutcome("pass", f"no documented hardware error in the kernel log or sysfs ({seen})",
                   None, tuple(details))
