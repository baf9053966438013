"""The doctor's checks: stable ids, one function each, pure over the shared Facts."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from neuronctl.chips import get_chip
from neuronctl.cli.check_runner import Outcome, Status
from neuronctl.cli.doctor_facts import Facts
from neuronctl.manifest import Framework, Release
from neuronctl.probes.pyenv import PythonEnv, torch_build
from neuronctl.routing import load_default_routing
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


def _public(version: str) -> str:
    try:
        return Version(version).public
    except InvalidVersion:
        return version


def install_commands(release: Release, fw: Framework | None, python: str | None = None) -> str:
    """The one command that puts the release's stack in place: pinned, each package from its own
    index, legacy XLA and placeholder packages removed (never a merged --extra-index-url install)."""
    if fw is None:
        return f"see `neuronctl releases show {release.version}`"
    series = ".".join(fw.torch.split(".")[:2])
    target = f" --python {shlex.quote(python)}" if python else ""
    return f"neuronctl install --release {release.version} --torch {series}{target} --yes"


def _framework_of_installed(release: Release, env: PythonEnv) -> Framework | None:
    """The release's framework line whose torch-neuronx is the one installed, if any."""
    tnx = env.get("torch-neuronx")
    if tnx is not None:
        for fw in release.frameworks:
            if _public(fw.torch_neuronx) == _public(tnx.version):
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
            by_torch = release.framework_for_torch(_public(torch.version))
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
    low = supported[0]
    fix = f"python{low} -m venv .venv && . .venv/bin/activate (then install the stack there)"
    message = (f"{where} is not supported by Neuron {release.version} "
               f"({fw.backend if fw else release.backend} needs {supported[0]}-{supported[-1]})")
    if tnx is None:
        return Outcome("warn", message + "; nothing Neuron is installed here yet", fix, details)
    return Outcome("fail", message, fix, details)


def check_torch_neuronx(f: Facts) -> Outcome:
    release = f.selection.release
    tnx = f.env.get("torch-neuronx")
    fw = release.default_framework()
    hw = f.hardware
    if tnx is None:
        return Outcome("warn", f"torch-neuronx is not installed (Neuron {release.version} pins "
                               f"{', '.join(release.packages.get('torch-neuronx', ())) or 'none'})",
                       install_commands(release, fw, f.env.executable))
    info = classify(tnx.version)
    chip = get_chip(hw.chip) if hw.chip else None
    details = (f"selected release {release.version}: {f.selection.reason}",)
    if info.backend == "placeholder" or tnx.wrong_package:
        return Outcome("fail", f"torch-neuronx {tnx.version} is the PyPI placeholder, not Neuron's "
                               "package (import raises 'WRONG PACKAGE')",
                       install_commands(release, fw, f.env.executable), details)
    if info.backend == "xla":
        if chip is not None and not chip.native_torch:
            return Outcome("pass", f"torch-neuronx {tnx.version}: legacy XLA line for torch "
                                   f"{info.torch}, the right stack for {chip.id} ({chip.name} cannot "
                                   "run native TorchNeuron)", None, details)
        if release.backend == "native":
            return Outcome("fail", f"torch-neuronx {tnx.version} is the legacy XLA library (torch "
                                   f"{info.torch}); Neuron {release.version} ships native TorchNeuron",
                           install_commands(release, fw, f.env.executable), details)
        return Outcome("pass", f"torch-neuronx {tnx.version}: legacy XLA line for torch {info.torch}, "
                               f"as Neuron {release.version} ships", None, details)
    if info.backend == "native":
        if chip is not None and not chip.native_torch:
            return Outcome("fail", f"torch-neuronx {tnx.version} is native TorchNeuron, which runs on "
                                   f"trn2/trn3 only; this host is {chip.id} ({chip.name})",
                           "use the legacy XLA line for this chip: neuronctl releases show 2.31.1",
                           details)
        pinned = {_public(v) for v in release.packages.get("torch-neuronx", ())}
        if info.public not in pinned:
            return Outcome("warn", f"torch-neuronx {tnx.version} (native, torch {info.torch}) is not "
                                   f"a version Neuron {release.version} pins ({', '.join(sorted(pinned))})",
                           install_commands(release, release.framework_for_torch(info.torch or ""),
                                            f.env.executable),
                           details)
        return Outcome("pass", f"torch-neuronx {tnx.version}: native TorchNeuron for torch "
                               f"{info.torch}, pinned by Neuron {release.version}", None, details)
    return Outcome("warn", f"torch-neuronx {tnx.version}: a version line neuronctl does not know",
                   "neuronctl releases", details)


def check_legacy(f: Facts) -> Outcome:
    report = f.legacy
    details = tuple(f"{s.name}: {s.says} ({s.detail})" for s in report.signals)
    chip = get_chip(f.hardware.chip) if f.hardware.chip else None
    if report.verdict in ("none", "native"):
        return Outcome("pass", "no legacy XLA stack", None, details)
    pkgs = " ".join(report.legacy_packages) or "torch-xla libneuronxla"
    if report.verdict == "mixed":
        return Outcome("warn", "signals disagree: native and legacy XLA parts are both present",
                       f"pip uninstall -y {pkgs}" if report.legacy_packages else
                       "unset PJRT_DEVICE", details)
    if chip is not None and not chip.native_torch:
        return Outcome("pass", f"legacy XLA stack, expected on {chip.id} ({chip.name})", None,
                       details)
    fix = f"pip uninstall -y {pkgs}"
    release = f.selection.release
    if release.backend == "native":
        fix = install_commands(release, release.default_framework(), f.env.executable)
    return Outcome("fail", f"legacy XLA stack installed ({len(report.signals)} signals): "
                           f"{', '.join(report.legacy_packages) or 'environment'}", fix, details)


def check_placeholders(f: Facts) -> Outcome:
    report = f.legacy
    if not report.placeholders:
        return Outcome("pass", "no PyPI placeholder packages")
    names = " ".join(p.split()[0] for p in report.placeholders)
    return Outcome("fail", f"PyPI placeholder packages installed: {', '.join(report.placeholders)} "
                           "(a merged-index install picked them)",
                   f"pip uninstall -y {names}, or replace them in one step: "
                   + install_commands(f.selection.release, f.selection.release.default_framework(),
                                      f.env.executable))


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
                fw = release.framework_for_torch(info.torch)
                if fw:
                    fixes.append(install_commands(release, fw, f.env.executable))
            else:
                findings.append(("pass", f"torch {torch.version} matches torch-neuronx {tnx.version}"))
    for name in ("neuronx-cc", "nki", "libneuronxla"):
        dist = env.get(name)
        if dist is None or dist.wrong_package:
            continue
        pinned = release.packages.get(name, ())
        if not pinned:
            continue
        if _public(dist.version) in {_public(v) for v in pinned}:
            findings.append(("pass", f"{name} {dist.version} as Neuron {release.version} pins"))
        else:
            findings.append(("warn", f"{name} {dist.version} is not what Neuron {release.version} "
                                     f"pins ({', '.join(pinned)})"))
            fw = _framework_of_installed(release, env) or release.default_framework()
            fixes.append(install_commands(release, fw, env.executable))
    if env.get("nki") is not None and env.get("nrtpy") is not None:
        findings.append(("fail", "nki and nrtpy are both installed; they clash (one namespace)"))
        fixes.append("pip uninstall -y nrtpy")
    if torch is not None and torch_build(torch) == "CUDA":
        status: Status = "fail" if f.hardware.present else "warn"
        findings.append((status, f"torch {torch.version} is a CUDA build; Neuron "
                                 "needs the CPU build (CUDA wheels add GBs and nothing for Neuron)"))
        fixes.append(f"pip install --index-url {load_default_routing().indexes['pytorch-cpu']} "
                     f"--force-reinstall torch=={_public(torch.version)}")
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
                               "could not be decided", "install aws-neuronx-dkms and aws-neuronx-tools",
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
                               "trn2/trn3", "use the legacy XLA line on this chip", details)
    return Outcome("pass", summary, None, details)


def _release_of(f: Facts, key: str, version: str | None) -> Release | None:
    if version is None:
        return None
    want = _public(version)
    return next((r for r in reversed(f.manifest.releases)
                 if _public(r.system.get(key, "")) == want), None)


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
    fix = (f"sudo apt-get install -y aws-neuronx-dkms={want}* && sudo modprobe neuron" if want
           else "install aws-neuronx-dkms")
    if hw.driver_version is None:
        if hw.dev_nodes and not hw.sysfs_devices and not hw.pci_devices:
            return Outcome("warn", f"{len(hw.dev_nodes)} /dev/neuron* node(s) but no driver sysfs "
                                   "(inside a container?); driver version unknown",
                           "check the driver on the host: cat /sys/module/neuron/version")
        return Outcome("fail", "Neuron devices present but the neuron driver is not loaded", fix)
    details = [f"loaded module: {hw.driver_version}"]
    pkg = hw.system_packages.get("aws-neuronx-dkms")
    if pkg:
        details.append(f"dpkg aws-neuronx-dkms: {pkg}")
    if pkg and _public(pkg) != _public(hw.driver_version):
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
                           f"sudo apt-get install -y aws-neuronx-runtime-lib={want}*" if want else None)
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
                           f"sudo apt-get install -y aws-neuronx-dkms={need}* && "
                           "sudo rmmod neuron && sudo modprobe neuron", tuple(details))
    if want and _public(rt) != _public(want):
        return Outcome("warn", f"runtime {rt} is not the one Neuron {release.version} ships ({want})",
                       f"sudo apt-get install -y aws-neuronx-runtime-lib={want}*", tuple(details))
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
                       "install native torch-neuronx (see packages.torch-neuronx)", details)
    return Outcome("pass", f"{report.detail} (torch {report.torch})", None, details)


def check_lock(f: Facts) -> Outcome:
    from packaging.markers import Marker

    from neuronctl.resolvers.pylock_read import load_pylock, packages_for

    assert f.lock is not None
    lock = load_pylock(f.lock)
    markers = dict(f.env.markers)
    if lock.environments and markers and not any(Marker(str(m)).evaluate(markers)
                                                 for m in lock.environments):
        return Outcome("fail", f"{f.lock} is not for this environment (Python {f.env.python}, "
                               f"{f.env.machine}): its environments are "
                               + "; ".join(str(m) for m in lock.environments),
                       f"neuronctl lock --python {'.'.join(f.env.python.split('.')[:2])}")
    locked = packages_for(lock, markers)
    drift = []
    for pkg in locked:
        have = f.env.get(pkg.name)
        if have is None:
            drift.append(f"{pkg.name}: locked {pkg.version}, not installed")
        elif pkg.version and _public(have.version) != _public(pkg.version) and \
                have.version != pkg.version:
            drift.append(f"{pkg.name}: locked {pkg.version}, installed {have.version}")
    if drift:
        return Outcome("fail", f"{len(drift)} of {len(locked)} locked packages differ from "
                               f"{f.lock}", f"uv pip install --python {f.env.executable} -r {f.lock}",
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
