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


def legacy_venv(tmp_path, stack_wheels) -> Path:
    py = make_venv(tmp_path / "legacy", find_python("3.12"), with_pip=True)
    pip_install(py, [stack_wheels[p] for p in LEGACY])
    return tmp_path / "legacy"


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
