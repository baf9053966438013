"""The Neuron compile caches an environment uses, and what each holds, read bounded and without
following a symbolic link anywhere below a cache directory.

Which caches (documented variables and defaults only; RELEASE-FACTS section 10):
- legacy XLA torch-neuronx: `NEURON_CC_FLAGS --cache_dir=DIR`, `NEURON_COMPILE_CACHE_URL` (a
  local path; s3:// is remote and not inspected), default /var/tmp/neuron-compile-cache
  https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/about-neuron/arch/neuron-features/neuron-caching.rst
- TorchNeuron: `TORCH_NEURONX_NEFF_CACHE_DIR` (named by AWS; its default is not documented, so
  without the variable this cache is not looked for)
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html
- vLLM Neuron: `$VLLM_CACHE_ROOT/neuron/compile_cache/<hash>/` (VLLM_CACHE_ROOT's default is not
  in the sources: only where it is set)
  https://awsdocs-neuron.readthedocs-hosted.com/en/latest/vllm-neuron/docs/design/compilation/compilation_cache.html

Entries by compiler version: the legacy cache keeps one folder per compiler,
`neuronxcc-<version>/MODULE_<hash>.../` (as AWS's own published cache shows it:
https://huggingface.co/aws-neuron/optimum-neuron-cache/tree/main). The TorchNeuron and vLLM
caches' entries carry no compiler version in any documented layout: they are sized, not aged
by compiler. No source documents how a failed compilation is marked in any of them: none is
called failed here.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
import time
from collections.abc import Mapping
from pathlib import Path

from msgspec import Struct

from neuronctl.probes.sysroot import SysRoot

LEGACY_DEFAULT = "/var/tmp/neuron-compile-cache"
VERSION_PREFIX = "neuronxcc-"
MAX_FILES = 200_000
SCAN_SECONDS = 3.0
NETWORK_FS = ("nfs", "nfs4", "lustre", "efs", "cifs", "smb3", "ceph", "glusterfs")
"""Network filesystems by mountinfo fstype (and every fuse.*: s3fs, mountpoint-s3, ...)."""
_VERSION = re.compile(r"[0-9][0-9A-Za-z.+_-]{0,63}")


class CacheLocation(Struct, frozen=True):
    """One compile cache the environment points at: what kind, where, and who said so."""

    kind: str
    """"legacy-xla", "torchneuron", "vllm"."""
    path: str
    """As the variable gives it, on the inspected system."""
    source: str
    """The variable (or "default") that names it."""
    versioned: bool
    """Whether its entries sit under neuronxcc-<version>/ folders (the legacy layout)."""
    remote: bool = False


class CacheEntry(Struct, frozen=True):
    """One top-level entry of a cache: a compiler-version folder (legacy) or a cached graph."""

    name: str
    """The name as the folder holds it (what prune removes); `display` is for showing."""
    version: str | None
    size: int
    files: int
    mtime: float
    link: bool = False
    """A symbolic link: never followed, never counted, never removed."""
    identity: tuple[int, int] = (0, 0)
    """(st_dev, st_ino) when read: prune removes the entry only while it is still this one."""

    @property
    def display(self) -> str:
        return display_name(self.name)


def display_name(name: str) -> str:
    """An entry's name for a terminal or a report: control characters (and undecodable bytes)
    as `?`, cut at 200 characters. Only for showing: two names can display alike."""
    shown = "".join(c if c.isprintable() else "?" for c in name)
    return shown if len(shown) <= 200 else shown[:200] + "..."


class CacheState(Struct, frozen=True):
    """What one cache holds, and the filesystem it is on."""

    location: CacheLocation
    present: bool
    entries: tuple[CacheEntry, ...] = ()
    writable: bool | None = None
    free_bytes: int | None = None
    fstype: str | None = None
    truncated: bool = False
    problem: str | None = None

    @property
    def network(self) -> bool:
        return self.fstype is not None and (self.fstype in NETWORK_FS
                                            or self.fstype.startswith("fuse."))


def _cache_dir_flag(flags: str) -> str | None:
    try:
        words = shlex.split(flags[:4096])
    except ValueError:
        return None
    found = None
    for i, word in enumerate(words):
        if word.startswith("--cache_dir="):
            found = word.split("=", 1)[1]
        elif word == "--cache_dir" and i + 1 < len(words):
            found = words[i + 1]
    return found


def cache_locations(environ: Mapping[str, str]) -> list[CacheLocation]:
    """The caches the environment points at, each once, in the order above."""
    out: list[CacheLocation] = []
    flag = _cache_dir_flag(environ.get("NEURON_CC_FLAGS", ""))
    url = environ.get("NEURON_COMPILE_CACHE_URL")
    if flag:
        out.append(CacheLocation("legacy-xla", flag, "NEURON_CC_FLAGS --cache_dir", True))
    if url:
        out.append(CacheLocation("legacy-xla", url, "NEURON_COMPILE_CACHE_URL", True,
                                 remote="://" in url))
    if not flag and not url:
        out.append(CacheLocation("legacy-xla", LEGACY_DEFAULT, "default", True))
    if environ.get("TORCH_NEURONX_NEFF_CACHE_DIR"):
        out.append(CacheLocation("torchneuron", environ["TORCH_NEURONX_NEFF_CACHE_DIR"],
                                 "TORCH_NEURONX_NEFF_CACHE_DIR", False))
    if environ.get("VLLM_CACHE_ROOT"):
        out.append(CacheLocation("vllm", os.path.join(environ["VLLM_CACHE_ROOT"], "neuron",
                                                      "compile_cache"),
                                 "VLLM_CACHE_ROOT", False))
    seen: set[str] = set()
    unique = []
    for loc in out:
        if loc.path not in seen and "\0" not in loc.path:
            seen.add(loc.path)
            unique.append(loc)
    return unique


def public(version: str) -> str:
    """A compiler version's public part, as cache entries are compared ("2.21.1+abc" ->
    "2.21.1"); here, not in ops.cache, so the doctor's cache.compile check does not load the
    cache command's operation (issue 36)."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version).public
    except InvalidVersion:
        return version.split("+", maxsplit=1)[0]


def version_of(name: str) -> str | None:
    """The compiler version a legacy cache folder is for ("neuronxcc-2.13.68.0+6dfecc895")."""
    if not name.startswith(VERSION_PREFIX):
        return None
    version = name[len(VERSION_PREFIX):]
    return version if _VERSION.fullmatch(version) else None


def tree_size(path: str, budget: list[int], deadline: float) -> tuple[int, int, float]:
    """(bytes, files, newest mtime) below `path`, links not followed (lstat only), at most
    budget[0] files and until `deadline`."""
    size = files = 0
    newest = 0.0
    stack = [path]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as it:
                for entry in it:
                    if budget[0] <= 0 or time.monotonic() > deadline:
                        budget[0] = 0
                        return size, files, newest
                    budget[0] -= 1
                    info = entry.stat(follow_symlinks=False)
                    newest = max(newest, info.st_mtime)
                    if stat.S_ISDIR(info.st_mode):
                        stack.append(entry.path)
                    elif stat.S_ISREG(info.st_mode):
                        size += info.st_size
                        files += 1
        except OSError:
            continue
    return size, files, newest


def _mount_fstype(root: SysRoot, path: str) -> str | None:
    """The fstype of the mount holding `path`, from /proc/self/mountinfo (the longest mount
    point that is a prefix of it)."""
    text = root.read_text("/proc/self/mountinfo", 4 * 1024 * 1024) or ""
    best, fstype = "", None
    for line in text.splitlines()[:20000]:
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or not tail:
            continue
        point = fields[4].replace("\\040", " ")
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, fstype = point, tail[0][:64]
    return fstype


def _real_cache_dir(root: SysRoot, location: CacheLocation) -> tuple[str | None, str | None]:
    """The cache folder on this machine (under the root), or why it cannot be read: it must be
    a real directory, not a link (a link could take a prune anywhere)."""
    if not location.path.startswith("/"):
        return None, f"{location.source}: {location.path[:200]!r} is not an absolute path"
    path = str(root.path(location.path))
    try:
        info = os.lstat(path)
    except OSError:
        return None, None
    if stat.S_ISLNK(info.st_mode):
        return None, f"{location.path} is a symbolic link: not inspected, never pruned"
    if not stat.S_ISDIR(info.st_mode) or not root.inside(Path(path)):
        return None, f"{location.path} is not a directory"
    return path, None


def inspect_cache(root: SysRoot, location: CacheLocation,
                  seconds: float = SCAN_SECONDS) -> CacheState:
    if location.remote:
        return CacheState(location, False, problem="remote cache: not inspected")
    path, problem = _real_cache_dir(root, location)
    if path is None:
        return CacheState(location, problem is not None and "symbolic link" in problem,
                          problem=problem)
    deadline = time.monotonic() + seconds
    budget = [MAX_FILES]
    entries = []
    try:
        children = sorted(os.scandir(path), key=lambda e: e.name)[:MAX_FILES]
    except OSError as exc:
        return CacheState(location, True, problem=f"{location.path}: {exc.strerror}")
    for child in children:
        info = child.stat(follow_symlinks=False)
        name = child.name
        version = version_of(child.name) if location.versioned else None
        if stat.S_ISLNK(info.st_mode):
            entries.append(CacheEntry(name, version, 0, 0, info.st_mtime, link=True,
                                      identity=(info.st_dev, info.st_ino)))
            continue
        if stat.S_ISDIR(info.st_mode):
            size, files, newest = tree_size(child.path, budget, deadline)
        else:
            size, files, newest = (info.st_size, 1, info.st_mtime) if stat.S_ISREG(info.st_mode) \
                else (0, 0, info.st_mtime)
        entries.append(CacheEntry(name, version, size, files, max(newest, info.st_mtime),
                                  identity=(info.st_dev, info.st_ino)))
    writable = free = None
    if root.is_host:
        writable = os.access(path, os.W_OK | os.X_OK)
        try:
            vfs = os.statvfs(path)
            free = vfs.f_bavail * vfs.f_frsize
        except OSError:
            free = None
    return CacheState(location, True, tuple(entries), writable, free,
                      _mount_fstype(root, location.path), budget[0] <= 0)
