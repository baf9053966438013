"""What each Neuron device's driver says of its health, read from sysfs under a SysRoot.

Layout (each device's directory /sys/class/neuron_device/neuronN/):
- `stats/hardware/health_status/unhealthy_components`: added in driver 2.30.2 (Neuron 2.32.0),
  https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/release-notes/components/runtime.rst
  (Neuron 2.32.0 Driver section). Older drivers have no such file: their health is "not
  exposed", never "healthy".
- `sram_ecc_corrected`, `mem_ecc_corrected`: added in the same driver (Trn2, Trn3). The source
  names them but not their directory, and driver 2.31 moved sysfs nodes
  (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/tools/neuron-sys-tools/neuron-sysfs-user-guide.html):
  so they are looked for by their documented names anywhere below the device's `stats/hardware/`
  (at most MAX_DEPTH levels, MAX_ENTRIES entries), never at an assumed path.

Only reading here; the judging is in ops/doctor/health_rules.py.
"""

from __future__ import annotations

from pathlib import Path

from msgspec import Struct, field

from neuronctl.probes.sysroot import SysRoot

HEALTH_FILE = "stats/hardware/health_status/unhealthy_components"
ECC_COUNTERS = ("sram_ecc_corrected", "mem_ecc_corrected")
MAX_DEVICES = 256
MAX_DEPTH = 3
MAX_ENTRIES = 512
MAX_VALUE_BYTES = 4096


class DeviceHealth(Struct, frozen=True):
    """One device's sysfs health: its unhealthy components (None: the driver does not expose
    them) and its corrected-ECC counters found by name."""

    name: str
    unhealthy: tuple[str, ...] | None
    ecc: dict[str, int] = field(default_factory=dict)
    unreadable: tuple[str, ...] = ()
    """Counter files found whose value is not a count (shown, never taken as 0)."""


def parse_components(text: str) -> tuple[str, ...]:
    """The components a health file lists (separated by commas, spaces or lines), each kept to
    a short printable token."""
    tokens = text.replace(",", " ").split()
    out = []
    for token in tokens[:64]:
        clean = "".join(c if c.isalnum() or c in "_-." else "?" for c in token)[:64]
        if clean and clean.lower() not in ("none", "(none)", "healthy"):
            out.append(clean)
    return tuple(out)


def _find_counters(root: SysRoot, base: Path) -> dict[str, Path]:
    """The ECC counter files by name below `base`, breadth-first, bounded."""
    found: dict[str, Path] = {}
    level, seen = [base], 0
    for _depth in range(MAX_DEPTH + 1):
        following: list[Path] = []
        for directory in level:
            for entry in root.glob(root.display(directory), "*"):
                seen += 1
                if seen > MAX_ENTRIES:
                    return found
                if entry.name in ECC_COUNTERS and entry.name not in found:
                    found[entry.name] = entry
                elif entry.is_dir() and not entry.is_symlink():
                    following.append(entry)
        level = following
    return found


def read_device_health(root: SysRoot) -> tuple[DeviceHealth, ...]:
    """Each neuron_device's health as its driver exposes it."""
    devices = [d for d in root.glob("/sys/class/neuron_device", "neuron*")
               if d.name[6:].isdigit() and len(d.name) <= 12][:MAX_DEVICES]
    devices.sort(key=lambda d: int(d.name[6:]))
    out = []
    for dev in devices:
        text = root.read_text(dev / HEALTH_FILE, MAX_VALUE_BYTES)
        unhealthy = None if text is None else parse_components(text)
        ecc: dict[str, int] = {}
        unreadable = []
        stats = dev / "stats" / "hardware"
        if root.inside(stats) and stats.is_dir():
            for name, path in sorted(_find_counters(root, stats).items()):
                value = (root.read(path, 64) or "").strip()
                if value.isascii() and value.isdigit() and len(value) <= 19:
                    ecc[name] = int(value)
                else:
                    unreadable.append(name)
        out.append(DeviceHealth(dev.name, unhealthy, ecc, tuple(unreadable)))
    return tuple(out)
