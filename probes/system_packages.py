"""The Neuron system packages (dpkg, rpm) and the runtime libraries the loader can find, read
under a SysRoot; and neuron-ls run in both of its JSON forms (neuron_ls.py parses them)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct

from neuronctl.probes.dpkg import installed_system_packages
from neuronctl.probes.neuron_ls import NEURON_LS_FORMS, parse_neuron_ls_json
from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.tools import Runner, run_tool

MAX_LIST_FILE = 1024 * 1024
MAX_LD_CONF_FILES = 64
# The first generation's names (Inf1 era); beside an aws-neuronx-* stack they break it.
OLD_GENERATION = ("aws-neuron-dkms", "aws-neuron-tools", "aws-neuron-runtime",
                  "aws-neuron-runtime-base")
STANDARD_LIB_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu",
                     "/usr/local/lib")
_RPM_LINE = re.compile(r"(aws-neuron[A-Za-z0-9._+-]*) ([A-Za-z0-9._+~-]+)")


class SystemPackages(Struct, frozen=True):
    """The Neuron system packages dpkg or rpm lists, and old libnrt files they still claim."""

    packages: dict[str, str]
    """Installed aws-neuron* package -> upstream version."""
    source: str
    """"dpkg", "rpm", "dpkg+rpm" or "none"."""
    old_generation_libnrt: dict[str, tuple[str, ...]]
    """Old-generation package -> the libnrt files its dpkg file list still claims."""


def _rpm_packages(root: SysRoot, runner: Runner) -> dict[str, str] | None:
    """aws-neuron* from `rpm -qa` (with a time limit); None when there is no rpm database."""
    if not root.path("/var/lib/rpm").is_dir():
        return None  # rpm absent is the runner's "could not run", below
    argv = ["rpm", "-qa", "--qf", "%{NAME} %{VERSION}\\n", "aws-neuron*"]
    if not root.is_host:
        argv[1:1] = ["--root", str(root.root)]
    result = runner(argv, 10.0)
    if result.error or result.returncode != 0:
        return None
    found = {}
    for line in result.stdout.splitlines()[:1000]:
        match = _RPM_LINE.fullmatch(line.strip())
        if match:
            found[match[1]] = match[2]
    return found


def _libnrt_claims(root: SysRoot, package: str) -> tuple[str, ...]:
    text = root.read_text(f"/var/lib/dpkg/info/{package}.list", MAX_LIST_FILE) or ""
    return tuple(line for line in text.splitlines() if "/libnrt.so" in line)


def read_system_packages(root: SysRoot, runner: Runner = run_tool, *,
                         dpkg: Mapping[str, str] | None = None) -> SystemPackages:
    """`dpkg`: the dpkg database's Neuron packages already read this run (hardware detection
    reads them: probes.dpkg), so the status file, ~0.7 MB on a small image, is read once."""
    dpkg = installed_system_packages(root) if dpkg is None else dict(dpkg)
    rpm = _rpm_packages(root, runner)
    packages = {**(rpm or {}), **dpkg}
    source = "+".join(s for s, on in (("dpkg", bool(dpkg)), ("rpm", bool(rpm))) if on) or "none"
    claims = {p: _libnrt_claims(root, p) for p in OLD_GENERATION if p in dpkg}
    return SystemPackages(packages, source, {p: c for p, c in claims.items() if c})


# ------------------------------------------------------------------------- libnrt on the loader

class RuntimeLibrary(Struct, frozen=True):
    """One libnrt.so on the loader path: its folder, the names, the file they resolve to."""

    directory: str
    files: tuple[str, ...]
    real: str
    """The file the names resolve to, as shown on the system (two directories holding links to
    one file hold one library)."""


def _ld_conf_dirs(root: SysRoot) -> list[str]:
    dirs: list[str] = []
    pending = [root.path("/etc/ld.so.conf")]
    seen: set[Path] = set()
    while pending and len(seen) < MAX_LD_CONF_FILES:
        conf = pending.pop(0)
        if conf in seen:
            continue
        seen.add(conf)
        for raw in (root.read(conf) or "").splitlines():
            line = raw.split("#", 1)[0].strip()
            if line.startswith("include "):
                pattern = line.split(None, 1)[1]
                parent, _, glob = pattern.rpartition("/")
                parent = parent if parent.startswith("/") else "/etc/" + parent
                pending.extend(root.glob(parent, glob)[:MAX_LD_CONF_FILES])
            elif line.startswith("/"):
                dirs.append(line)
    return dirs


def _resolve_in_root(root: SysRoot, path: Path) -> Path:
    """Follow symbolic links the way the inspected system would: an absolute target is read
    under the root, not on this machine."""
    for _ in range(16):
        try:
            target = os.readlink(path)
        except OSError:
            return path
        following = (root.path(target) if target.startswith("/")
                     else Path(os.path.normpath(path.parent / target)))
        if not root.is_host and not following.is_relative_to(root.root):
            return path  # a "../../.." target would leave the captured tree: stop at the link
        path = following
    return path


def loader_dirs(root: SysRoot, environ: Mapping[str, str]) -> list[str]:
    """Where the dynamic loader looks for libnrt, in its order: LD_LIBRARY_PATH, the Neuron
    directory, ld.so.conf, the standard directories."""
    ordered = [d for d in environ.get("LD_LIBRARY_PATH", "").split(":") if d.startswith("/")]
    ordered += ["/opt/aws/neuron/lib", *_ld_conf_dirs(root), *STANDARD_LIB_DIRS]
    return list(dict.fromkeys(os.path.normpath(d) for d in ordered))[:256]


def find_runtime_libraries(root: SysRoot, environ: Mapping[str, str]) -> list[RuntimeLibrary]:
    """Every distinct libnrt.so* the loader could pick, one entry per real file."""
    found: dict[str, RuntimeLibrary] = {}
    for directory in loader_dirs(root, environ):
        files = root.glob(directory, "libnrt.so*")
        if not files:
            continue
        real = root.display(_resolve_in_root(root, files[0]))
        if real not in found:
            found[real] = RuntimeLibrary(directory, tuple(f.name for f in files), real)
    return list(found.values())


# ---------------------------------------------------------------------------------- neuron-ls

class NeuronLs(Struct, frozen=True):
    """What neuron-ls reported as JSON (and with which flag), or why it did not."""

    form: str | None
    """Which flag gave JSON ("output-format", "json-output"), or None."""
    devices: list[dict[str, Any]] | None
    errors: tuple[str, ...]


def run_neuron_ls(tool: Path, runner: Runner = run_tool, timeout: float = 5.0,
                  forms: Sequence[tuple[str, tuple[str, ...]]] = NEURON_LS_FORMS) -> NeuronLs:
    errors: list[str] = []
    for name, flags in forms:
        result = runner([str(tool), *flags], timeout)
        devices = None if result.error or result.returncode != 0 else parse_neuron_ls_json(
            result.stdout)
        if devices is not None:
            return NeuronLs(name, devices, tuple(errors))
        why = result.error or (f"exit {result.returncode}" if result.returncode else "not JSON")
        errors.append(f"{' '.join(flags)}: {why}")
    return NeuronLs(None, None, tuple(errors))
