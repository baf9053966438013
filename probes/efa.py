"""EFA (Elastic Fabric Adapter) devices and the libfabric packages, read under a SysRoot.

- EFA devices: the RDMA devices under /sys/class/infiniband/ whose `device/driver` link names
  the `efa` kernel driver (the link's last component only; the link is read, never followed).
- libfabric: the installed dpkg packages whose name starts with "libfabric" (the EFA installer's
  libfabric build), as the doctor's dpkg reader reads them; rpm hosts are not read here.
Sources: multi-node jobs need EFA on every instance, trn1.32xlarge has 8 EFA devices and
trn1n.32xlarge 16
(https://awsdocs-neuron.readthedocs-hosted.com/en/v2.29.1/_sources/frameworks/torch/torch-neuronx/setup-trn1-multi-node-execution.rst);
the libfabric version must match between the AMI and the workload containers
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/deploy/eks/prerequisites.html).
"""

from __future__ import annotations

import os
import re

from msgspec import Struct, field

from neuronctl.probes.dpkg import STATUS_FILE, parse_dpkg_status
from neuronctl.probes.sysroot import SysRoot

MAX_RDMA_DEVICES = 128
MAX_STATUS_BYTES = 32 * 1024 * 1024
_PACKAGE = re.compile(r"[a-z0-9][a-z0-9.+-]{0,63}")
_VERSION = re.compile(r"[A-Za-z0-9.+~_-]{1,64}")


class EfaFacts(Struct, frozen=True):
    """The EFA devices and the libfabric packages seen."""

    devices: tuple[str, ...]
    other_rdma: tuple[str, ...] = ()
    libfabric: dict[str, str] = field(default_factory=dict)


def _driver_name(root: SysRoot, device: str) -> str | None:
    link = root.path(f"/sys/class/infiniband/{device}/device/driver")
    try:
        target = os.readlink(link)
    except (OSError, ValueError):
        return None
    name = os.path.basename(target.rstrip("/"))
    return name if name.isascii() and name.isprintable() and len(name) <= 64 else None


def read_efa(root: SysRoot) -> EfaFacts:
    efa: list[str] = []
    other: list[str] = []
    for dev in root.glob("/sys/class/infiniband", "*")[:MAX_RDMA_DEVICES]:
        name = "".join(c if c.isprintable() else "?" for c in dev.name)[:64]
        (efa if _driver_name(root, dev.name) == "efa" else other).append(name)
    text = root.read(STATUS_FILE, MAX_STATUS_BYTES)
    libfabric = parse_dpkg_status(text, prefix="libfabric") if text else {}
    # fleet doctor compares these across nodes and shows them: a Debian name and version, or
    # nothing (a status file from a hostile image or root can hold any bytes)
    libfabric = {k: v for k, v in libfabric.items()
                 if _PACKAGE.fullmatch(k) and _VERSION.fullmatch(v)}
    return EfaFacts(tuple(efa), tuple(other), libfabric)
