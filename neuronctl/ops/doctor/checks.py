"""The doctor's checks: stable ids, one function each, pure over the shared Facts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from neuronctl.chips import get_chip
from neuronctl.manifest import Framework, Release
from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.fixes import (
    apt_install,
    install_fix,
    listed,
    neuronctl_command,
    public,
    shell_join,
    uninstall_fix,
)
from neuronctl.ops.doctor.runner import Outcome, Status
from neuronctl.probes.pyenv import PythonEnv, torch_build
from neuronctl.torch_neuronx import classify, torch_matches


@dataclass(frozen=True)
class CheckSpec:
    id: str
    title: str
    run: Callable[[Facts], Outcome]


def _worst(statuses: list[Status]) -> Status:
    for s in ("fail", "warn", "pass"):
        if s in statuses:
            return s
    return "skip"


def _framework_of_installed(release: Release, env: PythonEnv) -> Framework | None:
    """The release's framework line whose torch-neuronx is the one installed, if any."""
    tnx = env.get("torch-neuronx")
    if tnx is not None:
        for fw in release.frameworks:
            if public(fw.torch_neuronx) == public(tnx.version):
                return fw
    return None


def _target_framework(f: Facts) -> Framework | None:
    release = f.selection.release
    installed = _framework_of_installed(release, f.env)
    if installed is not None:
        return installed
    torch = f.env.get("torch")
    if torch is not None:
        try:
            by_torch = release.framework_for_torch(public(torch.version))
        except InvalidVersion:
            by_torch = None
        if by_torch is not None and by_torch.backend == release.backend:
            return by_torch
    return release.default_framework()


def check_python(f: Facts) -> Outcome:
    env, release = f.env, f.selection.release
    fw = _target_framework(f)
    supported = fw.python if fw else release.python
    py = ".".join(env.python.split(".")[:2])
    where = f"Python {env.python} ({env.executable}{', venv' if env.in_venv else ''})"
    details = (f"release {release.version} ({f.selection.reason}) supports Python "
               f"{', '.join(supported) or 'unknown'}",)
    if not supported or py in supported:
        if fw and fw.backend == "native" and (env.system != "Linux" or env.machine != "x86_64"):
            return Outcome("warn", f"{where}: native TorchNeuron ships for Linux x86_64 only, "
                                   f"this is {env.system} {env.machine}", None, details)
        return Outcome("pass", f"{where} fits Neuron {release.version}", None, details)
    tnx = f.env.get("torch-neuronx")
    fix = install_fix(f)
    message = (f"{where} is not supported by Neuron {release.version} "
               f"({fw.backend if fw else release.backend} needs {supported[0]}-{supported[-1]})")
    if tnx is None:
        return Outcome("warn", message + "; nothing Neuron is installed here yet", fix, details)
    return Outcome("fail", message, fix, details)


def check_torch_neuronx(f: Facts) -> Outcome:
    release = f.selection.release
    tnx = f.env.get("torch-neuronx")
    hw = f.hardware
    if tnx is None:
        return Outcome("warn", f"torch-neuronx is not installed (Neuron {release.version} pins "
                               f"{listed(release.packages.get('torch-neuronx', ()))})", install_fix(f))
    info = classify(tnx.version)
    chip = get_chip(hw.chip) if hw.chip else None
    details = (f"selected release {release.version}: {f.selection.reason}",)
    if info.backend == "placeholder" or tnx.wrong_package:
        return Outcome("fail", f"torch-neuronx {tnx.version} is the PyPI placeholder, not Neuron's "
                               "package (import raises 'WRONG PACKAGE')", install_fix(f), details)
    if info.backend == "xla":
        if chip is not None and not chip.native_torch:
            return Outcome("pass", f"torch-neuronx {tnx.version}: legacy XLA line for torch "
                                   f"{info.torch}, the right stack for {chip.id} ({chip.name} cannot "
                                   "run native TorchNeuron)", None, details)
        if release.backend == "native":
            return Outcome("fail", f"torch-neuronx {tnx.version} is the legacy XLA library (torch "
                                   f"{info.torch}); Neuron {release.version} ships native TorchNeuron",
                           install_fix(f), details)
        return Outcome("pass", f"torch-neuronx {tnx.version}: legacy XLA line for torch {info.torch}, "
                               f"as Neuron {release.version} ships", None, details)
    if info.backend == "native":
        if chip is not None and not chip.native_torch:
            return Outcome("fail", f"torch-neuronx {tnx.version} is native TorchNeuron, which runs on "
                                   f"trn2/trn3 only; this host is {chip.id} ({chip.name})",
                           install_fix(f), details)
        pinned = {public(v) for v in release.packages.get("torch-neuronx", ())}
        if info.public not in pinned:
            return Outcome("warn", f"torch-neuronx {tnx.version} (native, torch {info.torch}) is not "
                                   f"a version Neuron {release.version} pins ({listed(sorted(pinned))})",
                           install_fix(f), details)
        return Outcome("pass", f"torch-neuronx {tnx.version}: native TorchNeuron for torch "
                               f"{info.torch}, pinned by Neuron {release.version}", None, details)
    return Outcome("warn", f"torch-neuronx {tnx.version}: a version line neuronctl does not know",
                   neuronctl_command(f, "releases"), details)


def check_legacy(f: Facts) -> Outcome:
    report = f.legacy
    details = tuple(f"{s.name}: {s.says} ({s.detail})" for s in report.signals)
    chip = get_chip(f.hardware.chip) if f.hardware.chip else None
    if report.verdict in ("none", "native"):
        return Outcome("pass", "no legacy XLA stack", None, details)
    pkgs = " ".join(report.legacy_packages) or "torch-xla libneuronxla"
    if report.verdict == "mixed":
        return Outcome("warn", "signals disagree: native and legacy XLA parts are both present",
                       install_fix(f) if report.legacy_packages else "unset PJRT_DEVICE", details)
    if chip is not None and not chip.native_torch:
        return Outcome("pass", f"legacy XLA stack, expected on {chip.id} ({chip.name})", None,
                       details)
    fix = install_fix(f) if f.selection.release.backend == "native" else \
        uninstall_fix(f, pkgs.split())
    return Outcome("fail", f"legacy XLA stack installed ({len(report.signals)} signals): "
                           f"{', '.join(report.legacy_packages) or 'environment'}", fix, details)


def check_placeholders(f: Facts) -> Outcome:
    report = f.legacy
    if not report.placeholders:
        return Outcome("pass", "no PyPI placeholder packages")
    return Outcome("fail", f"PyPI placeholder packages installed: {', '.join(report.placeholders)} "
                           "(a merged-index install picked them)",
                   install_fix(f))


def check_coherence(f: Facts) -> Outcome:
    env, release = f.env, f.selection.release
    findings: list[tuple[Status, str]] = []
    fixes: list[str] = []
    tnx, torch = env.get("torch-neuronx"), env.get("torch")
    if tnx is not None:
        info = classify(tnx.version)
        if info.torch is not None:
            if torch is None:
                findings.append(("fail", f"torch-neuronx {tnx.version} needs torch {info.torch}, "
                                         "but torch is not installed"))
            elif not torch_matches(torch.version, info):
                findings.append(("fail", f"torch {torch.version} does not match torch-neuronx "
                                         f"{tnx.version} (built for torch {info.torch})"))
                fixes.append(install_fix(f))
            else:
                findings.append(("pass", f"torch {torch.version} matches torch-neuronx {tnx.version}"))
    for name in ("neuronx-cc", "nki", "libneuronxla"):
        dist = env.get(name)
        if dist is None or dist.wrong_package:
            continue
        pinned = release.packages.get(name, ())
        if not pinned:
            continue
        if public(dist.version) in {public(v) for v in pinned}:
            findings.append(("pass", f"{name} {dist.version} as Neuron {release.version} pins"))
        else:
            findings.append(("warn", f"{name} {dist.version} is not what Neuron {release.version} "
                                     f"pins ({listed(pinned)})"))
            fixes.append(install_fix(f))
    if env.get("nki") is not None and env.get("nrtpy") is not None:
        findings.append(("fail", "nki and nrtpy are both installed; they clash (one namespace)"))
        fixes.append(uninstall_fix(f, ["nrtpy"]))
    if torch is not None and torch_build(torch) == "CUDA":
        status: Status = "fail" if f.hardware.present else "warn"
        findings.append((status, f"torch {torch.version} is a CUDA build; Neuron "
                                 "needs the CPU build (CUDA wheels add GBs and nothing for Neuron)"))
        fixes.append(install_fix(f))  # the plan reinstalls torch as the +cpu build
    if not findings:
        return Outcome("skip", "no Neuron packages installed to compare")
    status = _worst([s for s, _ in findings])
    problems = [m for s, m in findings if s != "pass"]
    message = "; ".join(problems) if problems else f"{len(findings)} version pairs agree"
    return Outcome(status, message, " && ".join(dict.fromkeys(fixes)) or None,
                   tuple(f"{s}: {m}" for s, m in findings))


def check_chip(f: Facts) -> Outcome:
    hw = f.hardware
    details = tuple(f"{e.source}: {e.value}" + (f" -> {e.chip}" if e.chip else "")
                    for e in hw.evidence)
    if not hw.present:
        return Outcome("skip", "no Neuron hardware on this machine (preparing an environment for "
                               "another host is fine)", None, details)
    if hw.chip is None:
        return Outcome("warn", f"Neuron devices present ({hw.device_count}) but the chip generation "
                               "could not be decided",
                       shell_join(["sudo", "apt-get", "install", "-y", "aws-neuronx-dkms",
                                   "aws-neuronx-tools"]),
                       details + hw.conflicts)
    chip = get_chip(hw.chip)
    caps = chip.supports()
    summary = (f"{chip.id} ({chip.name}), {hw.device_count} device(s)"
               + (f", {hw.neuron_cores} NeuronCores ({hw.neuron_cores_source})" if hw.neuron_cores
                  else "")
               + (f", LNC={hw.logical_nc_config}" if hw.logical_nc_config else "")
               + (f", {hw.instance_type}" if hw.instance_type else "")
               + f"; native TorchNeuron {'yes' if caps['native_torch'] else 'no'}, "
               f"FP8/MXFP8 {'yes' if caps['fp8'] else 'no'}")
    if hw.conflicts:
        return Outcome("warn", f"{summary}; signals disagree: {'; '.join(hw.conflicts)}", None,
                       details)
    release = f.selection.release
    if not chip.native_torch and release.backend == "native":
        return Outcome("warn", f"{summary}. Neuron {release.version}'s native TorchNeuron needs "
                               "trn2/trn3", install_fix(f), details)
    return Outcome("pass", summary, None, details)


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


def check_driver(f: Facts) -> Outcome:
    hw, release = f.hardware, f.selection.release
    want = release.system.get("aws-neuronx-dkms")
    if not hw.present:
        return Outcome("skip", "no Neuron hardware: no driver to check")
    fix = f"{apt_install('aws-neuronx-dkms', want)} && sudo modprobe neuron"
    if hw.driver_version is None:
        if hw.dev_nodes and not hw.sysfs_devices and not hw.pci_devices:
            return Outcome("warn", f"{len(hw.dev_nodes)} /dev/neuron* node(s) but no driver sysfs "
                                   "(inside a container?); driver version unknown: read it on the "
                                   "host", "cat /sys/module/neuron/version")
        return Outcome("fail", "Neuron devices present but the neuron driver is not loaded", fix)
    details = [f"loaded module: {hw.driver_version}"]
    pkg = hw.system_packages.get("aws-neuronx-dkms")
    if pkg:
        details.append(f"dpkg aws-neuronx-dkms: {pkg}")
    if pkg and public(pkg) != public(hw.driver_version):
        return Outcome("warn", f"driver {hw.driver_version} is loaded but aws-neuronx-dkms {pkg} is "
                               "installed (upgraded without reload)",
                       "sudo rmmod neuron && sudo modprobe neuron", tuple(details))
    if want and _older(hw.driver_version, want):
        return Outcome("warn", f"driver {hw.driver_version} is older than Neuron {release.version} "
                               f"ships ({want})", fix, tuple(details))
    return Outcome("pass", f"driver {hw.driver_version}"
                           + (f" (Neuron {release.version} ships {want})" if want else ""),
                   None, tuple(details))


def check_runtime(f: Facts) -> Outcome:
    hw, release = f.hardware, f.selection.release
    rt = hw.runtime_version
    want = release.system.get("aws-neuronx-runtime-lib")
    if rt is None:
        if hw.present:
            return Outcome("warn", "Neuron runtime library (aws-neuronx-runtime-lib) not found",
                           apt_install("aws-neuronx-runtime-lib", want))
        return Outcome("skip", "no Neuron runtime or hardware on this machine")
    details = [f"runtime {rt} from {hw.runtime_source}"]
    rt_release = _release_of(f, "aws-neuronx-runtime-lib", rt)
    drv_release = _release_of(f, "aws-neuronx-dkms", hw.driver_version)
    if rt_release and drv_release:
        details.append(f"runtime is from Neuron {rt_release.version}, driver from "
                       f"{drv_release.version}")
        if rt_release.key > drv_release.key:
            need = rt_release.system.get("aws-neuronx-dkms", "")
            return Outcome("fail", f"runtime {rt} (Neuron {rt_release.version}) is newer than driver "
                                   f"{hw.driver_version} (Neuron {drv_release.version}): known "
                                   "failure 'Neuron Runtime ... is not compatible with the "
                                   "installed aws-neuronx-dkms'",
                           f"{apt_install('aws-neuronx-dkms', need or None)} && "
                           "sudo rmmod neuron && sudo modprobe neuron", tuple(details))
    if want and public(rt) != public(want):
        return Outcome("warn", f"runtime {rt} is not the one Neuron {release.version} ships ({want})",
                       apt_install("aws-neuronx-runtime-lib", want), tuple(details))
    return Outcome("pass", f"runtime {rt}" + (f", as Neuron {release.version} ships" if want else ""),
                   None, tuple(details))


def check_device(f: Facts) -> Outcome:
    report = f.probe
    details = tuple(f"{t.tier}: {t.status} ({t.detail}, {t.ms:g} ms)" for t in report.tiers)
    if report.outcome == "no-torch":
        if f.device == "auto":
            return Outcome("skip", "torch is not installed in the target environment", None, details)
        return Outcome("fail", f"--device {f.device}: torch is not installed", None, details)
    if not report.ok:
        return Outcome("fail", report.detail, None, details)
    if f.hardware.present and report.device != "neuron":
        return Outcome("warn", f"probe passed on {report.device}, but this host has Neuron devices "
                               "and no 'neuron' torch backend is registered",
                       install_fix(f), details)
    return Outcome("pass", f"{report.detail} (torch {report.torch})", None, details)


def _relock_fix(f: Facts) -> str:
    """Lock for this environment's Python where the release supports it, else a new venv."""
    release, minor = f.selection.release, ".".join(f.env.python.split(".")[:2])
    if minor not in release.python:
        return install_fix(f)
    return neuronctl_command(f, "lock", "--release", release.version, "--python", minor,
                             "-o", str(f.lock))


def check_lock(f: Facts) -> Outcome:
    from neuronctl.resolvers.pylock import packages_for

    assert f.lock is not None
    lock = f.pylock
    markers = dict(f.env.markers)
    if not f.lock_fits():
        return Outcome("fail", f"{f.lock} is not for this environment (Python {f.env.python}, "
                               f"{f.env.machine}): its environments are "
                               + "; ".join(str(m) for m in lock.environments),
                       _relock_fix(f))
    locked = packages_for(lock, markers)
    drift = []
    for pkg in locked:
        have = f.env.get(pkg.name)
        if have is None:
            drift.append(f"{pkg.name}: locked {pkg.version}, not installed")
        elif pkg.version and public(have.version) != public(str(pkg.version)) and \
                have.version != str(pkg.version):
            drift.append(f"{pkg.name}: locked {pkg.version}, installed {have.version}")
    if drift:
        return Outcome("fail", f"{len(drift)} of {len(locked)} locked packages differ from "
                               f"{f.lock}", install_fix(f),
                       tuple(drift))
    return Outcome("pass", f"all {len(locked)} packages match {f.lock}")


CHECKS: tuple[CheckSpec, ...] = (
    CheckSpec("python.version", "Python interpreter", check_python),
    CheckSpec("packages.torch-neuronx", "torch-neuronx", check_torch_neuronx),
    CheckSpec("packages.legacy-xla", "Legacy XLA stack", check_legacy),
    CheckSpec("packages.placeholders", "PyPI placeholder packages", check_placeholders),
    CheckSpec("packages.coherence", "Package versions agree", check_coherence),
    CheckSpec("hardware.chip", "Chip generation", check_chip),
    CheckSpec("hardware.driver", "Neuron driver", check_driver),
    CheckSpec("runtime.compat", "Neuron runtime", check_runtime),
    CheckSpec("device.probe", "Device probe", check_device),
    CheckSpec("lock.drift", "Lock file drift", check_lock),
)
CHECK_IDS: tuple[str, ...] = tuple(c.id for c in CHECKS)
