"""The target Python environment: interpreter facts and installed distributions.

Read from the target interpreter itself in one short subprocess (its .dist-info directories, or
importlib.metadata where anything else is on its path), never by parsing `pip list`, so it works
for venvs without pip and for interpreters other than ours.
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

from neuronctl.errors import FaultError, InputError

# Packages whose top-level module is checked for the PyPI placeholder text.
WATCHED = ("torch-neuronx", "neuronx-cc", "nki", "libneuronxla", "torch-neuron", "neuron-cc",
           "torch-xla", "transformers-neuronx")

INSPECT_SCRIPT = r"""
import json, os, platform, sys, sysconfig
OPTS = json.loads(sys.argv[1])
WATCHED = set(OPTS["watched"])
def canon(n):
    n = n.lower().replace("_", "-").replace(".", "-")
    while "--" in n:
        n = n.replace("--", "-")
    return n
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
_tags = None
if OPTS["tags"]:
    try:
        from packaging import tags as _tags
    except ImportError:
        try:
            from pip._vendor.packaging import tags as _tags
        except ImportError:
            pass
if _tags is not None:
    try:
        out["tags"] = [str(t) for t in _tags.sys_tags()]
    except Exception:
        pass
def bundled_pips():
    # ensurepip's own _bundled folder, read without importing ensurepip (~0.06 s); a distro
    # that moved the wheels elsewhere (Debian's _WHEEL_PKG_DIR) goes through ensurepip below.
    folder = os.path.join(os.path.dirname(os.__file__), "ensurepip", "_bundled")
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names if n.startswith("pip-") and n.endswith(".whl")]
_pips = bundled_pips() if OPTS["bundled_pip"] else []
if len(_pips) == 1:
    out["bundled_pip"] = _pips[0]
elif OPTS["bundled_pip"]:
    try:
        import ensurepip
        _ver = ensurepip.version()
        _dirs = [os.path.join(os.path.dirname(ensurepip.__file__), "_bundled"),
                 getattr(ensurepip, "_WHEEL_PKG_DIR", None) or ""]
        out["bundled_pip"] = next((p for d in _dirs if d
                                   for p in [os.path.join(d, "pip-%s-py3-none-any.whl" % _ver)]
                                   if os.path.isfile(p)), "")
    except Exception:
        pass
def scan_dist_infos():
    # Plain .dist-info directories on sys.path, in importlib.metadata's order; None if anything
    # else is there (eggs, egg-info, zips), which importlib.metadata then reads in full. It costs
    # ~0.1 s to import, and an install inspects twice.
    found = []
    for entry in sys.path:
        base = entry or "."
        if not os.path.isdir(base):
            if os.path.exists(base):
                return None
            continue
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for n in names:
            low = n.lower()
            if low.endswith((".egg-info", ".egg", ".egg-link")):
                return None
            if low.endswith(".dist-info"):
                found.append(os.path.join(base, n))
    return found
def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None
def headers(text):
    fields, last = {}, None
    for line in text.replace("\r\n", "\n").split("\n\n", 1)[0].split("\n"):
        if line[:1] in (" ", "\t") and last:
            fields[last][-1] += " " + line.strip()
            continue
        key, sep, value = line.partition(":")
        if sep:
            last = key.strip().lower()
            fields.setdefault(last, []).append(value.strip())
    return fields
def scanned(paths):
    import csv
    for d in paths:
        text = read(os.path.join(d, "METADATA"))
        if text is None:
            continue
        h = headers(text)
        def first(key, h=h):
            return (h.get(key) or [""])[0]
        def files(d=d):
            record = read(os.path.join(d, "RECORD")) or ""
            return [row[0] for row in csv.reader(record.splitlines()) if row]
        def locate(f, d=d):
            return os.path.join(os.path.dirname(d), f)
        yield (first("name"), first("version"), h.get("requires-dist") or [], first("summary"),
               (read(os.path.join(d, "INSTALLER")) or "").strip(),
               files, locate)
def via_metadata():
    from importlib import metadata
    for dist in metadata.distributions():
        def installer(dist=dist):
            try:
                return (dist.read_text("INSTALLER") or "").strip()
            except Exception:
                return ""
        yield (dist.metadata["Name"], dist.version, list(dist.requires or []),
               dist.metadata.get("Summary") or "", installer(),
               lambda dist=dist: [str(f) for f in dist.files or []],
               lambda f, dist=dist: str(dist.locate_file(f)))
seen = set()
found = scan_dist_infos() if OPTS["packages"] and not OPTS["metadata_only"] else None
dists = () if not OPTS["packages"] else (scanned(found) if found is not None else via_metadata())
for name, version, requires, summary, installer, files, locate in dists:
    if not name or canon(name) in seen:
        continue
    seen.add(canon(name))
    entry = {"name": name, "version": version, "requires": list(requires), "summary": summary,
             "installer": installer, "xla_impl": False, "wrong_package": False}
    if canon(name) in WATCHED:
        listed = [f.replace(os.sep, "/") for f in files()]
        entry["xla_impl"] = any("torch_neuronx/xla_impl/" in f for f in listed)
        for f in listed:
            parts = f.split("/")
            if len(parts) == 2 and parts[1] == "__init__.py":
                text = read(locate(f))
                if text is not None and "WRONG PACKAGE" in text[:65536]:
                    entry["wrong_package"] = True
    out["distributions"].append(entry)
out["reader"] = "importlib.metadata" if found is None else "dist-info scan"
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
    bundled_pip: str = ""
    """The pip wheel the interpreter ships for ensurepip (seeds a venv offline); "" if none."""
    reader: str = ""
    """How distributions were read: "dist-info scan" or "importlib.metadata"."""

    @property
    def in_venv(self) -> bool:
        return self.prefix != self.base_prefix

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(p) for p in self.python.split(".")[:2] if p.isdigit())

    def get(self, name: str) -> InstalledDist | None:
        from packaging.utils import canonicalize_name

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
    from packaging.utils import canonicalize_name  # not at import: the inspection starts first

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
        tags=tuple(str(t) for t in data.get("tags", [])),
        bundled_pip=str(data.get("bundled_pip", "")), reader=str(data.get("reader", "")))


def resolve_python(python: str | None) -> str:
    """The interpreter to inspect: a path, a venv directory, or ours."""
    if not python:
        return sys.executable
    # Absolute but not resolved: a venv's bin/python is a symlink out of the venv, and the venv is
    # the point. Absolute because the inspection runs from another working directory.
    path = Path(python).expanduser().absolute()
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


class Inspection:
    """An inspection running in the background (the target interpreter takes a while to start
    and import), so the caller can do its own work meanwhile; result() waits for it."""

    def __init__(self, python: str | None = None, *, timeout: float = 30.0, packages: bool = True,
                 tags: bool = True, bundled_pip: bool = False, metadata_only: bool = False) -> None:
        """metadata_only: read distributions with importlib.metadata even where the plain
        .dist-info scan would do (the reference the scan is tested against)."""
        self.exe = resolve_python(python)
        self.timeout = timeout
        opts = {"watched": list(WATCHED), "packages": packages, "tags": tags, "bundled_pip": bundled_pip,
                "metadata_only": metadata_only}
        try:
            self._proc = subprocess.Popen([self.exe, "-c", INSPECT_SCRIPT, json.dumps(opts)],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          stdin=subprocess.DEVNULL, cwd=os.path.dirname(self.exe) or None)
        except OSError as exc:
            raise InputError(f"--python {self.exe}: cannot run: {exc.strerror or exc}") from None

    def result(self) -> PythonEnv:
        exe = self.exe
        try:
            out, err = self._proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.communicate()
            raise FaultError(f"{exe}: inspecting the environment timed out after {self.timeout:g}s") from None
        if self._proc.returncode != 0:
            last = (err.strip().splitlines() or ["no output"])[-1]
            raise FaultError(f"{exe}: inspecting the environment failed: {last}")
        try:
            return parse_inspection(json.loads(out.strip().splitlines()[-1]))
        except (json.JSONDecodeError, IndexError, KeyError) as exc:
            raise FaultError(f"{exe}: unreadable inspection output ({exc})") from None


def inspect_python(python: str | None = None, timeout: float = 30.0, *, tags: bool = True) -> PythonEnv:
    return Inspection(python, timeout=timeout, tags=tags).result()
