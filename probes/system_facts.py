"""Facts about the machine around the Python stack, read under a SysRoot: whether the driver
module fits the running kernel, and whether this process (in a container or not) can reach the
devices. Which processes hold /dev/neuron* is neuronctl.probes.device_holders' (a scan only a
host with Neuron devices runs).

Every byte comes from a tree that may be captured from elsewhere, so each read is bounded and
every name that becomes part of a path is checked first."""

from __future__ import annotations

import os
import re
from pathlib import Path

from msgspec import Struct

from neuronctl.probes.sysroot import SysRoot, read_regular_text

MAX_SMALL_FILE = 64 * 1024
MAX_MODULE_FILES = 2000
# A kernel release or a DKMS version is used as a path component: only these characters.
_RELEASE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+~-]{0,127}")
_CONTAINER_CGROUP = re.compile(r"docker|kubepods|containerd|libpod|podman|lxc|crio")


def read_bounded(path: Path, limit: int = MAX_SMALL_FILE) -> str | None:
    """At most `limit` bytes of a regular file as text, or None when it cannot be read or is
    not a regular file (a FIFO or a device). For files that are not the inspected system's (a
    config): what a sysroot holds is read with SysRoot.read_text, which keeps to the root."""
    return read_regular_text(path, limit)


def safe_component(value: str | None) -> str | None:
    """`value` when it is fit to be one path component (a kernel release, a version)."""
    if value is None:
        return None
    value = value.strip()
    return value if _RELEASE.fullmatch(value) and value not in (".", "..") else None


# ------------------------------------------------------------------- driver module vs kernel

class KernelModuleState(Struct, frozen=True):
    """The running kernel and the neuron modules built (and loaded) for each kernel."""

    kernel: str | None
    """The running kernel release (/proc/sys/kernel/osrelease), when it is a sane name."""
    loaded_version: str | None
    modules_by_kernel: dict[str, tuple[str, ...]]
    """Kernel release -> neuron.ko* files under /lib/modules/<release> (as shown on the system)."""
    dkms: dict[str, dict[str, tuple[str, ...]]]
    """DKMS module name (aws-neuronx, aws-neuron) -> version -> kernels it was built for."""

    @property
    def module_for_running_kernel(self) -> bool:
        return bool(self.kernel and self.modules_by_kernel.get(self.kernel))

    def dkms_versions(self) -> list[tuple[str, str]]:
        return [(name, version) for name, versions in sorted(self.dkms.items())
                for version in sorted(versions)]


def _neuron_modules(root: SysRoot, kernel_dir: Path) -> tuple[str, ...]:
    found = []
    try:
        for count, path in enumerate(kernel_dir.rglob("neuron.ko*")):
            if count >= MAX_MODULE_FILES:
                break
            found.append(root.display(path))
    except OSError:
        pass
    return tuple(sorted(found))


def _dkms_state(root: SysRoot) -> dict[str, dict[str, tuple[str, ...]]]:
    state: dict[str, dict[str, tuple[str, ...]]] = {}
    for module_dir in root.glob("/var/lib/dkms", "aws-neuron*"):
        name = safe_component(module_dir.name)
        if name is None or not module_dir.is_dir() or module_dir.is_symlink():
            continue
        state[name] = _dkms_versions(module_dir)
    return state


def _dkms_versions(module_dir: Path) -> dict[str, tuple[str, ...]]:
    """Version -> kernels with a built neuron.ko, from /var/lib/dkms/<module>/<version>/<kernel>."""
    versions: dict[str, tuple[str, ...]] = {}
    try:
        for version_dir in sorted(module_dir.iterdir())[:64]:
            version = safe_component(version_dir.name)
            if version is None or version_dir.is_symlink() or not version_dir.is_dir():
                continue  # "source" and "kernel-*" links sit beside the version directories
            kernels = [k.name for k in sorted(version_dir.iterdir())[:256]
                       if safe_component(k.name) and not k.is_symlink() and k.is_dir()
                       and k.name != "source"
                       and any(k.rglob("neuron.ko*"))]
            versions[version] = tuple(kernels)
    except OSError:
        pass  # unreadable: what was read so far stands
    return versions


def read_kernel_modules(root: SysRoot) -> KernelModuleState:
    kernel = safe_component(root.read("/proc/sys/kernel/osrelease"))
    loaded = root.read("/sys/module/neuron/version")
    by_kernel: dict[str, tuple[str, ...]] = {}
    for kernel_dir in root.glob("/lib/modules", "*")[:64]:
        name = safe_component(kernel_dir.name)
        # A release linked elsewhere (to "/", say) would make rglob walk outside the tree.
        if name is not None and not kernel_dir.is_symlink() and kernel_dir.is_dir():
            by_kernel[name] = _neuron_modules(root, kernel_dir)
    if kernel is not None and kernel not in by_kernel:
        by_kernel[kernel] = ()
    return KernelModuleState(kernel, safe_component(loaded), by_kernel, _dkms_state(root))


# ----------------------------------------------------------------------------- device access

class DeviceAccess(Struct, frozen=True):
    """Whether this user can reach /dev/neuron*, and, in a container, whether the host has more."""

    nodes: tuple[str, ...]
    """/dev/neuron* nodes as shown on the system."""
    denied: tuple[str, ...]
    """Nodes this user cannot both read and write."""
    in_container: bool
    container_evidence: tuple[str, ...]
    kubernetes: bool
    host_devices: int
    """Neuron devices the host shows (sysfs class, PCI vendor 0x1d0f, the loaded module)."""


def container_evidence(root: SysRoot) -> tuple[tuple[str, ...], bool]:
    """Why this looks like a container (/.dockerenv, /run/.containerenv, /proc/1/cgroup), and
    whether Kubernetes runs it."""
    evidence = [f for f in ("/.dockerenv", "/run/.containerenv") if root.exists(f)]
    cgroup = root.read_text("/proc/1/cgroup", MAX_SMALL_FILE) or ""
    match = _CONTAINER_CGROUP.search(cgroup)
    if match:
        evidence.append(f"/proc/1/cgroup mentions {match.group(0)}")
    kubernetes = "kubepods" in cgroup or root.exists("/var/run/secrets/kubernetes.io")
    return tuple(evidence), kubernetes


def _host_device_count(root: SysRoot) -> int:
    sysfs = [p for p in root.glob("/sys/class/neuron_device", "neuron*") if p.name[6:].isdigit()]
    if sysfs:
        return len(sysfs)
    pci = [d for d in root.glob("/sys/bus/pci/devices", "*")
           if (root.read(d / "vendor", 64) or "").lower() == "0x1d0f"]
    return len(pci)


def _can_use(path: Path, uid: int, groups: set[int]) -> bool:
    """Read and write permission from the node's mode bits, as the kernel decides for a user
    other than root (root's capabilities are checked separately by the caller)."""
    try:
        st = path.stat()
    except OSError:
        return False
    if uid == 0:
        return True
    if st.st_uid == uid:
        return st.st_mode & 0o600 == 0o600
    if st.st_gid in groups:
        return st.st_mode & 0o060 == 0o060
    return st.st_mode & 0o006 == 0o006


def read_device_access(root: SysRoot, uid: int | None = None,
                       groups: set[int] | None = None) -> DeviceAccess:
    """Which /dev/neuron* nodes `uid` (default: this process's user) may open read-write."""
    uid = os.geteuid() if uid is None else uid
    groups = ({os.getegid(), *os.getgroups()} if groups is None else groups)
    nodes = [p for p in root.glob("/dev", "neuron*") if p.name[6:].isdigit()]
    nodes.sort(key=lambda p: int(p.name[6:]))
    denied = tuple(root.display(p) for p in nodes if not _can_use(p, uid, groups))
    evidence, kubernetes = container_evidence(root)
    return DeviceAccess(tuple(root.display(p) for p in nodes), denied, bool(evidence), evidence,
                        kubernetes, _host_device_count(root))
