"""The commands the doctor suggests. Each is one a user can paste in the checked environment and
that works there, and one report tells one story: every install fix aims at the same release,
PyTorch line and target, whichever check asks for it."""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from packaging.version import InvalidVersion, Version

from neuronctl.chips import get_chip
from neuronctl.ops.doctor.facts import Facts
from neuronctl.release.model import Framework, Release
from neuronctl.torch_neuronx import classify

# Where a fix puts a new environment when the checked one cannot hold the release (wrong Python).
NEW_VENV = ".venv-neuron"


def shell_join(words: Sequence[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)


def neuronctl_program() -> list[str]:
    """How to run this neuronctl from a shell: its name where PATH finds this very install, else
    its script's path (a venv that is not activated), else `python -m neuronctl`."""
    here = Path(sys.executable).parent
    found = shutil.which("neuronctl")
    if found is not None and Path(found).parent.resolve() == here.resolve():
        return ["neuronctl"]
    script = here / "neuronctl"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "neuronctl"]


def neuronctl_command(f: Facts, *args: str) -> str:
    """A neuronctl command that keeps the report's own --manifest."""
    words = neuronctl_program()
    if f.manifest.origin == "file":
        words += ["--manifest", f.manifest.source]
    return shell_join([*words, *args])


def chip_known(f: Facts) -> bool:
    """Whether a fix may aim at the chip: only when this run reads the hardware anyway (a
    `--only python.version` run must not start reading sysfs, IMDS and neuron-ls for a hint)."""
    return f.knows("hardware")


def _chip_runs_native(f: Facts) -> bool:
    if not chip_known(f):
        return True  # not read: `neuronctl install` reads it, chooses and preflights
    return f.hardware.chip is None or get_chip(f.hardware.chip).native_torch


def fix_plan(f: Facts) -> tuple[Release, Framework | None]:
    """The release and PyTorch line every install fix in a report aims at: the installed line
    where the release offers it and the chip runs it, else the release's own line, else (on a chip
    without native TorchNeuron) the release's legacy XLA line or the newest release that has one."""
    release = f.selection.release
    native_ok = _chip_runs_native(f)
    tnx = f.env.get("torch-neuronx")
    if tnx is not None:
        info = classify(tnx.version)
        fw = release.framework_for_torch(info.torch) if info.torch else None
        if fw is not None and fw.flavour == info.flavour and (fw.flavour == "xla") != native_ok:
            return release, fw
    if native_ok:
        return release, release.default_framework()
    legacy = next((fw for fw in release.frameworks if fw.flavour == "xla"), None)
    if legacy is not None:
        return release, legacy
    older = f.manifest.latest_with_flavour("xla")
    if older is not None:
        return older, older.default_framework()
    return release, None


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _new_venv_python(fw: Framework) -> str:
    """The lowest Python the line supports that this machine has (else its lowest, which the
    install then reports as missing)."""
    from neuronctl.ops.interpreters import find_interpreter

    return next((p for p in fw.python if find_interpreter(p)), fw.python[0])


def install_fix(f: Facts) -> str:
    """`neuronctl install` of the --lock file where it fits this environment, else of the report's
    release and line into the checked environment when its Python fits, else into a new venv with
    a Python that does."""
    if f.lock is not None and f.lock_fits():
        # The report checks against a lock: the lock is what this environment should hold.
        return neuronctl_command(f, "install", "--lock", str(f.lock), "--python", f.env.executable,
                                 "--yes")
    release, fw = fix_plan(f)
    if fw is None:
        return neuronctl_command(f, "releases", "show", release.version)
    args = ["install", "--release", release.version]
    if chip_known(f):  # the PyTorch line depends on the chip; without it install chooses
        args += ["--torch", _minor(fw.torch)]
    if not fw.python or _minor(f.env.python) in fw.python:
        args += ["--python", f.env.executable]
    else:
        args += ["--venv", NEW_VENV, "--venv-python", _new_venv_python(fw)]
    return neuronctl_command(f, *args, "--yes")


def uninstall_fix(f: Facts, names: Sequence[str]) -> str:
    """Remove packages from the target with its own pip, or uv where the target has no pip."""
    python = f.env.executable
    if f.env.get("pip") is not None or shutil.which("uv") is None:
        return shell_join([python, "-m", "pip", "uninstall", "-y", *names])
    return shell_join(["uv", "pip", "uninstall", "--python", python, *names])


def apt_install(package: str, version: str | None = None) -> str:
    return shell_join(["sudo", "apt-get", "install", "-y",
                       f"{package}={version}*" if version else package])


def listed(values: Sequence[str]) -> str:
    """A version list for a message: never an empty pair of parentheses."""
    return ", ".join(values) if values else "none"


def public(version: str) -> str:
    try:
        return Version(version).public
    except InvalidVersion:
        return version
