"""`neuronctl cache show|prune`: the compile caches an environment uses, by compiler version, and
removing the stale ones.

`plan_prune` is pure: from what was read, the entries to remove and why (another neuronx-cc than
the one kept, or older than DAYS). `apply_prune` removes them one at a time, each atomically:
the cache folder is opened without following a link (O_NOFOLLOW | O_DIRECTORY) and checked to be
the folder that was read, the entry is checked to be a real folder in it (lstat through the
folder's descriptor), renamed into `.neuronctl-trash/` inside that same folder (one rename on
one filesystem: the entry is either in the cache or in the trash, never half gone), and the
trash entry is then removed through the trash's descriptor by remove_tree (os.fwalk, which
never follows a link). Nothing outside an identified cache folder can be touched: no path is built
from an entry's name beyond one component, and no link is followed.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Mapping

from msgspec import Struct

from neuronctl.errors import InputError
from neuronctl.probes.compile_cache import (
    CacheState,
    cache_locations,
    display_name,
    inspect_cache,
    public,
)
from neuronctl.probes.sysroot import SysRoot

TRASH = ".neuronctl-trash"
DAY_S = 86400.0


class CacheReport(Struct, frozen=True):
    """Every cache the environment uses, and the compiler version that is current."""

    caches: tuple[CacheState, ...]
    compiler: str | None
    """The target's neuronx-cc (or --keep-compiler): entries for any other are stale."""
    compiler_source: str


class PruneItem(Struct, frozen=True):
    """One entry `prune` removes: which cache, which entry, why, how big."""

    cache: str
    """The cache folder, resolved, as read."""
    name: str
    """The entry's name as the scan found it, the one removed (never its displayed form)."""
    reason: str
    size: int
    files: int
    identity: tuple[int, int] = (0, 0)
    """(st_dev, st_ino) at the scan: removal checks the entry is still that one."""

    @property
    def display(self) -> str:
        return display_name(self.name)


class PruneOutcome(Struct, frozen=True):
    """What prune did (or would do, in a dry run) and what it left alone."""

    items: tuple[PruneItem, ...]
    applied: bool
    removed: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def show_caches(environ: Mapping[str, str], compiler: str | None, source: str,
                root: SysRoot | None = None) -> CacheReport:
    root = root or SysRoot()
    states = tuple(inspect_cache(root, loc) for loc in cache_locations(environ))
    return CacheReport(states, compiler, source)


def stale(report: CacheReport) -> list[tuple[CacheState, list[str]]]:
    """Per versioned cache, its entries for another compiler than the current one."""
    if report.compiler is None:
        return []
    keep = public(report.compiler)
    out = []
    for state in report.caches:
        names = [e.name for e in state.entries
                 if e.version is not None and not e.link and public(e.version) != keep]
        out.append((state, names))
    return out


def plan_prune(report: CacheReport, older_than_days: float | None,
               now: float | None = None) -> tuple[list[PruneItem], list[str]]:
    """The entries to remove (pure), and notes on what is left alone and why."""
    if report.compiler is None and older_than_days is None:
        raise InputError("cache prune: no compiler version to keep (the target has no "
                         "neuronx-cc): give --keep-compiler V, --python PATH or --older-than DAYS")
    now = time.time() if now is None else now
    cutoff = None if older_than_days is None else now - older_than_days * DAY_S
    keep = public(report.compiler) if report.compiler else None
    items: list[PruneItem] = []
    notes: list[str] = []
    for state in report.caches:
        loc = state.location
        if not state.present or state.problem:
            if state.problem:
                notes.append(f"{loc.path}: {state.problem}")
            continue
        if loc.kind == "torchneuron":
            notes.append(f"{loc.path}: the TorchNeuron cache's layout is not documented; "
                         "not pruned")
            continue
        folder = os.path.realpath(str(SysRoot().path(loc.path)))
        for entry in state.entries:
            if entry.link:
                notes.append(f"{loc.path}/{entry.display}: a symbolic link, left alone")
                continue
            if entry.name in (TRASH, ".", "..") or "/" in entry.name:
                continue
            why = None
            if keep is not None and entry.version is not None and public(entry.version) != keep:
                why = f"neuronx-cc {entry.version}, not {report.compiler}"
            elif cutoff is not None and entry.files and entry.mtime < cutoff:
                why = f"nothing in it newer than {older_than_days:g} days"
            if why:
                items.append(PruneItem(folder, entry.name, why, entry.size, entry.files,
                                       entry.identity))
    return items, notes


def _open_folder(path: str) -> int:
    """The cache folder's descriptor, never through a link, and only where it is still the
    resolved path that was read."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    if os.path.realpath(path) != path or not stat.S_ISDIR(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is no longer the folder that was read")
    return fd


def _trash(folder_fd: int) -> int:
    with contextlib.suppress(FileExistsError):
        os.mkdir(TRASH, 0o700, dir_fd=folder_fd)
    fd = os.open(TRASH, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                 dir_fd=folder_fd)
    return fd


def remove_tree(name: str, parent_fd: int) -> None:
    """Remove folder `name` in `parent_fd` and everything below it, never through a link: os.fwalk
    opens each folder relative to its parent's descriptor without following links (what
    shutil.rmtree's dir_fd does on 3.11+; this project runs on 3.10 too); a link is unlinked,
    never entered."""
    for _root, dirs, files, root_fd in os.fwalk(name, topdown=False, dir_fd=parent_fd):
        for entry in files:
            os.unlink(entry, dir_fd=root_fd)
        for entry in dirs:
            if stat.S_ISDIR(os.stat(entry, dir_fd=root_fd, follow_symlinks=False).st_mode):
                os.rmdir(entry, dir_fd=root_fd)
            else:
                os.unlink(entry, dir_fd=root_fd)
    os.rmdir(name, dir_fd=parent_fd)


def _remove_one(item: PruneItem, serial: int) -> None:
    folder = _open_folder(item.cache)
    try:
        # lstat of the raw name, just before the rename: still a folder, still the one scanned
        info = os.stat(item.name, dir_fd=folder, follow_symlinks=False)
        if not stat.S_ISDIR(info.st_mode):
            raise OSError(f"{item.display} is no longer a folder")
        if item.identity not in ((0, 0), (info.st_dev, info.st_ino)):
            raise OSError(f"{item.display} is no longer the entry that was read")
        trash = _trash(folder)
        try:
            parked = f"{item.name}.{os.getpid()}.{serial}"
            os.rename(item.name, parked, src_dir_fd=folder, dst_dir_fd=trash)
            remove_tree(parked, trash)
        finally:
            os.close(trash)
        with contextlib.suppress(OSError):  # another prune's entries still in it
            os.rmdir(TRASH, dir_fd=folder)
    finally:
        os.close(folder)


def apply_prune(items: list[PruneItem], notes: list[str], yes: bool) -> PruneOutcome:
    """Dry run unless `yes`; each entry removed on its own, a failure named and the rest done."""
    if not yes:
        return PruneOutcome(tuple(items), False, notes=tuple(notes))
    removed, failed = [], []
    for serial, item in enumerate(items):
        try:
            _remove_one(item, serial)
            removed.append(f"{item.cache}/{item.display}")
        except OSError as exc:
            failed.append(f"{item.cache}/{item.display}: {exc.strerror or exc}")
    return PruneOutcome(tuple(items), True, tuple(removed), tuple(failed), tuple(notes))
