"""Which files a scan reads: the kinds it knows, under the roots named, never through a link.

Hidden folders (a name starting with '.') and what a .gitignore excludes are skipped unless named
on the command line. The .gitignore matching is a documented subset (docs/migrate.md): each
folder's own .gitignore, blank lines and '#' comments, a trailing '/' for folders only, a '/' at
the start or inside for a pattern anchored at that folder, '*', '?', '[...]' and '**'; a '!'
pattern (re-including) is not supported and is ignored, so what it would re-include stays out.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from msgspec import Struct

from neuronctl.ops.migrate.finding import Note

_SHELL = (".sh", ".bash", ".sbatch", ".slurm")
_YAML = (".yml", ".yaml")


def kind_of(name: str, parent: str = "") -> str | None:
    """What a file is by its name: python, notebook, requirements, pyproject, setup.cfg,
    dockerfile, shell, yaml; None for a file the scan does not read."""
    lower = name.lower()
    if lower.endswith(".py"):
        return "python"
    if lower.endswith(".ipynb"):
        return "notebook"
    if name == "pyproject.toml":
        return "pyproject"
    if name == "setup.cfg":
        return "setup.cfg"
    if lower in ("dockerfile", "containerfile") or lower.startswith(("dockerfile.", "containerfile.")) \
            or lower.endswith((".dockerfile", ".containerfile")):
        return "dockerfile"
    if lower.endswith(_SHELL):
        return "shell"
    if lower.endswith(_YAML):
        return "yaml"
    if lower.endswith((".txt", ".in")) and ("requirements" in lower or "constraints" in lower
                                            or parent.lower() == "requirements"):
        return "requirements"
    return None


def _glob(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and "]" in pattern[i + 1:]:
            end = pattern.index("]", i + 1)
            out.append("[" + pattern[i + 1:end].replace("\\", "\\\\") + "]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


class _Pattern(Struct, frozen=True):
    """One .gitignore line, as a regular expression over the path below its folder."""

    regex: re.Pattern[str]
    dirs_only: bool


def read_gitignore(folder: Path) -> tuple[_Pattern, ...]:
    """The patterns of `folder`/.gitignore (a regular file, at most 256 KiB), or none."""
    path = folder / ".gitignore"
    try:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > 256 * 1024:
            return ()
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    patterns = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith(("#", "!")):
            continue
        dirs_only = line.endswith("/")
        line = line.rstrip("/")
        anchored = "/" in line
        body = _glob(line.lstrip("/"))
        regex = ("^" if anchored else "^(?:.*/)?") + body + "$"
        try:
            patterns.append(_Pattern(re.compile(regex), dirs_only))
        except re.error:
            continue
    return tuple(patterns)


def ignored(rules: list[tuple[str, tuple[_Pattern, ...]]], rel: str, is_dir: bool) -> bool:
    """Whether `rel` (relative to the root, '/'-separated) is excluded by any .gitignore above
    it; `rules` holds (that .gitignore's folder relative to the root, its patterns)."""
    for base, patterns in rules:
        if base and not rel.startswith(base + "/"):
            continue
        sub = rel[len(base) + 1:] if base else rel
        if any(p.regex.match(sub) and (is_dir or not p.dirs_only) for p in patterns):
            return True
    return False


class Candidate(Struct, frozen=True):
    """A file of a known kind the walk found (`rel`: relative to the root)."""

    path: Path
    rel: str
    kind: str
    size: int


def walk(root: Path, notes: list[Note], max_bytes: int) -> Iterator[Candidate]:
    """The files of known kinds under `root` (a real folder), depth first in name order."""
    stack: list[tuple[Path, str, list[tuple[str, tuple[_Pattern, ...]]]]] = [(root, "", [])]
    while stack:
        folder, rel, rules = stack.pop()
        own = read_gitignore(folder)
        rules = [*rules, (rel, own)] if own else rules
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            notes.append(Note(rel or ".", f"not read: {exc.strerror or exc}"))
            continue
        below = []
        for entry in entries:
            child = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_symlink():
                _note_link(root, Path(entry.path), child, notes)
            elif entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith(".") and not ignored(rules, child, True):
                    below.append((Path(entry.path), child, rules))
            elif entry.is_file(follow_symlinks=False) and not ignored(rules, child, False):
                found = _candidate(Path(entry.path), child, entry.name, folder.name, notes, max_bytes)
                if found:
                    yield found
        stack.extend(reversed(below))


def _candidate(path: Path, rel: str, name: str, parent: str, notes: list[Note],
               max_bytes: int) -> Candidate | None:
    kind = kind_of(name, parent)
    if kind is None:
        return None
    try:
        size = path.lstat().st_size
    except OSError:
        return None
    if size > max_bytes:
        notes.append(Note(rel, f"skipped: {size} bytes, over the {max_bytes}-byte bound (--max-bytes)"))
        return None
    return Candidate(path, rel, kind, size)


def _note_link(root: Path, path: Path, rel: str, notes: list[Note]) -> None:
    """A link is never followed (its target, if inside the tree, is scanned where it is); one
    that leads out of the tree, nowhere or round in a loop is noted."""
    try:
        target = path.resolve(strict=True)
    except RuntimeError:
        notes.append(Note(rel, "link not followed: a loop"))
        return
    except OSError:
        notes.append(Note(rel, "link not followed: a loop or a missing target"))
        return
    if not target.is_relative_to(root):
        notes.append(Note(rel, "link not followed: it leads out of the scanned tree"))
