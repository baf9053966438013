"""The documented Neuron hardware-error signals as data, and the pure matching over what was read.

Nothing here reads the machine: probes/kernel_log.py and probes/device_health.py do, and the
`hardware.errors` check (checks_health.py) joins the two.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from msgspec import Struct

if TYPE_CHECKING:  # a type only: the kernel log's reader is the probe's, loaded where it reads
    from neuronctl.probes.kernel_log import LogLine

NPD_CONFIG_SOURCE = ("https://github.com/aws-neuron/aws-neuron-sdk/blob/"
                     "81ce03ae261e12925e53437a0f690478e6366155/src/k8/neuron-problem-detector/"
                     "k8s-neuron-problem-detector-and-recovery-config.yml")
DRIVER_2_30_2_SOURCE = ("https://github.com/aws-neuron/aws-neuron-sdk/blob/"
                        "81ce03ae261e12925e53437a0f690478e6366155/release-notes/components/"
                        "runtime.rst (Neuron 2.32.0 Driver section)")

HW_ERROR_CODES: dict[str, str] = {
    # code -> the reason AWS's node-problem-detector sets (kernel-monitor.json, every rule
    # "permanent"): NPD_CONFIG_SOURCE
    "SRAM_UNCORRECTABLE_ERROR": "NeuronHasError_SRAM_UNCORRECTABLE_ERROR",
    "NC_UNCORRECTABLE_ERROR": "NeuronHasError_NC_UNCORRECTABLE_ERROR",
    "HBM_UNCORRECTABLE_ERROR": "NeuronHasError_HBM_UNCORRECTABLE_ERROR",
    "DMA_ERROR": "NeuronHasError_DMA_ERROR",
}
UNHEALTHY_COMPONENTS: tuple[str, ...] = (
    # the values of stats/hardware/health_status/unhealthy_components: DRIVER_2_30_2_SOURCE
    "hbm", "sram", "firmware_service_api", "firmware_service_processor", "link_intraserver",
    "link_host", "link_efa", "link_interserver", "link_switch", "axi_fabric",
)
ECC_CORRECTED_WARN = 1000
"""Corrected ECC errors on one counter above which `hardware.errors` warns. AWS documents the
counters (DRIVER_2_30_2_SOURCE) but no threshold: this one is neuronctl's, a count past which a
device is worth watching, not yet a reason to drain it."""

# NPD's patterns are `.* NEURON_HW_ERR=<CODE> .*`: the token stands alone, space before and after
# (the end of the message counts as after). Not `FOO_NEURON_HW_ERR=...`, not `...=DMA_ERROR_X`.
_HW_ERR = re.compile(r"(?:^|(?<=\s))NEURON_HW_ERR=(" + "|".join(HW_ERROR_CODES) + r")(?=\s|$)")
# How the driver names a device in its messages: "nd 0" (its own log lines, e.g. the 2.7.33.0
# release note's "nd 0, src ...") or "neuron0".
_DEVICE = re.compile(r"(?<![A-Za-z0-9_])(?:nd\s?(\d{1,3})|neuron(\d{1,3}))(?![A-Za-z0-9_])")


class HwErrorHit(Struct, frozen=True):
    """One documented hardware error code seen in the kernel log: on which device, how often."""

    code: str
    device: str | None
    count: int
    last: str
    """The newest matching line, as read (printable, bounded)."""


def device_of(text: str) -> str | None:
    match = _DEVICE.search(text)
    if match is None:
        return None
    return f"neuron{match.group(1) or match.group(2)}"


def within_lookback(lines: Iterable[LogLine], lookback_s: float | None,
                    newest_s: float | None) -> list[LogLine]:
    """The lines no older than `lookback_s` before `newest_s` (the uptime, or the newest line's
    time); all of them without a lookback. A line without a time is kept: it cannot be shown
    to be older."""
    kept = list(lines)
    if lookback_s is None:
        return kept
    if newest_s is None:
        times = [line.since_boot_s for line in kept if line.since_boot_s is not None]
        newest_s = max(times, default=None)
    if newest_s is None:
        return kept
    start = newest_s - lookback_s
    return [line for line in kept if line.since_boot_s is None or line.since_boot_s >= start]


def match_hw_errors(lines: Iterable[LogLine]) -> list[HwErrorHit]:
    """The documented NEURON_HW_ERR codes in `lines`, counted by code and device."""
    counts: Counter[tuple[str, str | None]] = Counter()
    last: dict[tuple[str, str | None], str] = {}
    for line in lines:
        for match in _HW_ERR.finditer(line.text):
            key = (match.group(1), device_of(line.text))
            counts[key] += 1
            last[key] = line.text
    return [HwErrorHit(code, device, n, last[(code, device)])
            for (code, device), n in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))]


def ecc_over(ecc: dict[str, int], threshold: int = ECC_CORRECTED_WARN) -> dict[str, int]:
    return {name: value for name, value in ecc.items() if value > threshold}
