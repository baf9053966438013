"""Sysroot fixtures for `neuronctl setup`: hosts on each OS setup plans for, a bare host (no
Neuron package yet), a kernel without headers, mixed aws-neuron-*/aws-neuronx-* generations, a
held device, a container host, an Inf1 host."""

from __future__ import annotations

import os
from pathlib import Path

from neuronctl.ops.setup.facts import read_target
from neuronctl.ops.setup.model import SetupPlan, SetupRequest
from neuronctl.ops.setup.plan import make_plan
from neuronctl.release.manifest import load_bundled_manifest
from neuronctl.release.model import Release
from support.sysroots import CHIP_FACTS, write

KERNEL = "6.8.0-1015-aws"
SETUP_RELEASE = "2.33.1"  # the release the setup tests plan for
OS_RELEASES = {
    "ubuntu-22.04": ('PRETTY_NAME="Ubuntu 22.04.5 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\n'
                     'VERSION_CODENAME=jammy\nID=ubuntu\nID_LIKE=debian\n'),
    "ubuntu-24.04": ('PRETTY_NAME="Ubuntu 24.04.3 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\n'
                     'VERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\n'),
    "ubuntu-26.04": ('PRETTY_NAME="Ubuntu 26.04 LTS"\nNAME="Ubuntu"\nVERSION_ID="26.04"\n'
                     'VERSION_CODENAME=resolute\nID=ubuntu\nID_LIKE=debian\n'),
    "al2023": ('NAME="Amazon Linux"\nVERSION="2023"\nID="amzn"\nID_LIKE="fedora"\n'
               'VERSION_ID="2023"\nPRETTY_NAME="Amazon Linux 2023.6.20241212"\n'),
}


def dpkg_status(packages: dict[str, str], held: tuple[str, ...] = ()) -> str:
    """A dpkg status file holding `packages` (name -> Debian version), `held` ones on hold."""
    stanzas = ["Package: bash\nStatus: install ok installed\nVersion: 5.2.21-2ubuntu4\n"]
    for name, version in packages.items():
        want = "hold" if name in held else "install"
        stanzas.append(f"Package: {name}\nStatus: {want} ok installed\nVersion: {version}\n"
                       "Architecture: all\n")
    return "\n".join(stanzas)


def build_setup_host(root: Path, os_id: str = "ubuntu-26.04", *, chip: str | None = "trn2",
                     devices: int = 2, kernel: str = KERNEL, headers: bool = True,
                     packages: dict[str, str] | None = None, held: tuple[str, ...] = (),
                     loaded_driver: str | None = None, container_host: bool = False) -> Path:
    """A host as setup sees it: os-release, kernel, Neuron PCI devices and /dev nodes, its
    packages (dpkg status on Ubuntu; none recorded on AL2023), headers present or not."""
    root.mkdir(parents=True, exist_ok=True)
    write(root, "/etc/os-release", OS_RELEASES[os_id])
    write(root, "/proc/sys/kernel/osrelease", kernel + "\n")
    write(root, "/proc/cpuinfo", "model name\t: Test CPU\n")
    if chip:
        pci_id = CHIP_FACTS[chip][0] if chip in CHIP_FACTS else "0x7064"
        for i in range(devices):
            base = f"/sys/bus/pci/devices/0000:{0xcc + i:02x}:00.0"
            write(root, f"{base}/vendor", "0x1d0f\n")
            write(root, f"{base}/device", f"{pci_id}\n")
            write(root, f"/dev/neuron{i}", "")
    if headers:
        write(root, f"/usr/src/linux-headers-{kernel}/Makefile", "# headers\n")
    if os_id.startswith("ubuntu"):
        for d in ("info", "updates", "triggers"):
            (root / "var/lib/dpkg" / d).mkdir(parents=True, exist_ok=True)
        write(root, "/var/lib/dpkg/status", dpkg_status(packages or {}, held))
    if loaded_driver:
        write(root, "/sys/module/neuron/version", loaded_driver + "\n")
    if container_host:
        write(root, "/usr/bin/docker", "#!/bin/sh\n").chmod(0o755)
    return root


def hold_device(root: Path, pid: int = 4242, command: str = "python3 train.py",
                device: str = "neuron0") -> Path:
    """A process of the captured tree holding /dev/<device> open (fd 7)."""
    proc = root / "proc" / str(pid)
    (proc / "fd").mkdir(parents=True, exist_ok=True)
    os.symlink(f"/dev/{device}", proc / "fd" / "7")
    write(root, f"/proc/{pid}/cmdline", command.replace(" ", "\0") + "\0")
    write(root, f"/proc/{pid}/status", "Name:\tpython3\nState:\tS (sleeping)\nPPid:\t1\n")
    write(root, "/proc/1/status", "Name:\tsystemd\nState:\tS (sleeping)\nPPid:\t0\n")
    return root


MIXED_GENERATIONS = {"aws-neuron-dkms": "1.5.0.0", "aws-neuron-tools": "1.6.1.0",
                     "aws-neuronx-dkms": "2.30.2.0", "aws-neuronx-runtime-lib": "2.34.10.0-1"}


def plan_for(root: Path | None, os_name: str | None = None, *,
             release: Release | str = SETUP_RELEASE, **kw: object) -> SetupPlan:
    """setup's plan for the host fixture at `root` (or a named OS), for a release of the bundled data."""
    chosen = load_bundled_manifest().get(release) if isinstance(release, str) else release
    target, facts = read_target(root, os_name)
    return make_plan(SetupRequest(chosen, target, facts, **kw))  # type: ignore[arg-type]
