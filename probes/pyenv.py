"""The target Python environment: interpreter facts and installed distributions.

Read from the target interpreter itself in one short subprocess (importlib.metadata), never by
parsing `pip list`, so it works for venvs without pip and for interpreters other than ours.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from neuronctl.errors import FaultError, InputError

# Packages whose top-level module is checked for the PyPI placeholder text.
WATCHED = ("torch-neuronx", "neuronx-cc", "nki", "libneuronxla", "torch-neuron", "neuron-cc",
           "torch-xla", "transformers-neuronx")

INSPECT_SCRIPT = r"""
import json, os, platform, sys, sysconfig
from importlib import metadata
WATCHED = set(json.loads(sys.argv[1]))
def canon(n):
    import re
    return re.sub(r"[-_.]+", "-", n).lower()
out = {
    "python": platform.python_version(),
    "implementation": sys.implementation.name,
    "executable": sys.executable,
    "prefix": sys.prefix,
    "base_prefix": getattr(sys, "base_prefix", sys.prefix),
    "platform": sysconfig.get_platform(),
    "machine": platform.machine(),
    "system": platform.system(),
    "libc": list(platform.libc_ver()),
    "distributions": [],
    "markers": {
        "implementation_name": sys.implementation.name,
        "implementation_version": platform.python_version(),
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_python_implementation": platform.python_implementation(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    },
}
try:
    from packaging import tags as _tags
except ImportError:
    try:
        from pip._vendor.packaging import tags as _tags
    except ImportError:
        _tags = None
if _tags is not None:
    try:
        out["tags"] = [str(t) for t in _tags.sys_tags()]
    except Exception:
        pass
seen = set()
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if not name or canon(name) in seen:
        continue
    seen.add(canon(name))
    entry = {"name": name, "version": dist.version, "requires": list(dist.requires or []),
             "summary": dist.metadata.get("Summary") or "", "installer": "",
             "xla_impl": False, "wrong_package": False}
    try:
        entry["installer"] = (dist.read_text("INSTALLER") or "").strip()
    except Exception:
        pass
    if canon(name) in WATCHED:
        files = dist.files or []
        entry["xla_impl"] = any("torch_neuronx/xla_impl/" in str(f).replace(os.sep, "/")
                                for f in files)
        for f in files:
            parts = str(f).replace(os.sep, "/").split("/")
            if len(parts) == 2 and parts[1] == "__init__.py":
                try:
                    text = dist.locate_file(f).read_text(errors="replace")[:65536]
                except OSError:
                    continue
                if "WRONG PACKAGE" in text:
                    entry["wrong_package"] = True
    out["distributions"].append(entry)
print(json.dumps(out))
"""


@dataclass(frozen=True)
class InstalledDist:
    name: str
    version: str
    requires: tuple[str, ...] = ()
    summary: str = ""
    installer: str = ""
    xla_impl: bool = False
    wrong_package: bool = False


@dataclass(frozen=True)
class PythonEnv:
    python: str
    implementation: str
    executable: str
    prefix: str
    base_prefix: str
    platform: str
    machine: str
    system: str
    libc: tuple[str, ...]
    distributions: Mapping[str, InstalledDist] = field(default_factory=dict)
    markers: Mapping[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    """The wheel tags the target accepts, best first (from its packaging or pip; may be empty)."""

    @property
    def in_venv(self) -> bool:
        return self.prefix != self.base_prefix

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(p) for p in self.python.split(".")[:2] if p.isdigit())

    def get(self, name: str) -> InstalledDist | None:
        return self.distributions.get(str(canonicalize_name(name)))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["in_venv"] = self.in_venv
        data["tags"] = list(self.tags[:8])
        data["distributions"] = sorted(
            ({"name": d.name, "version": d.version} for d in self.distributions.values()),
            key=lambda d: d["name"].lower())
        return data


def torch_build(dist: InstalledDist) -> str:
    """An installed torch's build: "CUDA", "CPU", another local label, or "default"."""
    local = dist.version.partition("+")[2]
    if local.startswith("cu") or any(r.startswith("nvidia-") for r in dist.requires):
        return "CUDA"
    return "CPU" if local == "cpu" else local or "default"


def parse_inspection(data: object) -> PythonEnv:
    if not isinstance(data, dict):
        raise FaultError("target interpreter printed unexpected output")
    dists = {}
    for raw in data.get("distributions", []):
        dist = InstalledDist(
            name=str(raw["name"]), version=str(raw["version"]),
            requires=tuple(str(r) for r in raw.get("requires", [])),
            summary=str(raw.get("summary", "")), installer=str(raw.get("installer", "")),
            xla_impl=bool(raw.get("xla_impl")), wrong_package=bool(raw.get("wrong_package")))
        dists[str(canonicalize_name(dist.name))] = dist
    return PythonEnv(
        python=str(data["python"]), implementation=str(data["implementation"]),
        executable=str(data["executable"]), prefix=str(data["prefix"]),
        base_prefix=str(data["base_prefix"]), platform=str(data["platform"]),
        machine=str(data["machine"]), system=str(data["system"]),
        libc=tuple(str(x) for x in data.get("libc", [])), distributions=dists,
        markers={str(k): str(v) for k, v in data.get("markers", {}).items()},
        tags=tuple(str(t) for t in data.get("tags", [])))


def resolve_python(python: str | None) -> str:
    """The interpreter to inspect: a path, a venv directory, or ours."""
    if not python:
        return sys.executable
    path = Path(python).expanduser()
    if path.is_dir():
        for candidate in (path / "bin" / "python", path / "Scripts" / "python.exe"):
            if candidate.exists():
                return str(candidate)
        raise InputError(f"--python {python}: a directory without bin/python")
    if not path.exists():
        raise InputError(f"--python {python}: no such interpreter")
    if not os.access(path, os.X_OK):
        raise InputError(f"--python {python}: not executable")
    return str(path)


def inspect_python(python: str | None = None, timeout: float = 30.0) -> PythonEnv:
    exe = resolve_python(python)
    try:
        proc = subprocess.run([exe, "-c", INSPECT_SCRIPT, json.dumps(WATCHED)],
                              capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL, cwd=os.path.dirname(exe) or None)
    except subprocess.TimeoutExpired:
        raise FaultError(f"{exe}: inspecting the environment timed out after {timeout:g}s") from None
    except OSError as exc:
        raise InputError(f"--python {exe}: cannot run: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise FaultError(f"{exe}: inspecting the environment failed: {last}")
    try:
        return parse_inspection(json.loads(proc.stdout.strip().splitlines()[-1]))
    except (json.JSONDecodeError, IndexError, KeyError) as exc:
        raise FaultError(f"{exe}: unreadable inspection output ({exc})") from None
