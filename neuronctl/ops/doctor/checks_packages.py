"""The doctor's checks of the target interpreter and its packages: python.version and packages.*,
each pure over the shared Facts."""

from __future__ import annotations

from packaging.version import InvalidVersion

from neuronctl.chips import get_chip
from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.fixes import (
    install_fix,
    listed,
    neuronctl_command,
    public,
    uninstall_fix,
)
from neuronctl.ops.doctor.registry import HARDWARE, check
from neuronctl.ops.doctor.runner import CheckOutcome, Status
from neuronctl.probes.pyenv import PythonEnv, torch_build
from neuronctl.release.model import Framework, Release, Rule
from neuronctl.release.rules import Situation, broken_rules, describe
from neuronctl.torch_neuronx import classify, torch_matches


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
        if by_torch is not None and by_torch.flavour == release.flavour:
            return by_torch
    return release.default_framework()


def _xla_rules(rules: tuple[Rule, ...] | list[Rule]) -> list[Rule]:
    # "backend": a rule's key for the flavour
    return [r for r in rules if r.kind == "support" and "xla" in r.when.get("backend", ())]


def _broken_xla(f: Facts) -> list[Rule]:
    s = Situation(f.selection.release.version, flavour="xla", chip=f.hardware.chip or None)
    return _xla_rules(broken_rules(f.manifest.rules, s, ("support",)))


def xla_ended(f: Facts) -> str:
    """The fail-severity rules that end the XLA line here, as words to append ("" if none)."""
    words = [describe(r) for r in _broken_xla(f) if r.severity == "fail"]
    return f"; {'; '.join(words)}" if words else ""


def shipped_xla(f: Facts) -> tuple[str, tuple[str, ...]] | None:
    """The words for a legacy XLA torch-neuronx the native release in use still ships (2.33.x
    keeps the 2.9 line for inference on Trn2/Trn3): inference only, with the support rules and
    their sources. None where the release does not ship the installed version, or where a
    fail-severity rule of the data ends that line here (XLA inference on Trn2/Trn3 in 2.34)."""
    release, tnx = f.selection.release, f.env.get("torch-neuronx")
    if tnx is None or classify(tnx.version).flavour != "xla":
        return None
    if public(tnx.version) not in {public(v) for v in release.packages.get("torch-neuronx", ())}:
        return None
    chip = f.hardware.chip or None
    ruled = _broken_xla(f)
    if any(r.severity == "fail" for r in ruled):
        return None
    # The rule that will end this line on this chip, where the data knows one.
    ends = [r for r in _xla_rules(f.manifest.rules) if r.severity == "fail"
            and not r.applies_to(release.version) and chip in r.when.get("chips", (chip,))]
    words = tuple(describe(r) for r in (*ruled, *ends))
    where = f" on {chip}" if chip else ""
    said = f": {'; '.join(words)}" if words else ""
    return (f"the legacy XLA line Neuron {release.version} still ships, supported{where} for "
            f"inference only (XLA training ended in 2.30){said}", words)


def labelled(versions: tuple[str, ...] | list[str]) -> str:
    """torch-neuronx pins for a message, the legacy XLA build named as such: a native release
    that still ships the 2.9 line ships it for inference only (XLA training ended in 2.30)."""
    return listed([f"{v} (legacy XLA build, for inference)" if classify(v).flavour == "xla" else v
                   for v in versions])


@check("python.version", "Python interpreter")
def check_python(f: Facts) -> CheckOutcome:
    env, release = f.env, f.selection.release
    fw = _target_framework(f)
    supported = fw.python if fw else release.python
    py = ".".join(env.python.split(".")[:2])
    where = f"Python {env.python} ({env.executable}{', venv' if env.in_venv else ''})"
    details = (f"release {release.version} ({f.selection.reason}) supports Python "
               f"{', '.join(supported) or 'unknown'}",)
    if not supported or py in supported:
        if fw and fw.flavour == "native" and (env.system != "Linux" or env.machine != "x86_64"):
            return CheckOutcome("warn", f"{where}: native TorchNeuron ships for Linux x86_64 only, "
                                   f"this is {env.system} {env.machine}", None, details)
        return CheckOutcome("pass", f"{where} fits Neuron {release.version}", None, details)
    tnx = f.env.get("torch-neuronx")
    fix = install_fix(f)
    message = (f"{where} is not supported by Neuron {release.version} "
               f"({fw.flavour if fw else release.flavour} needs {supported[0]}-{supported[-1]})")
    if tnx is None:
        return CheckOutcome("warn", message + "; nothing Neuron is installed here yet", fix, details)
    return CheckOutcome("fail", message, fix, details)


@check("packages.torch-neuronx", "torch-neuronx", gathers=HARDWARE)
def check_torch_neuronx(f: Facts) -> CheckOutcome:
    release = f.selection.release
    tnx = f.env.get("torch-neuronx")
    hw = f.hardware
    if tnx is None:
        return CheckOutcome("warn", f"torch-neuronx is not installed (Neuron {release.version} pins "
                               f"{labelled(release.packages.get('torch-neuronx', ()))})", install_fix(f))
    info = classify(tnx.version)
    chip = get_chip(hw.chip) if hw.chip else None
    details = (f"selected release {release.version}: {f.selection.reason}",)
    if info.flavour == "placeholder" or tnx.wrong_package:
        return CheckOutcome("fail", f"torch-neuronx {tnx.version} is the PyPI placeholder, not Neuron's "
                               "package (import raises 'WRONG PACKAGE')", install_fix(f), details)
    if info.flavour == "xla":
        if chip is not None and not chip.native_torch:
            return CheckOutcome("pass", f"torch-neuronx {tnx.version}: legacy XLA line for torch "
                                   f"{info.torch}, the right stack for {chip.id} ({chip.name} cannot "
                                   "run native TorchNeuron)", None, details)
        shipped = shipped_xla(f) if release.flavour == "native" else None
        if shipped is not None:
            return CheckOutcome("warn", f"torch-neuronx {tnx.version} (torch {info.torch}) is "
                                   f"{shipped[0]}", install_fix(f), (*details, *shipped[1]))
        if release.flavour == "native":
            return CheckOutcome("fail", f"torch-neuronx {tnx.version} is the legacy XLA library (torch "
                                   f"{info.torch}); Neuron {release.version} ships native TorchNeuron"
                           + xla_ended(f), install_fix(f), details)
        return CheckOutcome("pass", f"torch-neuronx {tnx.version}: legacy XLA line for torch {info.torch}, "
                               f"as Neuron {release.version} ships", None, details)
    if info.flavour == "native":
        if chip is not None and not chip.native_torch:
            return CheckOutcome("fail", f"torch-neuronx {tnx.version} is native TorchNeuron, which runs on "
                                   f"trn2/trn3 only; this host is {chip.id} ({chip.name})",
                           install_fix(f), details)
        pinned = {public(v) for v in release.packages.get("torch-neuronx", ())}
        if info.public not in pinned:
            return CheckOutcome("warn", f"torch-neuronx {tnx.version} (native, torch {info.torch}) is not "
                                   f"a version Neuron {release.version} pins ({listed(sorted(pinned))})",
                           install_fix(f), details)
        return CheckOutcome("pass", f"torch-neuronx {tnx.version}: native TorchNeuron for torch "
                               f"{info.torch}, pinned by Neuron {release.version}", None, details)
    return CheckOutcome("warn", f"torch-neuronx {tnx.version}: a version line neuronctl does not know",
                   neuronctl_command(f, "releases"), details)


@check("packages.legacy-xla", "Legacy XLA stack", gathers=HARDWARE)
def check_legacy(f: Facts) -> CheckOutcome:
    report = f.legacy
    details = tuple(f"{s.name}: {s.says} ({s.detail})" for s in report.signals)
    chip = get_chip(f.hardware.chip) if f.hardware.chip else None
    if report.verdict in ("none", "native"):
        return CheckOutcome("pass", "no legacy XLA stack", None, details)
    pkgs = " ".join(report.legacy_packages) or "torch-xla libneuronxla"
    if report.verdict == "mixed":
        return CheckOutcome("warn", "signals disagree: native and legacy XLA parts are both present",
                       install_fix(f) if report.legacy_packages else "unset PJRT_DEVICE", details)
    if chip is not None and not chip.native_torch:
        return CheckOutcome("pass", f"legacy XLA stack, expected on {chip.id} ({chip.name})", None,
                       details)
    native = f.selection.release.flavour == "native"
    fix = install_fix(f) if native else uninstall_fix(f, pkgs.split())
    found = (f"legacy XLA stack installed ({len(report.signals)} signals): "
             f"{', '.join(report.legacy_packages) or 'environment'}")
    shipped = shipped_xla(f) if native else None
    if shipped is not None:
        return CheckOutcome("warn", f"{found}; torch-neuronx is {shipped[0]}", fix,
                       (*details, *shipped[1]))
    return CheckOutcome("fail", found + (xla_ended(f) if native else ""), fix, details)


@check("packages.placeholders", "PyPI placeholder packages")
def check_placeholders(f: Facts) -> CheckOutcome:
    report = f.legacy
    if not report.placeholders:
        return CheckOutcome("pass", "no PyPI placeholder packages")
    return CheckOutcome("fail", f"PyPI placeholder packages installed: {', '.join(report.placeholders)} "
                           "(a merged-index install picked them)",
                   install_fix(f))


def _unpublished_pin(name: str, version: str, release: Release) -> tuple[Status, str]:
    """A package whose pin AWS has not published: judged against the constraint of AWS's
    install recipe, and said to be so."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    spec = release.constraints[name]
    shown = f"{name}{spec}" if spec else f"{name} (unpinned)"
    try:
        fits = Version(version) in SpecifierSet(spec)
    except InvalidVersion:
        fits = False
    if fits:
        return "pass", (f"{name} {version}: Neuron {release.version} does not publish its pin; "
                        f"within AWS's recipe, {shown}")
    return "warn", (f"{name} {version} is outside AWS's recipe for Neuron {release.version} "
                    f"({shown}; its pin is not published)")


@check("packages.coherence", "Package versions agree", gathers=HARDWARE)
def check_coherence(f: Facts) -> CheckOutcome:
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
        if not pinned and name in release.constraints:
            findings.append(_unpublished_pin(name, dist.version, release))
            continue
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
        return CheckOutcome("skip", "no Neuron packages installed to compare")
    status = _worst([s for s, _ in findings])
    problems = [m for s, m in findings if s != "pass"]
    message = "; ".join(problems) if problems else f"{len(findings)} version pairs agree"
    return CheckOutcome(status, message, " && ".join(dict.fromkeys(fixes)) or None,
                   tuple(f"{s}: {m}" for s, m in findings))
