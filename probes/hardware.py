"""The Neuron hardware picture: chip generation, devices, cores, instance type, with evidence.

Two steps: `gather_evidence` reads the machine (sysfs, PCI, DMI, IMDS, neuron-ls: each read in
hardware_signals.py; dpkg, the runtime library and driver files) and `decide` is a pure function
over what was read, so the decision can be tested over hand-made evidence.

Signals, strongest first: PCI device ids, the neuron_device sysfs class (device_name,
instance_type), DMI product name, IMDSv2. arch_type is reported but never decides: Inf2 and
Trn2 both say NDv3.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from neuronctl.chips import CHIPS, chip_for_device_name, chip_for_instance_type, get_chip
from neuronctl.probes.dpkg import installed_system_packages
from neuronctl.probes.hardware_signals import (
    PciDevice,
    SysfsDevice,
    ask_imds,
    json_count,
    parse_neuron_ls,
    read_dev_nodes,
    read_pci,
    read_sysfs_class,
    run_neuron_ls,
    text_count,
)
from neuronctl.probes.neuron_ls import load_json
from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.tools import Runner, ToolResult, run_tool
from neuronctl.records import asdict

if TYPE_CHECKING:
    from neuronctl.probes.imds import ImdsResult


class Evidence(Struct, frozen=True):
    """One reading that names a chip (a PCI id, a sysfs value, IMDS), kept as the report's proof."""

    source: str
    value: str
    chip: str | None


class HardwareReport(Struct, frozen=True):
    """The Neuron hardware picture: chip, devices, cores, instance type, and the evidence."""

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

    @property
    def cores_kind(self) -> str | None:
        """What `neuron_cores` counts: neuron-ls's nc_count is logical NeuronCores (at its LNC),
        sysfs core_count and the chip table physical ones."""
        if self.neuron_cores is None:
            return None
        return "logical" if self.neuron_cores_source == "neuron-ls nc_count" else "physical"

    @property
    def physical_cores(self) -> int | None:
        if self.neuron_cores is None or self.chip is None:
            return self.neuron_cores if self.cores_kind == "physical" else None
        if self.cores_kind == "physical":
            return self.neuron_cores
        return get_chip(self.chip).physical_cores(self.neuron_cores, self.logical_nc_config)

    @property
    def logical_cores(self) -> int | None:
        if self.neuron_cores is None or self.chip is None:
            return self.neuron_cores if self.cores_kind == "logical" else None
        if self.cores_kind == "logical":
            return self.neuron_cores
        return get_chip(self.chip).logical_cores(self.neuron_cores, self.logical_nc_config)

    def cores_text(self) -> str | None:
        """Physical and logical NeuronCores, each as such, with the LNC setting."""
        if self.neuron_cores is None:
            return None
        phys, logical = self.physical_cores, self.logical_cores
        parts = [f"{phys} physical" if phys is not None else "physical unknown",
                 f"{logical} logical" if logical is not None else "logical unknown"]
        lnc = f" at LNC={self.logical_nc_config}" if self.logical_nc_config else ""
        return f"NeuronCores: {', '.join(parts)}{lnc} (from {self.neuron_cores_source})"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["present"] = self.present
        data["supports"] = get_chip(self.chip).supports() if self.chip else None
        data.update(neuron_cores_kind=self.cores_kind, physical_cores=self.physical_cores,
                    logical_cores=self.logical_cores)
        return data


_RUNTIME_VERSION = re.compile(r"[0-9][0-9A-Za-z.+~-]{0,63}")


def _neuron_ls_top(stdout: str) -> dict[str, Any]:
    """The new form's instance-wide scalar fields (none in the old form)."""
    data = load_json(stdout)
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, (str, int, float)) and len(k) < 100}


class HardwareEvidence(Struct, frozen=True):
    """Everything read from the machine; `decide` turns it into a HardwareReport."""

    pci_devices: tuple[PciDevice, ...] = ()
    sysfs_devices: tuple[SysfsDevice, ...] = ()
    dev_nodes: tuple[str, ...] = ()
    dmi_product: str | None = None
    imds: ImdsResult | None = None
    """None when IMDS was not asked (DMI named the instance, or nothing hints at EC2)."""
    neuron_ls: ToolResult | None = None
    """None when neuron-ls is not installed."""
    system_packages: Mapping[str, str] = field(default_factory=dict)
    runtime_libraries: tuple[str, ...] = ()
    """libnrt.so.X.Y files under /opt/aws/neuron/lib, as shown on the inspected system."""
    driver_version: str | None = None
    logical_nc_config_env: str | None = None


def gather_evidence(
    root: SysRoot,
    env: Mapping[str, str] | None = None,
    runner: Runner = run_tool,
    imds: Callable[[Mapping[str, str]], ImdsResult] | None = None,
) -> HardwareEvidence:
    """Read the machine (the side effects of hardware detection), nothing decided yet."""
    env = os.environ if env is None else env
    pci, sysfs, nodes = read_pci(root), read_sysfs_class(root), read_dev_nodes(root)
    product = root.read("/sys/class/dmi/id/product_name")
    named = bool(product and "." in product)
    return HardwareEvidence(
        pci_devices=tuple(pci), sysfs_devices=tuple(sysfs), dev_nodes=tuple(nodes),
        dmi_product=product,
        imds=None if named else ask_imds(root, env, bool(pci or sysfs or nodes), imds),
        neuron_ls=run_neuron_ls(root, runner),
        system_packages=installed_system_packages(root),
        runtime_libraries=tuple(root.display(p)
                                for p in root.glob("/opt/aws/neuron/lib", "libnrt.so.*.*")),
        driver_version=root.read("/sys/module/neuron/version"),
        logical_nc_config_env=env.get("NEURON_LOGICAL_NC_CONFIG"),
    )


def detect_hardware(
    root: SysRoot,
    env: Mapping[str, str] | None = None,
    runner: Runner = run_tool,
    imds: Callable[[Mapping[str, str]], ImdsResult] | None = None,
) -> HardwareReport:
    return decide(gather_evidence(root, env, runner, imds))


def _with_chip(source: str, value: str, chip: Any) -> Evidence:
    return Evidence(source, value, chip.id if chip else None)


def _chip_evidence(ev: HardwareEvidence) -> tuple[list[Evidence], str | None, str | None]:
    """The evidence list (strongest first) and the instance type with its source."""
    evidence = [Evidence(f"pci {d.address}", f"device {d.device_id}", d.chip)
                for d in ev.pci_devices]
    for sd in ev.sysfs_devices:
        if sd.device_name:
            evidence.append(_with_chip(f"sysfs {sd.name} device_name", sd.device_name,
                                       chip_for_device_name(sd.device_name)))
        if sd.instance_type:
            evidence.append(_with_chip(f"sysfs {sd.name} instance_type", sd.instance_type,
                                       chip_for_instance_type(sd.instance_type)))
    instance_type, instance_source = None, None
    if ev.dmi_product and "." in ev.dmi_product:
        instance_type, instance_source = ev.dmi_product, "DMI product_name"
        evidence.append(_with_chip("DMI product_name", ev.dmi_product,
                                   chip_for_instance_type(ev.dmi_product)))
    elif ev.imds is not None and ev.imds.instance_type:
        instance_type, instance_source = ev.imds.instance_type, ev.imds.detail
        evidence.append(_with_chip(ev.imds.detail, ev.imds.instance_type,
                                   chip_for_instance_type(ev.imds.instance_type)))
    # arch_type never decides (NDv3 is both Inf2 and Trn2); keep it as evidence only.
    for sd in ev.sysfs_devices[:1]:
        if sd.arch_type:
            evidence.append(Evidence(f"sysfs {sd.name} arch_type", sd.arch_type, None))
            if not any(c.arch_type == sd.arch_type for c in CHIPS):
                evidence.append(Evidence("note", f"unknown arch_type {sd.arch_type}", None))
    return evidence, instance_type, instance_source


def _conflicts(evidence: list[Evidence], chip: str | None,
               sysfs: tuple[SysfsDevice, ...]) -> list[str]:
    conflicts = sorted({f"{e.source} says {e.chip}" for e in evidence if e.chip and e.chip != chip})
    if chip and sysfs and sysfs[0].arch_type:
        expected = get_chip(chip).arch_type
        if sysfs[0].arch_type != expected:
            conflicts.append(f"sysfs arch_type {sysfs[0].arch_type} does not fit {chip} ({expected})")
    return conflicts


def _neuron_ls_outcome(res: ToolResult | None) -> tuple[str, list[dict[str, Any]] | None]:
    if res is None:
        return "absent", None
    if res.error:
        return res.error, None
    if res.returncode != 0:
        last = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["failed"]
        return f"exit {res.returncode}: {last[0][:200]}", None
    devices = parse_neuron_ls(res.stdout)
    return ("ok" if devices is not None else "unreadable JSON output"), devices


def _cores(ev: HardwareEvidence, ls_devices: list[dict[str, Any]] | None, chip: str | None,
           device_count: int) -> tuple[int | None, str | None, int | None]:
    """NeuronCores with their source, and the logical NeuronCore config."""
    cores, source = None, None
    lnc = text_count(ev.logical_nc_config_env)
    if ls_devices:
        counts = [json_count(d.get("nc_count")) for d in ls_devices]
        if all(c is not None for c in counts):
            cores, source = sum(c or 0 for c in counts), "neuron-ls nc_count"
        cfg = ls_devices[0].get("logical_neuroncore_config")
        if cfg is None and ev.neuron_ls is not None:  # the new form says it once, at the top
            cfg = _neuron_ls_top(ev.neuron_ls.stdout).get("logical_neuroncore_config")
        lnc = json_count(cfg) if isinstance(cfg, int) else text_count(cfg) if isinstance(cfg, str) else lnc
    sysfs = ev.sysfs_devices
    if cores is None and sysfs and all(s.core_count is not None for s in sysfs):
        cores, source = sum(s.core_count or 0 for s in sysfs), "sysfs core_count"
    if cores is None and chip and device_count:
        cores, source = device_count * get_chip(chip).cores_per_chip, "chip table (physical cores)"
    return cores, source, lnc


def _runtime(ev: HardwareEvidence,
             ls_devices: list[dict[str, Any]] | None) -> tuple[str | None, str | None]:
    runtime = ev.system_packages.get("aws-neuronx-runtime-lib")
    if runtime:
        return runtime, "dpkg"
    for lib in ev.runtime_libraries[:1]:
        return lib.rsplit("/", 1)[-1].removeprefix("libnrt.so."), lib
    found: tuple[str | None, str | None] = (None, None)
    for entry in ls_devices or []:
        procs = entry.get("neuron_processes")
        for proc in procs if isinstance(procs, list) else []:  # `true` from a hostile neuron-ls
            version = proc.get("neuron_runtime_version") if isinstance(proc, dict) else None
            if isinstance(version, str) and _RUNTIME_VERSION.fullmatch(version):
                found = version, "neuron-ls"
    return found


def decide(ev: HardwareEvidence) -> HardwareReport:
    """The hardware picture from the evidence alone: no file, process or network is touched."""
    evidence, instance_type, instance_source = _chip_evidence(ev)
    decided = [e.chip for e in evidence if e.chip]
    chip = decided[0] if decided else None
    ls_state, ls_devices = _neuron_ls_outcome(ev.neuron_ls)
    device_count = max(len(ev.pci_devices), len(ev.sysfs_devices), len(ev.dev_nodes),
                       len(ls_devices or []))
    cores, cores_source, lnc = _cores(ev, ls_devices, chip, device_count)
    runtime, runtime_source = _runtime(ev, ls_devices)
    return HardwareReport(
        chip=chip, chip_name=get_chip(chip).name if chip else None, evidence=tuple(evidence),
        conflicts=tuple(_conflicts(evidence, chip, ev.sysfs_devices)),
        pci_devices=ev.pci_devices, sysfs_devices=ev.sysfs_devices, dev_nodes=ev.dev_nodes,
        device_count=device_count, neuron_cores=cores, neuron_cores_source=cores_source,
        logical_nc_config=lnc, instance_type=instance_type, instance_type_source=instance_source,
        driver_version=ev.driver_version, runtime_version=runtime, runtime_source=runtime_source,
        tools_version=ev.system_packages.get("aws-neuronx-tools"),
        system_packages=ev.system_packages, neuron_ls=ls_state,
    )
