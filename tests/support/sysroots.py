"""Captured-style sysroot trees for hardware that cannot exist here (sysfs, /dev/neuron*, neuron-ls)."""

from __future__ import annotations

import json
from pathlib import Path

CHIP_FACTS = {
    #        pci id   arch    instance  device_name   cores  instance type        nc/device
    "trn3": ("0x7564", "NDv4", "Trn3", "Trainium3", 8, "trn3.48xlarge", 8),
    "trn2": ("0x7364", "NDv3", "Trn2", "Trainium2", 8, "trn2.48xlarge", 4),
    "inf2": ("0x7264", "NDv3", "Inf2", "Inferentia2", 2, "inf2.48xlarge", 2),
    "trn1": ("0x7164", "NDv2", "Trn1", "Trainium1", 2, "trn1.32xlarge", 2),
}

DPKG_TEMPLATE = """Package: bash
Status: install ok installed
Version: 5.2.15-2+b2

Package: aws-neuronx-dkms
Status: install ok installed
Version: {dkms}-1

Package: aws-neuronx-runtime-lib
Status: install ok installed
Version: {runtime}-abc123

Package: aws-neuronx-tools
Status: install ok installed
Version: {tools}-1

Package: aws-neuronx-collectives
Status: deinstall ok config-files
Version: 2.20.22.0-1
"""


def captured(tmp_path: Path) -> Path:
    """An empty captured tree (a sysroot): the proc/ and sys/ a sysroot must hold, nothing else."""
    root = tmp_path / "captured"
    (root / "sys").mkdir(parents=True)
    (root / "proc").mkdir()
    return root


def write(root: Path, path: str, text: str) -> Path:
    p = root / path.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


UBUNTU_26_04 = ('PRETTY_NAME="Ubuntu 26.04 LTS"\nNAME="Ubuntu"\nVERSION_ID="26.04"\n'
                'VERSION="26.04 LTS"\nID=ubuntu\nID_LIKE=debian\n')
UBUNTU_24_04 = ('PRETTY_NAME="Ubuntu 24.04.3 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\n'
                'VERSION="24.04.3 LTS (Noble Numbat)"\nID=ubuntu\nID_LIKE=debian\n')


def build_host(root: Path, chip: str, *, devices: int = 2, driver: str | None = "2.31.8.0",
               runtime: str | None = "2.35.33.0", dkms_pkg: str | None = None,
               sysfs: bool = True, pci: bool = True, dev_nodes: bool = True,
               dmi: bool = True, neuron_ls: bool = True, lnc: int = 2,
               os_release: str | None = UBUNTU_26_04) -> Path:
    """A host set up with the default release (2.33.1: driver 2.31.8.0, runtime 2.35.33.0) on
    Ubuntu 26.04, the one OS its TorchNeuron wheels are for."""
    pci_id, arch, short, name, _cores, instance, nc = CHIP_FACTS[chip]
    root.mkdir(parents=True, exist_ok=True)
    for i in range(devices):
        if pci:
            base = f"/sys/bus/pci/devices/0000:{0xcc + i:02x}:00.0"
            write(root, f"{base}/vendor", "0x1d0f\n")
            write(root, f"{base}/device", f"{pci_id}\n")
        if sysfs:
            base = f"/sys/class/neuron_device/neuron{i}"
            write(root, f"{base}/core_count", f"{nc}\n")
            write(root, f"{base}/connected_devices", "1, 3\n")
            write(root, f"{base}/info/architecture/arch_type", f"{arch}\n")
            write(root, f"{base}/info/architecture/instance_type", f"{short}\n")
            write(root, f"{base}/info/architecture/device_name", f"{name}\n")
        if dev_nodes:
            write(root, f"/dev/neuron{i}", "")
    # An ENA network card shares Amazon's vendor id and must not count as a Neuron device.
    write(root, "/sys/bus/pci/devices/0000:00:05.0/vendor", "0x1d0f\n")
    write(root, "/sys/bus/pci/devices/0000:00:05.0/device", "0xec20\n")
    if driver and (sysfs or pci):
        write(root, "/sys/module/neuron/version", f"{driver}\n")
    if os_release:
        write(root, "/etc/os-release", os_release)
    if dmi:
        write(root, "/sys/class/dmi/id/product_name", f"{instance}\n")
        write(root, "/sys/class/dmi/id/sys_vendor", "Amazon EC2\n")
    if runtime:
        write(root, "/var/lib/dpkg/status", DPKG_TEMPLATE.format(
            dkms=dkms_pkg or driver or "2.31.8.0", runtime=runtime, tools="2.33.38.0"))
    if neuron_ls and driver:
        listing = [{"neuron_device": i, "bdf": f"{0xcc + i:02x}:00.0", "cpu_affinity": "0-47",
                    "numa_node": "0", "connected_to": [1], "nc_count": nc,
                    "logical_neuroncore_config": lnc, "memory_size": 103079215104,
                    "neuroncore_ids": list(range(i * nc, (i + 1) * nc)), "neuron_processes": []}
                   for i in range(devices)]
        tool = write(root, "/opt/aws/neuron/bin/neuron-ls",
                     "#!/bin/sh\ncat <<'JSON'\n" + json.dumps(listing) + "\nJSON\n")
        tool.chmod(0o755)
    elif neuron_ls:
        tool = write(root, "/opt/aws/neuron/bin/neuron-ls",
                     "#!/bin/sh\necho 'Failed to discover neuron devices error=\"Unable to read "
                     "device information from the driver\"' >&2\nexit 1\n")
        tool.chmod(0o755)
    return root


def build_cpu_host(root: Path) -> Path:
    write(root, "/proc/cpuinfo", "model name\t: Test CPU\n")
    write(root, "/sys/class/dmi/id/product_name", "ThinkPad\n")
    return root


def nvidia_host(root: Path, chip: str | None = None) -> Path:
    """A host with NVIDIA's driver loaded (its version file), on a `chip` host fixture or on `root`."""
    host = build_host(root, chip) if chip else root
    (host / "sys/module/nvidia").mkdir(parents=True, exist_ok=True)
    (host / "sys/module/nvidia/version").write_text("580.65.06\n")
    return host
