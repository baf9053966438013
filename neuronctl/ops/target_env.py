"""The one rule for which environment a command inspects or changes (doctor, env, smoke, probe,
bundle, install): --python, else an active VIRTUAL_ENV that is not neuronctl's own, else ./.venv
in the working directory, else neuronctl's own interpreter, named as such. Every report names
the target this chose and why, so a first report is never silently about neuronctl's own venv."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from msgspec import Struct

from neuronctl.errors import InputError
from neuronctl.probes.pyenv import resolve_python
from neuronctl.safety import expand_user

OWN = "neuronctl's own environment"
ACTIVE = "active venv"
CWD_VENV = "./.venv in the working directory"
GIVEN = "--python"


class TargetPython(Struct, frozen=True):
    """The target interpreter: the Python a command works on, and why it was chosen."""

    python: str
    """Absolute, not resolved: a venv's bin/python is a symlink out of the venv."""
    reason: str
    own: bool = False
    """It is neuronctl's own environment (install refuses it)."""

    def shown(self) -> str:
        home = os.path.expanduser("~")
        if home not in ("", "/") and self.python.startswith(home + os.sep):
            return "~" + self.python[len(home):]
        return self.python

    def line(self) -> str:
        """The first line of a text report: `target: ~/proj/.venv/bin/python (active venv)`."""
        return f"target: {self.shown()} ({self.reason})"

    def to_json(self) -> dict[str, Any]:
        return {"python": self.python, "reason": self.reason}


def own_prefix() -> str:
    return os.path.realpath(sys.prefix)


def env_prefix(python: str) -> str:
    """The environment directory of an interpreter path (D for D/bin/python), resolved; a
    venv's bin/python links out of the venv, so the link's own directory is what counts."""
    bin_dir = os.path.dirname(os.path.abspath(python))
    return os.path.realpath(os.path.dirname(bin_dir))


def is_own(python: str) -> bool:
    """Whether an interpreter path is neuronctl's own environment (its sys.prefix), or the
    very interpreter neuronctl runs on."""
    if env_prefix(python) == own_prefix():
        return True
    try:
        return os.path.samefile(python, sys.executable) and sys.prefix == sys.base_prefix
    except OSError:
        return False


def _venv_python(directory: Path) -> str | None:
    """D/bin/python of a directory that is a virtual environment (pyvenv.cfg beside bin/)."""
    exe = directory / "bin" / "python"
    if (directory / "pyvenv.cfg").is_file() and exe.is_file() and os.access(exe, os.X_OK):
        return str(exe)
    return None


def choose_target(python: str | None, *, environ: Mapping[str, str] | None = None,
                  cwd: Path | None = None, run_it: bool = True) -> TargetPython:
    """The target interpreter by the rule above. A named or activated interpreter that is not a
    Python is exit 2 (resolve_python's check; run_it=False leaves it to the caller's
    inspection). An activated VIRTUAL_ENV without bin/python is exit 2 too: falling through to
    another environment would report on one the user did not mean."""
    env = os.environ if environ is None else environ
    if python:
        exe = resolve_python(python, run_it=run_it)
        return TargetPython(exe, GIVEN, is_own(exe))
    active = env.get("VIRTUAL_ENV", "")
    if active and os.path.realpath(active) != own_prefix():
        directory = expand_user(active, "VIRTUAL_ENV").absolute()
        if not (directory / "bin" / "python").is_file():
            raise InputError(f"VIRTUAL_ENV={active}: no bin/python there (a venv since removed?); "
                             "run `deactivate`, or give --python PATH")
        exe = resolve_python(str(directory), run_it=run_it)
        return TargetPython(exe, ACTIVE)
    here = (cwd or Path.cwd()).absolute() / ".venv"
    found = _venv_python(here)
    if found is not None and not is_own(found):
        return TargetPython(resolve_python(found, run_it=run_it), CWD_VENV)
    return TargetPython(sys.executable, OWN, True)


def refuse_own(target: TargetPython) -> TargetPython:
    """install's guard: never into neuronctl's own environment, activated, found or named."""
    if target.own:
        raise InputError(f"{target.python} is {OWN}, which neuronctl never installs into: give "
                         "--python PATH, --venv DIR (created if absent), or activate the "
                         "virtualenv to install into")
    return target
