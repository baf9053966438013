"""The hardware signals, each read from the machine (probes/hardware.py's gather_evidence puts
them together, and decides nothing here): the Amazon PCI functions that are Neuron devices, the
neuron_device sysfs class, /dev/neuron* nodes, whether DMI says Amazon (so IMDS is worth asking),
and neuron-ls in its JSON form. A count read from any of them is bounded (MAX_COUNT).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from neuronctl.chips import AMAZON_PCI_VENDOR, chip_for_pci_device
from neuronctl.probes.neuron_ls import NEURON_LS_FORMS, parse_neuron_ls_json
from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.tools import (
    SYSROOT_TOOLS_REFUSED,
    Runner,
    ToolResult,
    find_neuron_tool,
    sysroot_tools_allowed,
)

if TYPE_CHECKING:
    from neuronctl.probes.imds import ImdsResult


NEURON_LS_TIMEOUT_S = 5.0
MAX_COUNT = 65536
"""The largest core count, device number or NeuronCore config taken from the machine: a bigger
one is not a fact about any Neuron host (and sums of them would be unbounded)."""


class PciDevice(Struct, frozen=True):
    """An Amazon PCI function seen under /sys/bus/pci: its address, device id, chip."""

    address: str
    device_id: str
    chip: str | None


class SysfsDevice(Struct, frozen=True):
    """One neuron_device in sysfs, with what the driver says of it."""

    name: str
    device_name: str | None
    instance_type: str | None
    arch_type: str | None
    core_count: int | None


def json_count(value: object) -> int | None:
    """An integer in 0..MAX_COUNT from JSON (bool is not one)."""
    return value if isinstance(value, int) and not isinstance(value, bool) \
        and 0 <= value <= MAX_COUNT else None


def text_count(text: str | None) -> int | None:
    """An integer in 0..MAX_COUNT from a sysfs file or a variable's text; None for anything else."""
    if text is None or len(text.strip()) > 6:  # past MAX_COUNT's digits: not a count
        return None
    try:
        return json_count(int(text))
    except ValueError:
        return None


def read_pci(root: SysRoot) -> list[PciDevice]:
    devices = []
    for dev in root.glob("/sys/bus/pci/devices", "*"):
        vendor = root.read(dev / "vendor")
        if vendor is None or _int_hex(vendor) != AMAZON_PCI_VENDOR:
            continue
        device = root.read(dev / "device")
        dev_id = _int_hex(device) if device else None
        if dev_id is None:
            continue
        chip = chip_for_pci_device(dev_id)
        # Amazon's vendor id also covers ENA/NVMe devices: keep only Neuron ones.
        if chip is not None:
            devices.append(PciDevice(dev.name, f"0x{dev_id:04x}", chip.id))
    return devices


def _int_hex(text: str) -> int | None:
    try:
        return int(text.strip(), 16)
    except ValueError:
        return None


def read_sysfs_class(root: SysRoot) -> list[SysfsDevice]:
    out = []
    for dev in root.glob("/sys/class/neuron_device", "neuron*"):
        arch = dev / "info" / "architecture"
        out.append(SysfsDevice(
            name=dev.name,
            device_name=root.read(arch / "device_name"),
            instance_type=root.read(arch / "instance_type"),
            arch_type=root.read(arch / "arch_type"),
            core_count=text_count(root.read(dev / "core_count")),
        ))
    return out


def read_dev_nodes(root: SysRoot) -> list[str]:
    return [p.name for p in root.glob("/dev", "neuron*") if p.name[6:].isdigit()]


def parse_neuron_ls(stdout: str) -> list[dict[str, Any]] | None:
    """The device list from either JSON form of neuron-ls: `--json-output` (a list of devices)
    or `--output-format json` (Neuron 2.34+: an object holding that list beside fields about
    the whole instance)."""
    return parse_neuron_ls_json(stdout)


def on_ec2(root: SysRoot) -> bool:
    """Whether DMI names Amazon as the vendor: an EC2 instance, where IMDS answers."""
    for name in ("sys_vendor", "board_vendor", "bios_vendor"):
        value = root.read(f"/sys/class/dmi/id/{name}") or ""
        if "amazon" in value.lower():
            return True
    return False


def ask_imds(root: SysRoot, env: Mapping[str, str], hints: bool,
             imds: Callable[[Mapping[str, str]], ImdsResult] | None) -> ImdsResult | None:
    # Off EC2 the metadata address only costs a timeout: ask only where something hints at it.
    if not (hints or on_ec2(root)):
        return None
    if imds is None:  # urllib.request costs ~50 ms to import; only EC2 hosts ask IMDS
        from neuronctl.probes.imds import imds_instance_type

        imds = imds_instance_type
    return imds(env)


def run_neuron_ls(root: SysRoot, runner: Runner) -> ToolResult | None:
    """neuron-ls in its JSON form: `--output-format json` first (Neuron 2.34 retires the old
    flag), `--json-output` where that gives no JSON (a tool from before 2.34). One run on a
    current tool; where both fail, the old form's answer says why."""
    tool = find_neuron_tool(root, "neuron-ls")
    if tool is None:
        return None
    if not sysroot_tools_allowed(root):
        return ToolResult(None, "", "", SYSROOT_TOOLS_REFUSED)
    result = ToolResult(None, "", "", "not run")
    for _name, flags in NEURON_LS_FORMS:
        result = runner([str(tool), *flags], NEURON_LS_TIMEOUT_S)
        if result.error is None and result.returncode == 0 and \
                parse_neuron_ls(result.stdout) is not None:
            return result
        if result.error is not None and result.error.startswith("timed out"):
            return result  # a hung tool: the other form would hang as long
    return result
