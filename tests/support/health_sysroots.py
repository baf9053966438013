"""Sysroot pieces for the health checks (issue 27): kernel logs, sysfs device health in both
driver generations, compile caches, container images, EFA devices. Built on tests/support/sysroots.py."""

from __future__ import annotations

import os
from pathlib import Path

from support.sysroots import write

BANNER = "Linux version 6.8.0-1015-aws (buildd@lcy02) (gcc 13.2.0) #16-Ubuntu SMP"
HW_LINES = {
    "SRAM_UNCORRECTABLE_ERROR": "neuron: nd 0: NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR instance=i-0",
    "NC_UNCORRECTABLE_ERROR": "neuron: nd 1: NEURON_HW_ERR=NC_UNCORRECTABLE_ERROR nc=3",
    "HBM_UNCORRECTABLE_ERROR": "neuron: neuron1 NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR",
    "DMA_ERROR": "neuron: nd 0: NEURON_HW_ERR=DMA_ERROR",
}
LOOKALIKES = (
    # code-like strings in other contexts: none of these is the documented token
    "audit: cmd=\"echo FOO_NEURON_HW_ERR=DMA_ERROR\"",
    "neuron: nd 0: NEURON_HW_ERR=DMA_ERROR_INJECTED test",
    "neuron: nd 0: NEURON_HW_ERR=HBM_UNCORRECTABLE_ERRORS",
    "neuron: nd 0: xNEURON_HW_ERR=NC_UNCORRECTABLE_ERROR",
    "neuron: nd 0: NEURON_HW_ERR=SRAM_CORRECTABLE_ERROR",
    "neuron: nd 0: neuron_hw_err=dma_error",
)
NOT_KERNEL = ("2026-12-01T20:00:01.000000+00:00 ip-10-0-0-1 sshd[811]: Invalid user "
              "NEURON_HW_ERR=DMA_ERROR from 203.0.113.7 port 4242")
"""A syslog line from another program that a remote user can fill: not the kernel's."""


def kern_log_line(seconds: float, message: str, host: str = "ip-10-0-0-1") -> str:
    return f"2026-12-01T20:00:00.000000+00:00 {host} kernel: [{seconds:12.6f}] {message}"


def dmesg_line(seconds: float, message: str) -> str:
    return f"[{seconds:12.6f}] {message}"


def add_kernel_log(root: Path, messages: list[str], *, name: str = "/var/log/kern.log",
                   start: float = 1.0, step: float = 1.0, boot: bool = True) -> Path:
    fmt = kern_log_line if name.endswith("kern.log") else dmesg_line
    lines = [fmt(0.0, BANNER)] if boot else []
    lines += [fmt(start + i * step, m) for i, m in enumerate(messages)]
    return write(root, name, "\n".join(lines) + "\n")


def add_health(root: Path, device: int, components: str | None,
               ecc: dict[str, str] | None = None, ecc_dir: str = "stats/hardware") -> None:
    """Driver 2.30.2+: stats/hardware/health_status/unhealthy_components (components None: an
    older driver, no such file); corrected-ECC counters by their documented names."""
    base = f"/sys/class/neuron_device/neuron{device}"
    if components is not None:
        write(root, f"{base}/stats/hardware/health_status/unhealthy_components", components)
    for name, value in (ecc or {}).items():
        write(root, f"{base}/{ecc_dir}/{name}", value)


def sparse_log(path: Path, size: int, tail: str) -> None:
    """A file of `size` bytes, all holes except `tail` at its end (no disk used)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = tail.encode()
    with path.open("wb") as fh:
        fh.truncate(size - len(data))
        fh.seek(size - len(data))
        fh.write(data)
    assert os.path.getsize(path) == size


def build_container(root: Path, *, host_driver: str, devices: int = 4, passed: int = 2,
                    runtime: str = "2.35.33.0") -> Path:
    """Inside a container on a Trn2 host: the host's sysfs (all `devices`, its loaded driver),
    only `passed` /dev/neuron* nodes, /.dockerenv, the image's runtime library in its dpkg."""
    from support.sysroots import build_host

    build_host(root, "trn2", devices=devices, driver=host_driver, runtime=runtime,
               dmi=False, neuron_ls=False)
    for i in range(passed, devices):
        (root / f"dev/neuron{i}").unlink()
    write(root, "/.dockerenv", "")
    write(root, "/proc/1/cgroup", "0::/system.slice/docker-0123abcd.scope\n")
    return root


def add_efa(root: Path, count: int, *, libfabric: str | None = "1.22.0amzn4.0",
            collectives: str | None = "2.35.49.0", other: int = 0) -> None:
    """`count` EFA devices (device/driver linking to the efa driver), `other` RDMA devices of
    another driver, and libfabric / aws-neuronx-collectives as installed dpkg packages."""
    for i in range(count + other):
        base = root / f"sys/class/infiniband/rdmap{i}s{16 + i}/device"
        base.mkdir(parents=True, exist_ok=True)
        os.symlink(f"../../../bus/pci/drivers/{'efa' if i < count else 'mlx5_core'}",
                   base / "driver")
    status = root / "var/lib/dpkg/status"
    text = status.read_text() if status.exists() else ""
    for name, version in (("libfabric-aws", libfabric), ("aws-neuronx-collectives", collectives)):
        if version:
            text += f"\nPackage: {name}\nStatus: install ok installed\nVersion: {version}-1\n"
    write(root, "/var/lib/dpkg/status", text)
