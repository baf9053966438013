"""The Neuron hardware picture: chip generation, devices, cores, instance type, with evidence.

Signals, strongest first: PCI device ids, the neuron_device sysfs class (device_name,
instance_type), DMI product name, IMDSv2. arch_type is reported but never decides: Inf2 and
Trn2 both say NDv3.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from neuronctl.chips import (
    AMAZON_PCI_VENDOR,
    CHIPS,
    chip_for_device_name,
    chip_for_instance_type,
    chip_for_pci_device,
    get_chip,
)
from neuronctl.probes.dpkg import installed_system_packages
from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.tools import Runner, find_neuron_tool, run_tool

if TYPE_CHECKING:
    from neuronctl.probes.imds import ImdsResult


@dataclass(frozen=True)
class Evidence:
    source: str
    value: str
    chip: str | None


@dataclass(frozen=True)
class PciDevice:
    address: str
    device_id: str
    chip: str | None


@dataclass(frozen=True)
class SysfsDevice:
    name: str
    device_name: str | None
    instance_type: str | None
    arch_type: str | None
    core_count: int | None


@dataclass(frozen=True)
class HardwareReport:
    chip: str | None
    chip_name: str | None
    evidence: tuple[Evidence, ...]
    conflicts: tuple[str, ...]
    pci_devices: tuple[PciDevice, ...]
    sysfs_devices: tuple[SysfsDevice, ...]
    dev_nodes: tuple[str, ...]
    device_count: int
    neuron_cores: int | None
    neuron_cores_source: str | None
    logical_nc_config: int | None
    instance_type: str | None
    instance_type_source: str | None
    driver_version: str | None
    runtime_version: str | None
    runtime_source: str | None
    tools_version: str | None
    system_packages: Mapping[str, str] = field(default_factory=dict)
    neuron_ls: str | None = None
    """How neuron-ls went: "ok", "absent", or its error."""

    @property
    def present(self) -> bool:
        return bool(self.pci_devices or self.sysfs_devices or self.dev_nodes or self.chip)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["present"] = self.present
        data["supports"] = get_chip(self.chip).supports() if self.chip else None
        return data


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
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
            core_count=_int(root.read(dev / "core_count")),
        ))
    return out


def read_dev_nodes(root: SysRoot) -> list[str]:
    return [p.name for p in root.glob("/dev", "neuron*") if p.name[6:].isdigit()]


def parse_neuron_ls(stdout: str) -> list[dict[str, Any]] | None:
    try:
        data = json.loads(stdout)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        return None
    return data


def _on_ec2(root: SysRoot) -> bool:
    for name in ("sys_vendor", "board_vendor", "bios_vendor"):
        value = root.read(f"/sys/class/dmi/id/{name}") or ""
        if "amazon" in value.lower():
            return True
    return False


def detect_hardware(
    root: SysRoot,
    env: Mapping[str, str] | None = None,
    runner: Runner = run_tool,
    imds: Callable[[Mapping[str, str]], ImdsResult] | None = None,
) -> HardwareReport:
    env = os.environ if env is None else env
    evidence: list[Evidence] = []
    pci = read_pci(root)
    for dev in pci:
        evidence.append(Evidence(f"pci {dev.address}", f"device {dev.device_id}", dev.chip))
    sysfs = read_sysfs_class(root)
    for sd in sysfs:
        if sd.device_name:
            c = chip_for_device_name(sd.device_name)
            evidence.append(Evidence(f"sysfs {sd.name} device_name", sd.device_name,
                                     c.id if c else None))
        if sd.instance_type:
            c = chip_for_instance_type(sd.instance_type)
            evidence.append(Evidence(f"sysfs {sd.name} instance_type", sd.instance_type,
                                     c.id if c else None))
    nodes = read_dev_nodes(root)

    instance_type, instance_source = None, None
    product = root.read("/sys/class/dmi/id/product_name")
    if product and "." in product:
        instance_type, instance_source = product, "DMI product_name"
        c = chip_for_instance_type(product)
        evidence.append(Evidence("DMI product_name", product, c.id if c else None))
    if instance_type is None and (pci or sysfs or nodes or _on_ec2(root)):
        if imds is None:  # urllib.request costs ~50 ms to import; only EC2 hosts ask IMDS
            from neuronctl.probes.imds import imds_instance_type

            imds = imds_instance_type
        result = imds(env)
        if result.instance_type:
            instance_type, instance_source = result.instance_type, result.detail
            c = chip_for_instance_type(result.instance_type)
            evidence.append(Evidence(result.detail, result.instance_type, c.id if c else None))

    # arch_type never decides (NDv3 is both Inf2 and Trn2); keep it as evidence only.
    for sd in sysfs[:1]:
        if sd.arch_type:
            matches = [c.id for c in CHIPS if c.arch_type == sd.arch_type]
            evidence.append(Evidence(f"sysfs {sd.name} arch_type", sd.arch_type, None))
            if not matches:
                evidence.append(Evidence("note", f"unknown arch_type {sd.arch_type}", None))

    decided = [e.chip for e in evidence if e.chip]
    chip = decided[0] if decided else None
    conflicts = sorted({f"{e.source} says {e.chip}" for e in evidence if e.chip and e.chip != chip})
    if chip and sysfs and sysfs[0].arch_type:
        expected = get_chip(chip).arch_type
        if sysfs[0].arch_type != expected:
            conflicts.append(f"sysfs arch_type {sysfs[0].arch_type} does not fit {chip} ({expected})")

    ls_state, ls_devices = "absent", None
    tool = find_neuron_tool(root, "neuron-ls")
    if tool is not None:
        res = runner([str(tool), "--json-output"], 5.0)
        if res.error:
            ls_state = res.error
        elif res.returncode != 0:
            last = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["failed"]
            ls_state = f"exit {res.returncode}: {last[0][:200]}"
        else:
            ls_devices = parse_neuron_ls(res.stdout)
            ls_state = "ok" if ls_devices is not None else "unreadable JSON output"

    device_count = max(len(pci), len(sysfs), len(nodes), len(ls_devices or []))
    cores, cores_source = None, None
    lnc = _int(env.get("NEURON_LOGICAL_NC_CONFIG"))
    if ls_devices:
        counts = [d.get("nc_count") for d in ls_devices]
        if all(isinstance(c, int) for c in counts):
            cores, cores_source = sum(counts), "neuron-ls nc_count"  # type: ignore[arg-type]
        cfg = ls_devices[0].get("logical_neuroncore_config")
        lnc = cfg if isinstance(cfg, int) else _int(str(cfg)) if cfg is not None else lnc
    if cores is None and sysfs and all(s.core_count is not None for s in sysfs):
        cores, cores_source = sum(s.core_count or 0 for s in sysfs), "sysfs core_count"
    if cores is None and chip and device_count:
        cores = device_count * get_chip(chip).cores_per_chip
        cores_source = "chip table (physical cores)"

    packages = installed_system_packages(root)
    runtime = packages.get("aws-neuronx-runtime-lib")
    runtime_source: str | None = "dpkg" if runtime else None
    if runtime is None:
        for lib in root.glob("/opt/aws/neuron/lib", "libnrt.so.*.*"):
            runtime, runtime_source = lib.name.removeprefix("libnrt.so."), root.display(lib)
            break
    if runtime is None:
        for entry in ls_devices or []:
            for proc in entry.get("neuron_processes") or []:
                if isinstance(proc, dict) and proc.get("neuron_runtime_version"):
                    runtime, runtime_source = str(proc["neuron_runtime_version"]), "neuron-ls"

    chip_name = get_chip(chip).name if chip else None
    return HardwareReport(
        chip=chip, chip_name=chip_name, evidence=tuple(evidence), conflicts=tuple(conflicts),
        pci_devices=tuple(pci), sysfs_devices=tuple(sysfs), dev_nodes=tuple(nodes),
        device_count=device_count, neuron_cores=cores, neuron_cores_source=cores_source,
        logical_nc_config=lnc, instance_type=instance_type, instance_type_source=instance_source,
        driver_version=root.read("/sys/module/neuron/version"),
        runtime_version=runtime, runtime_source=runtime_source,
        tools_version=packages.get("aws-neuronx-tools"), system_packages=packages,
        neuron_ls=ls_state,
    )
