"""The doctor's checks of the Neuron machine: hardware.*, runtime.compat and device.probe, each
pure over the shared Facts."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from neuronctl.chips import get_chip
from neuronctl.ops.doctor.device_fixes import probe_details, probe_fix
from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.fixes import apt_install, install_fix, public, shell_join
from neuronctl.ops.doctor.registry import HARDWARE, check
from neuronctl.ops.doctor.runner import CheckOutcome
from neuronctl.ops.doctor.system_checks import (
    check_driver_kernel,
    driver_load_fix,
    package_install,
    with_kernel_check,
)
from neuronctl.release.model import Release


@check("hardware.chip", "Chip generation", gathers=HARDWARE)
def check_chip(f: Facts) -> CheckOutcome:
    hw = f.hardware
    details = tuple(f"{e.source}: {e.value}" + (f" -> {e.chip}" if e.chip else "")
                    for e in hw.evidence)
    if not hw.present:
        return CheckOutcome("skip", "no Neuron hardware on this machine (preparing an environment for "
                               "another host is fine)", None, details)
    if hw.chip is None:
        return CheckOutcome("warn", f"Neuron devices present ({hw.device_count}) but the chip generation "
                               "could not be decided",
                       shell_join(["sudo", "apt-get", "install", "-y", "aws-neuronx-dkms",
                                   "aws-neuronx-tools"]),
                       details + hw.conflicts)
    chip = get_chip(hw.chip)
    caps = chip.supports()
    cfp8 = {True: "yes", False: "no", None: "not published"}[caps["cfp8"]]
    summary = (f"{chip.id} ({chip.name}), {hw.device_count} device(s)"
               + (f", {hw.cores_text()}" if hw.neuron_cores else "")
               + (f", {hw.instance_type}" if hw.instance_type else "")
               + f"; native TorchNeuron {'yes' if caps['native_torch'] else 'no'}, "
               f"OCP FP8/MXFP8 {'yes' if caps['ocp_fp8'] else 'no'}, cFP8 {cfp8}")
    if hw.conflicts:
        return CheckOutcome("warn", f"{summary}; signals disagree: {'; '.join(hw.conflicts)}", None,
                       details)
    release = f.selection.release
    if not chip.native_torch and release.flavour == "native":
        return CheckOutcome("warn", f"{summary}. Neuron {release.version}'s native TorchNeuron needs "
                               "trn2/trn3", install_fix(f), details)
    return CheckOutcome("pass", summary, None, details)


def _release_of(f: Facts, key: str, version: str | None) -> Release | None:
    if version is None:
        return None
    want = public(version)
    return next((r for r in reversed(f.manifest.releases)
                 if public(r.system.get(key, "")) == want), None)


def _older(a: str, b: str) -> bool:
    try:
        return Version(a) < Version(b)
    except InvalidVersion:
        return False


def check_driver(f: Facts) -> CheckOutcome:
    hw, release = f.hardware, f.selection.release
    want = release.system.get("aws-neuronx-dkms")
    if not hw.present:
        return CheckOutcome("skip", "no Neuron hardware: no driver to check")
    fix = f"{package_install(f, 'aws-neuronx-dkms', want)} && sudo modprobe neuron"
    if hw.driver_version is None:
        if hw.dev_nodes and not hw.sysfs_devices and not hw.pci_devices:
            return CheckOutcome("warn", f"{len(hw.dev_nodes)} /dev/neuron* node(s) but no driver sysfs "
                                   "(inside a container?); driver version unknown: read it on the "
                                   "host", "cat /sys/module/neuron/version")
        # no driver: the node cannot run Neuron work at all (severity drain)
        return CheckOutcome("fail", "Neuron devices present but the neuron driver is not loaded",
                       driver_load_fix(f, want), severity="drain")
    details = [f"loaded module: {hw.driver_version}"]
    pkg = hw.system_packages.get("aws-neuronx-dkms")
    if pkg:
        details.append(f"dpkg aws-neuronx-dkms: {pkg}")
    if pkg and public(pkg) != public(hw.driver_version):
        return CheckOutcome("warn", f"driver {hw.driver_version} is loaded but aws-neuronx-dkms {pkg} is "
                               "installed (upgraded without reload)",
                       "sudo rmmod neuron && sudo modprobe neuron", tuple(details))
    if want and _older(hw.driver_version, want):
        return CheckOutcome("warn", f"driver {hw.driver_version} is older than Neuron {release.version} "
                               f"ships ({want})", fix, tuple(details))
    return CheckOutcome("pass", f"driver {hw.driver_version}"
                           + (f" (Neuron {release.version} ships {want})" if want else ""),
                   None, tuple(details))


def check_runtime(f: Facts) -> CheckOutcome:
    hw, release = f.hardware, f.selection.release
    rt = hw.runtime_version
    want = release.system.get("aws-neuronx-runtime-lib")
    if rt is None:
        if hw.present:
            return CheckOutcome("warn", "Neuron runtime library (aws-neuronx-runtime-lib) not found",
                           apt_install("aws-neuronx-runtime-lib", want))
        return CheckOutcome("skip", "no Neuron runtime or hardware on this machine")
    details = [f"runtime {rt} from {hw.runtime_source}"]
    rt_release = _release_of(f, "aws-neuronx-runtime-lib", rt)
    drv_release = _release_of(f, "aws-neuronx-dkms", hw.driver_version)
    if rt_release and drv_release:
        details.append(f"runtime is from Neuron {rt_release.version}, driver from "
                       f"{drv_release.version}")
        if rt_release.key > drv_release.key:
            need = rt_release.system.get("aws-neuronx-dkms", "")
            return CheckOutcome("fail", f"runtime {rt} (Neuron {rt_release.version}) is newer than driver "
                                   f"{hw.driver_version} (Neuron {drv_release.version}): known "
                                   "failure 'Neuron Runtime ... is not compatible with the "
                                   "installed aws-neuronx-dkms'",
                           f"{apt_install('aws-neuronx-dkms', need or None)} && "
                           "sudo rmmod neuron && sudo modprobe neuron", tuple(details))
    if want and public(rt) != public(want):
        return CheckOutcome("warn", f"runtime {rt} is not the one Neuron {release.version} ships ({want})",
                       apt_install("aws-neuronx-runtime-lib", want), tuple(details))
    return CheckOutcome("pass", f"runtime {rt}" + (f", as Neuron {release.version} ships" if want else ""),
                   None, tuple(details))


@check("device.probe", "Device probe", level=2, gathers=("hardware", "probe"))
def check_device(f: Facts) -> CheckOutcome:
    report = f.probe
    details = probe_details(report)
    if report.outcome == "no-torch":
        if f.device == "auto":
            return CheckOutcome("skip", "torch is not installed in the target environment", None, details)
        return CheckOutcome("fail", f"--device {f.device}: torch is not installed", None, details)
    if not report.ok:
        return CheckOutcome("fail", report.detail, probe_fix(f, report), details)
    if f.hardware.present and report.device != "neuron":
        tnx = f.env.get("torch-neuronx")
        if tnx is None or tnx.wrong_package:  # nothing Neuron to probe: no pass, and no verdict
            return CheckOutcome("skip", f"probe ran on {report.device}, not a Neuron device: no "
                                   "Neuron torch backend is installed here (torch-neuronx: see "
                                   "packages.torch-neuronx), so the devices were not probed "
                                   f"(torch {report.torch})", None, details)
        # a warning: torch-neuronx is there and still cannot reach this host's devices
        return CheckOutcome("warn", f"probe ran on {report.device}, not a Neuron device: this host has "
                               "Neuron devices and no 'neuron' torch backend is registered",
                       install_fix(f), details)
    if report.device == "cpu" and f.device != "cpu":  # a CPU run is no pass of the device
        why = ("probe ran on cpu, not a Neuron device" if f.device == "neuron"
               else "torch works on cpu; no Neuron device here")
        return CheckOutcome("skip", f"{why} (torch {report.torch})", None, details)
    if report.warnings:  # it works, and something about it will bite (autoload off, ...)
        return CheckOutcome("warn", f"{report.detail} (torch {report.torch}); "
                                    + "; ".join(report.warnings), None, details)
    return CheckOutcome("pass", f"{report.detail} (torch {report.torch})", None, details)


@check("hardware.driver", "Neuron driver", gathers=HARDWARE)
def check_driver_and_kernel(f: Facts) -> CheckOutcome:
    """hardware.driver: the loaded driver against the release, and the driver module against
    the running kernel (a kernel upgraded without a DKMS rebuild)."""
    return with_kernel_check(check_driver(f), check_driver_kernel(f))
