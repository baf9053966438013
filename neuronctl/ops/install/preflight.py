"""The preflight of an install, checks before anything is downloaded or changed: the target
Python fits the stack, the chip fits when Neuron hardware is present, no documented rule forbids
the stack, the pip engine has a pip to run, --offline has nothing to fetch. Each either raises an
InputError (exit 2, nothing changed) or says what the user should know."""

from __future__ import annotations

from collections.abc import Sequence

from neuronctl.backend.engine import Choice, Engine
from neuronctl.errors import InputError
from neuronctl.locked_file import LockedFile
from neuronctl.manifest import Framework, Manifest
from neuronctl.ops.install.target import InstallTarget
from neuronctl.ops.reporter import Note, Reporter, Warn
from neuronctl.probes.hardware import HardwareReport
from neuronctl.probes.pyenv import PythonEnv
from neuronctl.probes.sysroot import SysRoot

NO_HARDWARE = "no Neuron hardware here; preparing an environment for another host"


def check_python(supported: Sequence[str], version: str) -> None:
    minor = ".".join(version.split(".")[:2])
    if supported and minor not in supported:
        raise InputError(f"the target is Python {version}; this stack needs Python "
                         f"{', '.join(supported)}",
                         hint=f"install into a new venv: --venv DIR --venv-python {supported[0]}")


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
    """The documented rules on this stack (the doctor's own): bad input where one forbids it
    (unless --allow-unsupported), else a note for each that applies."""
    from neuronctl.ops.doctor.checks_rules import install_rule_notes  # the doctor's checks: lazily

    for note in install_rule_notes(manifest, release, framework, python, hardware, sysroot,
                                   allow_unsupported):
        reporter.emit(Note(note))


def check_offline(engine: Engine, files: Sequence[LockedFile]) -> None:
    """--offline with an engine that keeps no files of its own can install only local files."""
    if engine.has_offline_cache:
        return
    remote = [f.name for f in files if not f.url.startswith("file:")]
    if remote:
        raise InputError(f"--offline: the {engine.name} engine keeps no downloaded files, and "
                         f"{', '.join(remote[:4])}{' ...' if len(remote) > 4 else ''} "
                         "would come from the network",
                         hint="use --backend uv (it installs from its own cache offline), or "
                              "install from a wheel directory (neuronctl download)")


def check_engine(choice: Choice, target: InstallTarget, env: PythonEnv) -> None:
    """The pip engine is the target's own pip: an existing target without one cannot use it."""
    if choice.engine.needs_target_pip and not target.new_venv and env.get("pip") is None:
        raise InputError(f"{target.final_python} has no pip, and the {choice.engine.name} engine "
                         "is its own pip "
                         f"({choice.reason})", hint="use --backend uv, or install pip there first")
