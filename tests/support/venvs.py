"""Real venvs the install tests work in: what is installed in one, a byte-for-byte snapshot,
fresh copies of a venv built once, and the legacy stack's venv."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from support.wheels import find_python, make_venv, pip_install, site_packages

ENGINES = ["pip", "uv"]
LEGACY = ["torch-2.9", "tnx-legacy", "torch-xla", "libneuronxla", "cc-2.26"]


def installed(venv_python: Path) -> dict[str, str]:
    out = subprocess.run([str(venv_python), "-c",
                          "import json, importlib.metadata as m; print(json.dumps("
                          "{d.metadata['Name']: d.version for d in m.distributions()}))"],
                         capture_output=True, text=True, check=True).stdout
    return {k.lower().replace("_", "-"): v for k, v in json.loads(out).items()}


def snapshot(venv: Path) -> dict[str, str]:
    """Every file under the venv with its content hash: 'identical' means byte for byte."""
    out = {}
    for path in sorted(venv.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            out[str(path.relative_to(venv))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def legacy_venv(tmp_path: Path, stack_wheels: dict[str, Path]) -> Path:
    """A venv (Python 3.12, with pip) holding the legacy stack, at tmp_path/legacy, the test's own.

    Each test changes its venv, so each gets a copy; what is copied is built once per test
    session (per xdist worker: its own basetemp) for the same wheels, keyed by their content, in
    the session's base temp folder (tmp_path's parent), so the cache goes with pytest's temp files.
    Building it (ensurepip, then pip installing five wheels) costs seconds; a copy, a fraction of one."""
    wheels = [stack_wheels[p] for p in LEGACY]
    python = find_python("3.12")
    key = hashlib.sha256("\0".join([python, *(sha256_of(w) for w in wheels)]).encode()).hexdigest()[:16]
    template = tmp_path.parent / "venv-cache" / f"legacy-{key}"
    if not template.is_dir():
        building = template.with_name(template.name + ".building")
        shutil.rmtree(building, ignore_errors=True)  # a build cut short by an earlier failure
        py = make_venv(building, python, with_pip=True)
        pip_install(py, wheels)
        # Built at its own path and then moved: the copies' python is a link to the base
        # interpreter, and pip's own scripts (never run by the tests) keep the build's shebang.
        building.rename(template)
    dest = tmp_path / "legacy"
    shutil.copytree(template, dest, symlinks=True)
    return dest


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pip_venvs_in(root: Path) -> dict[str, Path]:
    """A venv with pip for Python 3.10 (no -P there) and 3.12; tests take copies (copied_venv)."""
    return {minor: make_venv(root / minor, find_python(minor), with_pip=True).parent.parent
            for minor in ("3.10", "3.12")}


def copied_venv(pip_venvs: dict[str, Path], minor: str, dest: Path) -> Path:
    """A fresh copy of that venv (its bin/python is a link to the base, so the copy runs)."""
    shutil.copytree(pip_venvs[minor], dest, symlinks=True)
    return dest / "bin" / "python"


def said(venv_python: Path, name: str = "demo") -> str | None:
    """What the installed package says (None: not installed)."""
    init = site_packages(venv_python.parent.parent) / name / "__init__.py"
    return init.read_text() if init.exists() else None
