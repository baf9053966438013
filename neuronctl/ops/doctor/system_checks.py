"""Doctor checks for the system around the Python stack, from the failures Neuron users report:
another process holding the NeuronCores, a kernel upgraded without a DKMS rebuild, mixed package
generations or two runtime libraries, devices a container or a user cannot reach."""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING

from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.fixes import public
from neuronctl.ops.doctor.registry import check
from neuronctl.ops.doctor.runner import CheckOutcome, Status
from neuronctl.release.model import Release

if TYPE_CHECKING:  # each check imports the probe it reads: a doctor choosing none loads neither
    from neuronctl.probes.system_facts import DeviceAccess, KernelModuleState
    from neuronctl.probes.system_packages import SystemPackages

_SEVERITY: dict[Status, int] = {"skip": 0, "pass": 1, "warn": 2, "fail": 3}

SYSTEM_KEYS = ("aws-neuronx-dkms", "aws-neuronx-runtime-lib", "aws-neuronx-collectives",
               "aws-neuronx-tools")


def _uses_dpkg(f: Facts) -> bool:
    return f.sysroot.exists("/var/lib/dpkg/status") or not f.sysroot.path("/var/lib/rpm").is_dir()


# ------------------------------------------------------------------------------ device.holders

@check("device.holders", "Processes holding Neuron devices")
def check_device_holders(f: Facts) -> CheckOutcome:
    # Without device nodes nothing can hold one: the /proc scan (every process's fd table, long
    # on a busy CI host or laptop) is for hosts that have them. A process still holding a node
    # since removed (the driver unloaded) is not named here; hardware.driver fails on that host.
    if not f.sysroot.glob("/dev", "neuron*"):
        return CheckOutcome("skip", "no /dev/neuron* nodes: nothing to hold")
    from neuronctl.probes.device_holders import descends_from, find_device_holders

    scan = find_device_holders(f.sysroot)
    me = os.getpid()
    holders = [h for h in scan.holders
               if not (f.sysroot.is_host and descends_from(f.sysroot, h.pid, me))]
    details = [h.describe() for h in holders]
    if scan.unreadable:
        details.append(f"{scan.unreadable} process(es) could not be inspected (another user's): "
                       "run as root to see every holder")
    if not holders:
        return CheckOutcome("pass", "no other process holds /dev/neuron*", None, tuple(details))
    stale = [h for h in holders if h.zombie or h.parent_gone]
    message = (f"{len(holders)} process(es) hold Neuron devices; a new run cannot get those "
               "NeuronCores (nrt_allocate_neuron_cores fails at start-up)")
    if stale:
        message += f"; {len(stale)} of them left behind (zombie or parent gone)"
    fix = "kill " + " ".join(str(h.pid) for h in holders)
    zombie_parents = sorted({h.ppid for h in holders if h.zombie and h.ppid and h.ppid > 1})
    if zombie_parents:  # a zombie goes only when its parent reaps it or exits
        fix += " && kill " + " ".join(str(p) for p in zombie_parents)
    fix += ("  # or share the chip: give each job its own cores with "
            "NEURON_RT_VISIBLE_CORES=<first>-<last>")
    return CheckOutcome("warn", message, fix, tuple(details))


# ---------------------------------------------------------------- hardware.driver: the kernel

def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in version.split("."))


def _dkms_version(state: KernelModuleState, f: Facts) -> str:
    """The aws-neuronx version to build: the installed package's when DKMS holds it, else the
    newest DKMS holds, else the package's or the release's."""
    from neuronctl.probes.system_facts import safe_component

    versions = [v for name, v in state.dkms_versions() if name == "aws-neuronx"]
    packaged = safe_component(f.system_packages.packages.get("aws-neuronx-dkms"))
    if packaged is not None and (packaged in versions or not versions):
        return packaged
    if versions:
        return max(versions, key=_version_key)
    return safe_component(f.selection.release.system.get("aws-neuronx-dkms")) or "<version>"


def _package_tool(f: Facts) -> list[str]:
    if _uses_dpkg(f):
        return ["sudo", "apt-get", "install", "-y"]
    # AL2023 has dnf only under that name on minimal images; AL2 and older RHEL have yum.
    dnf = f.sysroot.exists("/usr/bin/dnf") or not f.sysroot.exists("/usr/bin/yum")
    return ["sudo", "dnf" if dnf else "yum", "install", "-y"]


def package_install(f: Facts, package: str, version: str | None) -> str:
    """Install one system package (at `version`, any build) with the host's package manager."""
    pin = (f"{package}={version}*" if _uses_dpkg(f) else f"{package}-{version}*") if version \
        else package
    return shlex.join([*_package_tool(f), pin])


def _rebuild_fix(f: Facts, kernel: str | None, version: str) -> str:
    """Headers for the running kernel, the DKMS build for it, and the module loaded: installing
    the package again is a no-op when that version is installed. Without a known kernel
    (`uname -r` on the inspected machine) the shell asks it."""
    header = "linux-headers-" if _uses_dpkg(f) else "kernel-devel-"
    quoted = shlex.quote(kernel) if kernel else '"$(uname -r)"'
    headers = shlex.join(_package_tool(f)) + " " + (shlex.quote(header + kernel) if kernel
                                                     else f'"{header}$(uname -r)"')
    build = shlex.join(["sudo", "dkms", "install", "-m", "aws-neuronx", "-v", version, "-k"])
    return f"{headers} && {build} {quoted} && sudo modprobe neuron"


def driver_load_fix(f: Facts, want: str | None) -> str:
    """What loads a Neuron driver that is not loaded: `modprobe` where a module is built for the
    running kernel, the DKMS rebuild for that kernel where the package is installed (a kernel
    upgraded without one), else the package for the release."""
    from neuronctl.probes.system_facts import read_kernel_modules

    state = read_kernel_modules(f.sysroot)
    if state.module_for_running_kernel:
        return "sudo modprobe neuron"
    if state.dkms.get("aws-neuronx") is not None \
            or f.system_packages.packages.get("aws-neuronx-dkms"):
        return _rebuild_fix(f, state.kernel, _dkms_version(state, f))
    return f"{package_install(f, 'aws-neuronx-dkms', want)} && sudo modprobe neuron"


def check_driver_kernel(f: Facts) -> CheckOutcome:
    """The driver module against the running kernel (extends `hardware.driver`)."""
    from neuronctl.probes.system_facts import read_kernel_modules

    state = read_kernel_modules(f.sysroot)
    if state.kernel is None:
        return CheckOutcome("skip", "running kernel release unknown (/proc/sys/kernel/osrelease)")
    built = {k: v for k, v in state.modules_by_kernel.items() if v}
    dkms_kernels = sorted({k for versions in state.dkms.values() for ks in versions.values()
                           for k in ks})
    details = [f"running kernel: {state.kernel}"]
    details += [f"neuron module for {k}: {', '.join(v)}" for k, v in sorted(built.items())]
    details += [f"dkms {name}/{version}: built for {', '.join(state.dkms[name][version]) or 'none'}"
                for name, version in state.dkms_versions()]
    if state.loaded_version:
        details.append(f"loaded module: {state.loaded_version}")
    if not built and not state.dkms and not state.loaded_version:
        return CheckOutcome("skip", "no neuron driver module installed (see hardware.driver)", None,
                       tuple(details))
    if state.module_for_running_kernel:
        return CheckOutcome("pass", f"neuron module built for the running kernel {state.kernel}", None,
                       tuple(details))
    others = sorted(set(built) | set(dkms_kernels))
    fix = _rebuild_fix(f, state.kernel, _dkms_version(state, f))
    elsewhere = f" (built for {', '.join(others)})" if others else ""
    if state.loaded_version:
        return CheckOutcome("warn", f"the loaded neuron module has no file for kernel {state.kernel}"
                               f"{elsewhere}: it cannot be loaded again after a reboot or rmmod",
                       fix, tuple(details))
    return CheckOutcome("fail", f"no neuron module for the running kernel {state.kernel}{elsewhere}: "
                           "the kernel was upgraded without a DKMS rebuild", fix, tuple(details),
                   "drain")  # no driver can load: the node runs no Neuron work until rebuilt


# ------------------------------------------------------------------------------ packages.system

def _release_of(f: Facts, key: str, version: str) -> Release | None:
    want = public(version)
    return next((r for r in reversed(f.manifest.releases)
                 if public(r.system.get(key, "")) == want), None)


def _generation_problems(f: Facts, pk: SystemPackages) -> tuple[list[str], str | None]:
    from neuronctl.probes.system_packages import OLD_GENERATION

    old = [p for p in OLD_GENERATION if p in pk.packages]
    new = [p for p in pk.packages if p.startswith("aws-neuronx-")]
    if not (old and new):
        return [], None
    problems = [f"old-generation {', '.join(old)} installed beside {', '.join(sorted(new))}"]
    problems += [f"{p} still owns {', '.join(files)} (an old libnrt shadows the new runtime: "
                 "'undefined symbol: nrt_*')" for p, files in pk.old_generation_libnrt.items()]
    engine = ["sudo", "apt-get", "remove", "-y"] if _uses_dpkg(f) else ["sudo", "yum", "remove", "-y"]
    return problems, shlex.join([*engine, *old])


def _release_problems(f: Facts, pk: SystemPackages) -> tuple[list[str], str | None]:
    release = f.selection.release
    problems, pins = [], []
    for key in SYSTEM_KEYS:
        have, want = pk.packages.get(key), release.system.get(key)
        if not have or not want or public(have) == public(want):
            continue
        origin = _release_of(f, key, have)
        problems.append(f"{key} {have} is from {f'Neuron {origin.version}' if origin else 'another release'}"
                        f"; the Python stack is Neuron {release.version} ({want})")
        pins.append(f"{key}={want}*")
    if not pins:
        return problems, None
    engine = ["sudo", "apt-get", "install", "-y"] if _uses_dpkg(f) else ["sudo", "yum", "install", "-y"]
    return problems, shlex.join([*engine, *(p if _uses_dpkg(f) else p.replace("=", "-") for p in pins)])


@check("packages.system", "Neuron system packages")
def check_system_packages(f: Facts) -> CheckOutcome:
    from neuronctl.probes.system_packages import find_runtime_libraries

    pk = f.system_packages
    libraries = find_runtime_libraries(f.sysroot, f.environ)
    details = [f"{name} {version} ({pk.source})" for name, version in sorted(pk.packages.items())]
    details += [f"libnrt in {lib.directory}: {', '.join(lib.files)} -> {lib.real}" for lib in libraries]
    generation, generation_fix = _generation_problems(f, pk)
    if generation:
        return CheckOutcome("fail", "mixed Neuron package generations: " + "; ".join(generation),
                       generation_fix, tuple(details))
    problems: list[str] = []
    fix = None
    if len(libraries) > 1:
        problems.append(f"{len(libraries)} different libnrt.so on the loader path; the first "
                        f"({libraries[0].directory}) wins")
        fix = "remove the stray copies (or drop them from LD_LIBRARY_PATH), keeping " \
              "/opt/aws/neuron/lib"
    release_problems, release_fix = _release_problems(f, pk)
    problems += release_problems
    fix = release_fix or fix
    if problems:
        return CheckOutcome("warn", "; ".join(problems), fix, tuple(details))
    if not pk.packages and not libraries:
        return CheckOutcome("skip", "no Neuron system packages (dpkg/rpm) and no libnrt found", None,
                       tuple(details))
    return CheckOutcome("pass", f"{len(pk.packages)} Neuron system package(s) from Neuron "
                           f"{f.selection.release.version}, one runtime library", None, tuple(details))


# ------------------------------------------------------------------------------- device.access

def _container_fix(acc: DeviceAccess) -> str:
    count = max(acc.host_devices, 1)
    flags = " ".join(f"--device=/dev/neuron{i}" for i in range(count))
    if acc.kubernetes:
        return (f"request the devices from the Neuron device plugin: resources.limits "
                f"aws.amazon.com/neuron: {count} (or aws.amazon.com/neuroncore)")
    return f"docker run {flags} ..."


def check_device_access(f: Facts, uid: int | None = None,
                        groups: set[int] | None = None) -> CheckOutcome:
    from neuronctl.probes.system_facts import read_device_access

    acc = read_device_access(f.sysroot, uid, groups)
    details = [f"container: {', '.join(acc.container_evidence)}"] if acc.in_container else []
    details += [f"node: {n}" for n in acc.nodes]
    if acc.denied:
        return CheckOutcome("fail", f"{len(acc.denied)} of {len(acc.nodes)} /dev/neuron* node(s) are not "
                               f"readable and writable by this user: {', '.join(acc.denied)}",
                       "sudo chmod 0666 /dev/neuron*  # for good: a udev rule, e.g. "
                       "KERNEL==\"neuron*\", MODE=\"0666\" in /etc/udev/rules.d/neuron.rules",
                       tuple(details))
    if acc.nodes:
        return CheckOutcome("pass", f"{len(acc.nodes)} /dev/neuron* node(s) readable and writable",
                       None, tuple(details))
    if acc.in_container and acc.host_devices:
        return CheckOutcome("fail", f"inside a container without /dev/neuron*, on a host with "
                               f"{acc.host_devices} Neuron device(s): the devices were not passed in",
                       _container_fix(acc), tuple(details))
    if acc.in_container:
        return CheckOutcome("skip", "inside a container without /dev/neuron* and no Neuron device "
                               "seen: on a Neuron host, pass the devices in (--device=/dev/neuron0 "
                               "...)", None, tuple(details))
    return CheckOutcome("skip", "no /dev/neuron* nodes (see hardware.driver)", None, tuple(details))


# ------------------------------------------------------------------------------------ wiring

def with_kernel_check(driver: CheckOutcome, kernel: CheckOutcome) -> CheckOutcome:
    """`hardware.driver` extended by the kernel match: the worse status speaks (its message
    first, its fix), the other's message follows, the details of both are kept."""
    if kernel.status == "skip":
        return CheckOutcome(driver.status, driver.message, driver.fix, driver.details + kernel.details,
                       driver.severity)
    # A tie of failures is the kernel's: a driver not loaded because no module fits the running
    # kernel is fixed by the rebuild, not by installing the package again.
    kernel_first = _SEVERITY[kernel.status] > _SEVERITY[driver.status] \
        or kernel.status == driver.status == "fail"
    first, second = (kernel, driver) if kernel_first else (driver, kernel)
    return CheckOutcome(first.status, f"{first.message}; {second.message}", first.fix or second.fix,
                   driver.details + kernel.details, first.severity or second.severity)


@check("device.access", "Neuron device access")
def check_device_access_and_image(f: Facts) -> CheckOutcome:
    """device.access, and inside a container the image against the host (checks_container)."""
    from neuronctl.ops.doctor.checks_container import check_container_image

    access = check_device_access(f)
    image = check_container_image(f)
    if image is None:
        return access
    if access.status == "skip" and image.status == "pass":
        return CheckOutcome("skip", access.message, access.fix, access.details + image.details)
    first, second = (image, access) if _SEVERITY[image.status] > _SEVERITY[access.status] \
        else (access, image)
    return CheckOutcome(first.status, f"{first.message}; {second.message}", first.fix or second.fix,
                   access.details + image.details, first.severity or second.severity)
