"""Step 5 of an install, the preflight: checks of the stack before anything is fetched or
changed. The engine can install into the target (the pip engine needs the target's pip), the chip
fits when Neuron hardware is present, no documented rule forbids the stack. Each either raises an
InputError (exit 2, nothing changed) or says what the user should know. (The target's Python is
checked as the stack is formed, source.stack_for; the plan checks that --offline has nothing to
fetch, plan.plan.)"""

from __future__ import annotations

from msgspec import Struct

from neuronctl.backend.engine import Choice
from neuronctl.errors import InputError
from neuronctl.ops.install.source import Stack
from neuronctl.ops.install.target import InstallTarget
from neuronctl.ops.reporter import Note, Reporter, Warn
from neuronctl.probes.hardware import HardwareReport
from neuronctl.probes.pyenv import PythonEnv
from neuronctl.probes.sysroot import SysRoot
from neuronctl.release.model import Framework, Manifest

NO_HARDWARE = "no Neuron hardware here; preparing an environment for another host"


def check_chip(hardware: HardwareReport, framework: Framework | None) -> str | None:
    """Refuses a chip the framework does not run on; returns the warning for a host with no
    Neuron hardware at all (an environment prepared for another host), else None."""
    if framework is None:
        return None
    # No chips: AWS has not published them (2.33's legacy line); nothing to refuse on.
    if hardware.present and hardware.chip and framework.chips \
            and hardware.chip not in framework.chips:
        raise InputError(f"this host has {hardware.chip}; the {framework.flavour} torch-neuronx "
                         f"{framework.torch_neuronx} runs on {', '.join(framework.chips)}",
                         hint="pick a release line for this chip (see `neuronctl releases`)")
    return None if hardware.present else NO_HARDWARE


def release_note(manifest: Manifest, version: str | None) -> str | None:
    """The note for a release that is not a GA one (the default, 2.33.0, is a beta)."""
    release = manifest.find(version) if version else None
    if release is None or release.status == "ga":
        return None
    return (f"Neuron {release.version} is a {release.status} release "
            "(choose another with --release; `neuronctl releases` lists them)")


def stack_notes(manifest: Manifest, release: str | None, framework: Framework | None,
                hardware: HardwareReport, reporter: Reporter) -> None:
    """The release's note and the chip's check, for the stack the source chose."""
    note = release_note(manifest, release)
    if note is not None:
        reporter.emit(Note(note))
    warning = check_chip(hardware, framework)
    if warning is not None:
        reporter.emit(Warn(warning))


def rule_notes(manifest: Manifest, release: str | None, framework: Framework | None, python: str,
               hardware: HardwareReport, sysroot: SysRoot, allow_unsupported: bool,
               reporter: Reporter) -> None:
    """The documented rules on this stack, on this host's chip and OS (the doctor's own rules):
    bad input where one forbids it (unless --allow-unsupported), else a note for each that
    applies. Without Neuron hardware the environment is prepared for another host: its OS is not
    this one's, and only the rules that do not depend on the host apply."""
    from neuronctl.probes.os_release import host_os
    from neuronctl.release.stack_rules import check_stack_rules

    found = manifest.find(release) if release else None
    present = hardware.present
    for note in check_stack_rules(found, framework, [python],
                                  chip=hardware.chip if present else None,
                                  os=host_os(sysroot) if present else None,
                                  allow=allow_unsupported, what="install"):
        reporter.emit(Note(note))


def check_engine(choice: Choice, target: InstallTarget, env: PythonEnv) -> None:
    """The pip engine is the target's own pip: an existing target without one cannot use it."""
    if choice.engine.needs_target_pip and not target.new_venv and env.get("pip") is None:
        raise InputError(f"{target.final_python} has no pip, and the {choice.engine.name} engine "
                         "is its own pip "
                         f"({choice.reason})", hint="use --engine uv, or install pip there first")


class PreflightInput(Struct, frozen=True):
    """What the preflight judges: the stack for the target, as inspected, and this host."""

    stack: Stack
    target: InstallTarget
    env: PythonEnv
    engine: Choice
    manifest: Manifest
    hardware: HardwareReport
    sysroot: SysRoot
    allow_unsupported: bool


def preflight(given: PreflightInput, reporter: Reporter) -> None:
    """Every check of the stack, before the source fetches anything (a fresh resolution is the
    network) and before anything changes: bad input, exit 2, or the notes that apply."""
    stack = given.stack
    check_engine(given.engine, given.target, given.env)
    if stack.framework is not None:  # a fallback lock has no Neuron package: nothing to fit
        stack_notes(given.manifest, stack.release, stack.framework, given.hardware, reporter)
    rule_notes(given.manifest, stack.release, stack.framework, given.env.python, given.hardware,
               given.sysroot, given.allow_unsupported, reporter)
