"""The files of an environment's package directories (purelib, platlib), so that an apply that
did not finish can say exactly what it changed: a package's name and version are not enough,
since an engine stopped mid-unpack leaves files that no dist-info lists.

A snapshot keeps each file's size and mtime_ns (no content hashes: an environment with torch has
~15,000 files and this must take a fraction of a second). `__pycache__` is left out: byte code is
derived, rewritten by any import, and always safe to lose.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Mapping

from msgspec import Struct, field

Stat = tuple[int, int]
"""(size, mtime_ns); a directory is (-1, 0)."""
DIRECTORY: Stat = (-1, 0)
RECORD_LIMIT = 64 << 20
"""A RECORD larger than this is not read (torch's is ~2 MB): it is only used to explain files."""

def existing_dirs(reported: Iterable[object]) -> tuple[str, ...]:
    """The absolute, existing directories among what an interpreter reported (its answer is
    not trusted further), resolved, each once."""
    dirs: dict[str, None] = {}
    for item in reported:
        if isinstance(item, str) and os.path.isabs(item) and os.path.isdir(item):
            dirs.setdefault(os.path.realpath(item))
    return tuple(dirs)


class Snapshot(Struct, frozen=True):
    """An environment's package files (size, mtime) and their owners, to say what an apply changed."""

    roots: tuple[str, ...]
    entries: Mapping[str, Mapping[str, Stat]] = field(default_factory=dict)
    """root -> path relative to it ('/'-separated) -> Stat."""
    owners: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """root -> path -> the dist-info directory whose RECORD lists it."""

    @property
    def count(self) -> int:
        return sum(len(e) for e in self.entries.values())


def _walk(root: str) -> dict[str, Stat]:
    found: dict[str, Stat] = {}
    pending = [""]
    while pending:
        rel = pending.pop()
        try:
            with os.scandir(os.path.join(root, rel) if rel else root) as it:
                items = list(it)
        except OSError:
            continue  # vanished or unreadable: what is missing shows up as removed
        for entry in items:
            if entry.name == "__pycache__":
                continue
            path = f"{rel}/{entry.name}" if rel else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    found[path] = DIRECTORY
                    pending.append(path)
                else:
                    st = entry.stat(follow_symlinks=False)
                    found[path] = (st.st_size, st.st_mtime_ns)
            except OSError:
                continue
    return found


def take(roots: Iterable[str]) -> Snapshot:
    """Every file and directory under each root, symlinks not followed, and which installed
    distribution owns each."""
    roots = tuple(roots)
    return Snapshot(roots, {root: _walk(root) for root in roots},
                    {root: listed_files(root) for root in roots})


class TreeChanges(Struct, frozen=True):
    """What differs under one root between two snapshots, relative paths throughout."""

    root: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    new_tops: tuple[str, ...] = ()
    """Paths that did not exist before and whose parent did: the smallest set whose removal
    takes away everything added."""

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.modified)


def compare(before: Snapshot, after: Snapshot) -> list[TreeChanges]:
    out = []
    for root in before.roots:
        old, new = before.entries.get(root, {}), after.entries.get(root, {})
        added = sorted(p for p in new.keys() - old.keys())
        removed = sorted(p for p in old.keys() - new.keys() if old[p] != DIRECTORY)
        modified = sorted(p for p in new.keys() & old.keys() if new[p] != old[p] and new[p] != DIRECTORY)
        new_tops = tuple(p for p in added if os.path.dirname(p) == "" or os.path.dirname(p) in old)
        out.append(TreeChanges(root, tuple(p for p in added if new[p] != DIRECTORY), tuple(removed),
                               tuple(modified), new_tops))
    return out


def listed_files(root: str) -> dict[str, str]:
    """Every path (relative to root) that a RECORD of a dist-info directory in root lists: the
    files an installed distribution owns, each with that dist-info directory's name."""
    owned: dict[str, str] = {}
    try:
        infos = [e.path for e in os.scandir(root) if e.name.endswith(".dist-info") and e.is_dir()]
    except OSError:
        return owned
    for info in infos:
        record = os.path.join(info, "RECORD")
        try:
            if os.path.getsize(record) > RECORD_LIMIT:
                continue
            with open(record, encoding="utf-8", errors="replace", newline="") as fh:
                rows = list(csv.reader(fh))
        except (OSError, csv.Error):
            continue
        name = os.path.basename(info)
        for row in rows:
            path = row[0] if row else ""
            if "\\" in path or "." in path[:2] or "/." in path or "//" in path:  # rare: normalize
                path = os.path.normpath(path.replace("\\", "/"))
            if path and not path.startswith(("../", "/")) and path != "..":
                owned[path] = name
    return owned


class Stray(Struct, frozen=True):
    """Changes no installed distribution accounts for, grouped by the top-level entry."""

    root: str
    top: str
    added: int = 0
    removed: int = 0
    modified: int = 0
    removable: tuple[str, ...] = ()
    """Absolute paths that did not exist before and that no dist-info lists anything in."""
    owned: bool = False
    """Some of these files belong (or belonged) to an installed distribution."""

    def describe(self) -> str:
        counts = [f"{n:,} file{'s' if n != 1 else ''} {what}" for n, what in
                  ((self.added, "added"), (self.removed, "removed"), (self.modified, "modified")) if n]
        where = printable(f"{os.path.basename(self.root)}/{self.top}")
        why = "that no finished install accounts for" if self.owned else "with no dist-info"
        return f"{', '.join(counts)} under {where} {why}"


def strays(changes: TreeChanges, before: Mapping[str, str], after: Mapping[str, str],
           was: Mapping[str, Stat], now: Mapping[str, Stat]) -> list[Stray]:
    """Per top-level entry, the changes no package change accounts for: added or modified files
    that no freshly written RECORD lists (a half-unpacked package, a file truncated under a
    package that was not reinstalled), removed files whose owner is still installed or that no
    RECORD listed; plus which new paths can go without touching an installed package.
    `before`/`after`: path -> owning dist-info; `was`/`now`: the entries, before and after."""
    # An engine writes a distribution's RECORD last: a new or rewritten one means it finished.
    finished = {info for info in set(after.values())
                if was.get(f"{info}/RECORD") != now.get(f"{info}/RECORD")}
    groups: dict[str, list[int]] = {}
    owned: set[str] = set()
    for index, paths in enumerate((changes.added, changes.removed, changes.modified)):
        for path in paths:
            if index != 1 and after.get(path) in finished:
                continue
            if index == 1 and path in before and before[path] not in now:
                continue  # its distribution went (or changed version): the package line says so
            top = path.split("/", 1)[0]
            groups.setdefault(top, [0, 0, 0])[index] += 1
            if path in before or path in after:
                owned.add(top)
    owned_dirs = {os.path.dirname(p) for p in after}
    removable: dict[str, list[str]] = {}
    for top in changes.new_tops:
        inside = top + "/"
        if not top.isprintable() or top in after or any(d == top or d.startswith(inside) for d in owned_dirs):
            continue
        removable.setdefault(top.split("/", 1)[0], []).append(os.path.join(changes.root, top))
    out = []
    for top in sorted(groups):
        added, removed, modified = groups[top]
        out.append(Stray(changes.root, top + _any_under(changes, top), added, removed, modified,
                         tuple(removable.get(top, ())), top in owned))
    return out


def printable(text: str) -> str:
    """A file name as it can be shown on a terminal: control characters escaped, not sent."""
    return text if text.isprintable() else ascii(text)[1:-1]


def _any_under(changes: TreeChanges, top: str) -> str:
    """'/' when `top` is a directory (some changed path lies under it), else ''."""
    prefix = top + "/"
    for paths in (changes.added, changes.removed, changes.modified):
        if any(p.startswith(prefix) for p in paths):
            return "/"
    return ""


def file_changes(before: Snapshot) -> list[Stray]:
    """Snapshot the same roots again and explain the difference: the strays that no package
    change accounts for, in a stable order."""
    after = take(before.roots)
    found = []
    for changes in compare(before, after):
        if not changes.empty:
            root = changes.root
            found.extend(strays(changes, before.owners.get(root, {}), after.owners.get(root, {}),
                                before.entries.get(root, {}), after.entries.get(root, {})))
    return found
