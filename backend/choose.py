"""Which installer engine runs: --engine flag > NEURONCTL_ENGINE > config `engine` > auto (uv
when it is installed, else pip), the one precedence of neuronctl.settings, with the reason
reported."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from neuronctl.backend.engine import Choice
from neuronctl.errors import InputError
from neuronctl.settings import ENGINES

BACKENDS = ENGINES  # the engines' names, declared in neuronctl.settings


def absolute_path(path: str | None) -> str:
    """PATH without its relative entries ('', '.', 'bin'): those name the working directory,
    and a ./uv or ./python3.12 of a cloned repository must never be taken for the real one."""
    entries = (path if path is not None else os.defpath).split(os.pathsep)
    return os.pathsep.join(e for e in entries if os.path.isabs(e))


def find_uv(environ: Mapping[str, str]) -> str | None:
    """uv on PATH (its absolute entries), else next to this interpreter (uv installed into
    neuronctl's own venv)."""
    found = shutil.which("uv", path=absolute_path(environ.get("PATH")))
    if found:
        return found
    beside = Path(sys.executable).with_name("uv")
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def _uv(uv: str, reason: str) -> Choice:
    from neuronctl.backend.uv_engine import UvEngine

    return Choice(UvEngine(uv), reason)


def _pip(reason: str) -> Choice:
    from neuronctl.backend.pip_engine import PipEngine

    return Choice(PipEngine(), reason)


def choose_engine(value: str | None, where: str = "default", environ: Mapping[str, str] | None = None,
                  uv_path: str | None = None) -> Choice:
    """The engine the resolved `engine` setting names (neuronctl.settings applies flag >
    environment > config > default; `where` is its source as messages name it: "--engine",
    "NEURONCTL_ENGINE", "config engine", or an old name as typed: "--backend", "config
    backend"). None or auto: uv where it is found, else pip."""
    env = os.environ if environ is None else environ
    if value and value not in BACKENDS:
        raise InputError(f"{where} {value!r}: expected one of {', '.join(BACKENDS)}")
    if value == "uv":
        uv = uv_path or find_uv(env)
        if uv is None:
            raise InputError(f"{where} uv: uv is not installed (pip install uv, or --engine pip)")
        return _uv(uv, f"{where} {value}")
    if value == "pip":
        return _pip(f"{where} {value}")
    uv = uv_path or find_uv(env)
    if uv is not None:
        return _uv(uv, f"auto: uv found at {uv}")
    return _pip("auto: uv not found, using the target's pip")
