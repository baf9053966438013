"""Which environment `neuronctl install` changes: --python PATH, --venv DIR (created at its final
path if absent), or the active virtualenv; never neuronctl's own environment by accident."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from msgspec import Struct

from neuronctl.errors import InputError
from neuronctl.ops.target_env import TargetPython, choose_target, is_own, refuse_own
from neuronctl.probes.pyenv import resolve_python
from neuronctl.safety import expand_user


class InstallTarget(Struct, frozen=True):
    """The environment an install changes: an interpreter, or a venv it creates or reuses."""

    python: str
    """The interpreter to inspect: the target's own, or for a new venv the base it is made from."""
    venv: Path | None = None
    new_venv: bool = False
    keep_dir: bool = False
    """The --venv directory existed (empty): a failure empties it again instead of removing it."""
    seed_pip: Path | None = None
    """For a new venv whose engine does not put pip in it: the base Python's bundled pip wheel,
    installed with the stack so the venv has pip without a trip to PyPI."""
    reason: str = "--venv"
    """Why this environment (neuronctl.ops.target_env: --python, active venv, ./.venv)."""

    @property
    def final_python(self) -> str:
        """The interpreter the engine installs into."""
        if self.venv is not None:
            return str(self.venv / "bin" / "python")
        return self.python

    @property
    def environment(self) -> str:
        """The environment's directory, one name however it is given (--venv D, --python
        D/bin/python, a symlinked path): what concurrent installs take turns on."""
        if self.venv is not None:
            return os.path.realpath(self.venv)
        return os.path.dirname(os.path.realpath(os.path.dirname(os.path.abspath(self.final_python))))

    def describe(self) -> str:
        if self.new_venv:
            seeded = f"; pip from its bundled {self.seed_pip.name}" if self.seed_pip else ""
            return f"new venv {self.venv} (from {self.python}{seeded})"
        return f"{self.final_python} ({self.reason})"


def _venv_base(venv_python: str | None, preferred: Callable[[], Sequence[str]], run_it: bool) -> str:
    # the interpreter search (pyenv's versions, PATH, glob): only a new venv needs a base
    from neuronctl.ops.interpreters import find_interpreter

    if venv_python:
        if "/" in venv_python or venv_python.startswith("."):
            return resolve_python(venv_python, run_it=run_it)
        found = find_interpreter(venv_python)
        if found is None:
            raise InputError(f"--venv-python {venv_python}: no Python {venv_python} on this machine "
                             "(install it, or give the interpreter's path)")
        return found
    for version in preferred():
        found = find_interpreter(version)
        if found:
            return found
    return sys.executable


def resolve_target(python: str | None, venv: Path | None, venv_python: str | None,
                   preferred: Callable[[], Sequence[str]],
                   environ: Mapping[str, str] | None = None, *, run_it: bool = True) -> InstallTarget:
    """preferred: the Pythons the stack supports, lowest first; asked only when a new venv needs
    a base interpreter and --venv-python named none. run_it=False: a named interpreter is not
    run here to check it is a Python (the caller's Inspection of it does that)."""
    env = os.environ if environ is None else environ
    if python and venv:
        raise InputError("--python and --venv name two targets; give one")
    if venv_python and not venv:
        raise InputError("--venv-python only applies with --venv DIR")
    if venv is not None:
        venv = expand_user(venv, "--venv").absolute()
        if venv.is_symlink() and not venv.exists():  # else the venv would be made at its target
            raise InputError(f"--venv {venv}: a dangling symlink (to {os.readlink(venv)}); "
                             "remove it or point it at an existing directory")
        exe = venv / "bin" / "python"
        if exe.exists():
            refuse_own(TargetPython(str(exe), "--venv", is_own(str(exe))))
            if venv_python:
                raise InputError(f"--venv {venv} already exists; --venv-python only applies to a new one")
            return InstallTarget(str(exe), venv, False)
        if venv.exists() and (not venv.is_dir() or any(venv.iterdir())):
            raise InputError(f"--venv {venv}: exists and is not a virtual environment")
        if not venv.parent.is_dir():
            raise InputError(f"--venv {venv}: parent directory {venv.parent} does not exist")
        return InstallTarget(_venv_base(venv_python, preferred, run_it), venv, True, keep_dir=venv.is_dir())
    # --python, an active venv or ./.venv, by the rule every command shares; never ours.
    chosen = refuse_own(choose_target(python, environ=env, run_it=run_it))
    return InstallTarget(chosen.python, reason=chosen.reason)
