"""The host facts a bug report needs whatever the target holds: OS distribution, compilers, CPU.

The same facts torch's collect_env prints (so a target without torch still gets them), gathered
here: the distribution with `distro` from the root's os-release files, GCC/Clang/CMake from their
`--version` (first match of collect_env's own patterns, so the strings are the same), and the CPU
from `lscpu`, else the root's /proc/cpuinfo. Every tool runs concurrently, in its own session,
with a time limit (its process group is killed at the limit) and its output bounded. Under a
`--sysroot` other than `/` no tool is run: the binaries on this machine's PATH say nothing about
the captured tree.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.tools import run_capped

TOOL_TIMEOUT_S = 5.0
OUTPUT_CAP = 64 * 1024
VALUE_CAP = 512
RELEASE_FILE_CAP = 64 * 1024
MAX_ETC_ENTRIES = 256
_RELEASE_NAME = re.compile(r"\w{1,64}[-_](?:release|version)")  # distro's own pattern, bounded
COMPILERS: Mapping[str, tuple[str, str]] = {
    # name: (command, collect_env's pattern on its output)
    "gcc": ("gcc", r"gcc (.*)"),
    "clang": ("clang", r"clang version (.*)"),
    "cmake": ("cmake", r"cmake (.*)"),
}


class CpuFacts(Struct, frozen=True):
    """The CPU as lscpu (or /proc/cpuinfo) describes it, for a bundle's host section."""

    model: str | None = None
    cpus: int | None = None
    sockets: int | None = None
    cores_per_socket: int | None = None
    threads_per_core: int | None = None
    flags: tuple[str, ...] = ()
    source: str = "none"
    """Where they were read: "lscpu", "/proc/cpuinfo" or "none"."""
    lscpu: str = ""
    """lscpu's own text (bounded), shown as collect_env shows it."""


class HostFacts(Struct, frozen=True):
    """The host around the stack (distribution, kernel, compilers, CPU), as collect_env shows it."""

    distribution: str | None = None
    """The pretty name, "Debian GNU/Linux 12 (bookworm)"."""
    distribution_id: str | None = None
    distribution_version: str | None = None
    kernel: str | None = None
    architecture: str | None = None
    compilers: Mapping[str, str | None] = field(default_factory=dict)
    cpu: CpuFacts = field(default_factory=CpuFacts)
    notes: tuple[str, ...] = ()
    """What could not be gathered, and why."""

    def to_json(self) -> dict[str, Any]:
        return {"distribution": self.distribution, "distribution_id": self.distribution_id,
                "distribution_version": self.distribution_version, "kernel": self.kernel,
                "architecture": self.architecture, "compilers": dict(self.compilers),
                "notes": list(self.notes)}


def _shown(text: str | None, cap: int = VALUE_CAP) -> str | None:
    """A value from a file or a tool: one printable line, bounded; None when empty."""
    if text is None:
        return None
    line = "".join(ch if ch.isprintable() else " " for ch in text.strip()[:cap]).strip()
    return line or None


def run_bounded(argv: Sequence[str], timeout: float = TOOL_TIMEOUT_S,
                name: str | None = None) -> tuple[str | None, str]:
    """(stdout, "") when the command ran and exited 0, else (None, why). Its process group is
    killed at the limit (before it is reaped, so the group id is still its own): a wrapper
    whose child holds the pipe open cannot hold us."""
    name = name or os.path.basename(argv[0])
    env = {**os.environ, "LC_ALL": "C"}  # English field names for the parser
    try:
        # Read in chunks up to the cap: a tool that floods stdout is stopped there, not buffered.
        done = run_capped(argv, timeout, OUTPUT_CAP, env=env)
    except OSError as exc:
        return None, f"{name}: could not run it: {exc.strerror or exc}"
    if done.timed_out:
        return None, f"{name}: timed out after {timeout:g}s"
    if done.over_cap:  # stopped at the cap: its first OUTPUT_CAP bytes are what we keep anyway
        return done.stdout.decode("utf-8", errors="replace"), ""
    if done.returncode != 0:
        return None, f"{name}: exited {done.returncode}"
    return done.stdout.decode("utf-8", errors="replace"), ""


def compiler_version(name: str, timeout: float = TOOL_TIMEOUT_S) -> tuple[str | None, str]:
    command, pattern = COMPILERS[name]
    found = shutil.which(command)
    if found is None:
        return None, f"{command}: not found on PATH"
    out, why = run_bounded([found, "--version"], timeout, command)
    if out is None:
        return None, why
    match = re.search(pattern, out)
    return (_shown(match.group(1)), "") if match else (None, f"{command}: no version in its output")


def _lscpu_fields(text: str) -> dict[str, str]:
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    return fields


def _count(text: str | None) -> int | None:
    return int(text) if text is not None and text.isascii() and text.isdigit() and len(text) <= 6 else None


def _flags(text: str | None) -> tuple[str, ...]:
    return tuple(f for f in (text or "").split()[:1024] if f.isprintable() and len(f) <= 64)


def cpu_from_lscpu(text: str) -> CpuFacts:
    fields = _lscpu_fields(text)
    return CpuFacts(model=_shown(fields.get("Model name")), cpus=_count(fields.get("CPU(s)")),
                    sockets=_count(fields.get("Socket(s)")),
                    cores_per_socket=_count(fields.get("Core(s) per socket")),
                    threads_per_core=_count(fields.get("Thread(s) per core")),
                    flags=_flags(fields.get("Flags")), source="lscpu",
                    lscpu="\n".join(line.rstrip() for line in text.strip().splitlines()))


def cpu_from_cpuinfo(text: str) -> CpuFacts:
    """x86's and Arm's /proc/cpuinfo: one block per logical CPU."""
    blocks = [b for b in text.split("\n\n") if "processor" in b]
    first = _lscpu_fields(blocks[0]) if blocks else {}
    sockets = {_lscpu_fields(b).get("physical id") for b in blocks} - {None}
    siblings, cores = _count(first.get("siblings")), _count(first.get("cpu cores"))
    return CpuFacts(
        model=_shown(first.get("model name") or first.get("Model name")),
        cpus=len(blocks) or None, sockets=len(sockets) or None, cores_per_socket=cores,
        threads_per_core=siblings // cores if siblings and cores else None,
        flags=_flags(first.get("flags") or first.get("Features")), source="/proc/cpuinfo")


def _release_files(root: SysRoot) -> dict[str, bytes]:
    """The files `distro` reads (os-release, debian_version, /etc/*-release), each through the
    root's contained, bounded reader: `distro` itself follows a link out of a captured tree and
    reads a whole file."""
    names = ["etc/os-release", "usr/lib/os-release", "etc/debian_version"]
    names += [f"etc/{p.name}" for pattern in ("*release", "*version")
              for p in root.glob("/etc", pattern)[:MAX_ETC_ENTRIES] if _RELEASE_NAME.fullmatch(p.name)]
    found = {}
    for name in dict.fromkeys(names):
        data = root.read_bytes("/" + name, RELEASE_FILE_CAP)
        if data is not None:
            found[name] = data
    return found


def _distribution(root: SysRoot) -> tuple[str | None, str | None, str | None]:
    try:
        if root.is_host:
            return _distro_of(str(root.root))
        with tempfile.TemporaryDirectory(prefix="neuronctl-release-") as private:
            for name, data in _release_files(root).items():
                path = Path(private, name)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            return _distro_of(private)
    except (OSError, UnicodeError, ValueError):
        return None, None, None


def _distro_of(root_dir: str) -> tuple[str | None, str | None, str | None]:
    import distro  # only where the OS is read: it loads argparse, logging and a parser (~8 ms)

    info = distro.LinuxDistribution(include_lsb=False, include_uname=False,
                                    include_oslevel=False, root_dir=root_dir)
    return _shown(info.name(pretty=True)), _shown(info.id()), _shown(info.version())


def _cpu(root: SysRoot, timeout: float) -> tuple[CpuFacts, str]:
    why = "lscpu is not run under --sysroot"
    if root.is_host and shutil.which("lscpu"):
        out, why = run_bounded(["lscpu"], timeout)
        if out is not None:
            return cpu_from_lscpu(out), ""
    text = root.read("/proc/cpuinfo")
    if text is not None:
        return cpu_from_cpuinfo(text[:1 << 22]), ""
    return CpuFacts(), f"cpu: {why or 'lscpu not found'}; no /proc/cpuinfo"


def gather_host_facts(root: SysRoot, timeout: float = TOOL_TIMEOUT_S) -> HostFacts:
    """Every fact at once: the tools run concurrently, each within `timeout`."""
    notes: list[str] = []
    compilers: dict[str, str | None] = dict.fromkeys(COMPILERS)
    with ThreadPoolExecutor(max_workers=len(COMPILERS) + 1) as pool:
        cpu_job = pool.submit(_cpu, root, timeout)
        jobs = {name: pool.submit(compiler_version, name, timeout) for name in COMPILERS
                if root.is_host}
        name, ident, version = _distribution(root)
        for compiler, job in jobs.items():
            compilers[compiler], why = job.result()
            notes += [why] if why else []
        cpu, why = cpu_job.result()
    notes += [why] if why else []
    if not root.is_host:
        notes.append("compilers: not run under --sysroot (this machine's PATH is not the tree's)")
    kernel = platform.release() if root.is_host else _shown(root.read("/proc/sys/kernel/osrelease"))
    return HostFacts(name, ident, version, kernel, platform.machine() if root.is_host else None,
                     compilers, cpu, tuple(notes))
