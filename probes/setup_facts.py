"""The facts `neuronctl setup` plans from, read under a SysRoot (this host or a captured tree):
the OS (os-release through host_facts' contained reader and `distro`), the installed aws-neuron*
packages with versions and holds (dpkg status, or rpm), the running kernel and whether its
headers are there, the loaded driver, the Neuron chip on the PCI bus, the processes holding
/dev/neuron* (device.holders' probe), and whether this is a container host or a container.

Every value read from the tree is untrusted: the ones a plan writes into a shell script (kernel
release, codename) are kept only when they are plain tokens."""

from __future__ import annotations

import platform
import re
import shutil
from typing import Any

from msgspec import Struct, field

from neuronctl.probes.device_holders import descends_from, find_device_holders
from neuronctl.probes.dpkg import MAX_STATUS_FILE, STATUS_FILE, _stanzas_holding
from neuronctl.probes.hardware_signals import read_pci
from neuronctl.probes.host_facts import _distribution
from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.system_facts import container_evidence
from neuronctl.probes.system_packages import read_system_packages
from neuronctl.probes.tools import Runner, run_tool
from neuronctl.redact import redact

TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+~-]{0,127}")
CODENAME = re.compile(r"[a-z]{2,32}")
CONTAINER_RUNTIMES = ("/usr/bin/docker", "/usr/bin/containerd", "/usr/bin/podman",
                      "/usr/bin/nerdctl", "/usr/local/bin/containerd",
                      "/run/containerd/containerd.sock", "/var/run/docker.sock")


class SetupFacts(Struct, frozen=True):
    """What the planner knows of the target; None (or empty) where it is not known."""

    os_id: str | None = None
    """os-release ID, lower case: "ubuntu", "amzn"."""
    os_version: str | None = None
    codename: str | None = None
    """VERSION_CODENAME (Ubuntu's suite name in the Neuron apt repository), a plain word."""
    kernel: str | None = None
    headers: bool | None = None
    """Whether the running kernel's headers are there (/lib/modules/K/build, linux-headers-K,
    /usr/src/kernels/K)."""
    packages: dict[str, str] = field(default_factory=dict)
    """Installed aws-neuron* package -> upstream version."""
    held: tuple[str, ...] = ()
    """aws-neuron* packages dpkg holds."""
    package_db: str = "none"
    loaded_driver: str | None = None
    chip: str | None = None
    devices: int = 0
    holders: tuple[str, ...] = ()
    """The processes holding /dev/neuron*, described ("pid 42 (python) holds neuron0")."""
    container_host: bool = False
    in_container: bool = False
    repo_config: str | None = None
    """The Neuron repository file as it is (sources.list.d/neuron.list or yum.repos.d/neuron.repo)."""
    known: bool = True
    """False for a plan for another host (--os without --sysroot): nothing was read."""

    def to_json(self) -> dict[str, Any]:
        return {"os": f"{self.os_id} {self.os_version}" if self.os_id else None,
                "codename": self.codename, "kernel": self.kernel, "headers": self.headers,
                "packages": dict(self.packages), "held": list(self.held),
                "package_db": self.package_db, "loaded_driver": self.loaded_driver,
                "chip": self.chip, "devices": self.devices, "holders": list(self.holders),
                "container_host": self.container_host, "in_container": self.in_container,
                "repo_config": self.repo_config, "read": self.known}


def _token(text: str | None, pattern: re.Pattern[str] = TOKEN) -> str | None:
    value = (text or "").strip()
    return value if pattern.fullmatch(value) else None


def _os_release_field(root: SysRoot, key: str) -> str | None:
    for name in ("/etc/os-release", "/usr/lib/os-release"):
        text = root.read_text(name, 64 * 1024)
        if text is None:
            continue
        for line in text.splitlines()[:200]:
            k, sep, v = line.partition("=")
            if sep and k.strip() == key:
                return v.strip().strip("\"'")
        return None
    return None


def _kernel(root: SysRoot) -> str | None:
    raw = platform.release() if root.is_host else root.read_text("/proc/sys/kernel/osrelease", 256)
    return _token(raw)


def _headers(root: SysRoot, kernel: str | None) -> bool | None:
    if kernel is None:
        return None
    return any(root.exists(p) for p in (f"/lib/modules/{kernel}/build",
                                        f"/usr/src/linux-headers-{kernel}",
                                        f"/usr/src/kernels/{kernel}"))


def _held(root: SysRoot) -> tuple[str, ...]:
    text = root.read_text(STATUS_FILE, MAX_STATUS_FILE) or ""
    held = []
    for stanza in _stanzas_holding(text, "aws-neuron"):
        fields = {k.strip().lower(): v.strip() for k, _, v in
                  (line.partition(":") for line in stanza.splitlines() if line[:1] not in " \t")}
        name = fields.get("package", "")
        if name.startswith("aws-neuron") and fields.get("status", "").split()[:1] == ["hold"]:
            held.append(name)
    return tuple(sorted(held))


def _holders(root: SysRoot) -> tuple[str, ...]:
    if not root.glob("/dev", "neuron*"):
        return ()
    import os

    me = os.getpid()
    scan = find_device_holders(root)
    # A holder's command line can carry a token (--token=...): plans are shown and written out.
    return tuple(redact(h.describe()) for h in scan.holders
                 if not (root.is_host and descends_from(root, h.pid, me)))


def _container_host(root: SysRoot) -> bool:
    if any(root.exists(p) for p in CONTAINER_RUNTIMES):
        return True
    return root.is_host and any(shutil.which(t) for t in ("docker", "containerd", "podman"))


def gather_setup_facts(root: SysRoot, runner: Runner = run_tool) -> SetupFacts:
    _pretty, os_id, version = _distribution(root)
    kernel = _kernel(root)
    system = read_system_packages(root, runner)
    chips = [d.chip for d in read_pci(root)]
    evidence, kubernetes = container_evidence(root)
    loaded = root.read_text("/sys/module/neuron/version", 256)
    return SetupFacts(
        os_id=(os_id or "").lower() or None, os_version=version or None,
        codename=_token(_os_release_field(root, "VERSION_CODENAME")
                        or _os_release_field(root, "UBUNTU_CODENAME"), CODENAME),
        kernel=kernel, headers=_headers(root, kernel),
        packages={k: v for k, v in system.packages.items() if TOKEN.fullmatch(v)},
        held=_held(root), package_db=system.source, loaded_driver=_token(loaded),
        chip=chips[0] if chips else None, devices=len(chips), holders=_holders(root),
        container_host=_container_host(root), in_container=bool(evidence) or kubernetes,
        repo_config=(root.read_text("/etc/apt/sources.list.d/neuron.list", 4096)
                     or root.read_text("/etc/yum.repos.d/neuron.repo", 4096)))
