"""The migrate operation: roots checked, files walked and scanned, fixes made or shown."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from msgspec import Struct, field

from neuronctl.errors import FaultError, InputError
from neuronctl.ops.migrate.finding import Finding, Note
from neuronctl.ops.migrate.python_scan import Hit
from neuronctl.ops.migrate.read import FileScan, read_bytes, scan_file
from neuronctl.ops.migrate.text_scan import Versions
from neuronctl.ops.migrate.walk import Candidate, kind_of, walk
from neuronctl.release.model import Manifest

Mode = Literal["scan", "fix", "diff"]
MAX_BYTES = 2 * 1024 * 1024
"""The default bound on one file's size (a generated or vendored file past it is noted)."""


class MigrateRequest(Struct, frozen=True):
    """What to scan (default: here), how (scan, fix, diff), the native versions to hold pins
    to and the size bound."""

    paths: tuple[Path, ...]
    versions: Versions
    mode: Mode = "scan"
    max_bytes: int = MAX_BYTES


class MigrateOutcome(Struct, frozen=True):
    """How a migrate run ended: the findings left, the notes, what was rewritten (or the diff)."""

    mode: Mode
    findings: tuple[Finding, ...]
    notes: tuple[Note, ...]
    scanned: int
    """Files of a known kind read."""
    parsed: int
    """Of those, the ones the pre-filter let through to a parser."""
    fixed: tuple[str, ...] = ()
    """Files --fix rewrote (or --diff would)."""
    rewrites: int = 0
    """Findings the rewrite removed."""
    diff: str = ""

    @property
    def files(self) -> int:
        return len({f.path for f in self.findings})

    @property
    def fixable(self) -> int:
        return sum(1 for f in self.findings if f.fix)

    def summary(self) -> dict[str, int]:
        return {"findings": len(self.findings), "files": self.files, "fixable": self.fixable,
                "scanned": self.scanned, "parsed": self.parsed, "fixed_files": len(self.fixed),
                "rewrites": self.rewrites, "notes": len(self.notes)}


def native_versions(manifest: Manifest) -> Versions:
    """What a pin of the native line must allow, and the recipe to get there, from the release
    data (never guessed: a version the data does not hold is left out of the check)."""
    release = manifest.default
    natives = [r for r in manifest.releases if r.flavour == "native"]
    tnx = tuple(dict.fromkeys(v for r in natives for v in r.packages.get("torch-neuronx", ())
                if not v.startswith("2.9.")))
    cc = next((r.packages["neuronx-cc"] for r in natives if r.packages.get("neuronx-cc")), ())
    recipe = (f"`neuronctl lock --release {release.version}` then `neuronctl install --lock "
              f"pylock.toml` (AWS's recipe: \"torch-neuronx==2.14.*\" \"neuronx-cc==2.*\" nki)")
    return Versions(tnx or ("2.13.0", "2.14.0"), tuple(cc), recipe)


class _Run(Struct):
    """What a run gathers as it goes."""

    request: MigrateRequest
    findings: list[Finding] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    diffs: list[str] = field(default_factory=list)
    scanned: int = 0
    parsed: int = 0
    rewrites: int = 0
    seen: set[Path] = field(default_factory=set)
    """Files already scanned (under another root named, or named twice)."""


def _roots(paths: tuple[Path, ...]) -> list[tuple[Path, str]]:
    """(the real path, the name to show) of each root; a missing one is bad input (exit 2)."""
    roots: list[tuple[Path, str]] = []
    for path in paths or (Path("."),):
        if not os.path.lexists(path):
            raise InputError(f"migrate: {path}: no such file or folder")
        real = path.resolve()
        if not (real.is_dir() or real.is_file()):
            raise InputError(f"migrate: {path}: not a regular file or a folder")
        if all(real != seen for seen, _ in roots):  # a root named twice is scanned once
            roots.append((real, _shown(path, real)))
    return roots


def _shown(path: Path, real: Path) -> str:
    """How a root's findings name it: relative to the working directory when inside it (SARIF
    and annotations take paths from the repository root), else as given."""
    here = Path.cwd().resolve()
    if real == here:
        return ""
    if real.is_relative_to(here) and not path.is_symlink():
        return real.relative_to(here).as_posix()
    return path.as_posix().rstrip("/")


def migrate(request: MigrateRequest) -> MigrateOutcome:
    """Scan (and with --fix rewrite, with --diff show the rewrite of) every root named."""
    run = _Run(request)
    for real, shown in _roots(request.paths):
        if real.is_file():
            kind = kind_of(real.name, real.parent.name)
            if kind is None:
                run.notes.append(Note(shown, "not a kind of file migrate reads"))
                continue
            _one(run, real.parent, Candidate(real, real.name, kind, real.stat().st_size),
                 shown or real.name)
            continue
        for candidate in walk(real, run.notes, request.max_bytes):
            _one(run, real, candidate, f"{shown}/{candidate.rel}" if shown else candidate.rel)
    run.findings.sort(key=lambda f: (f.path, f.cell or 0, f.line, f.col, f.rule))
    return MigrateOutcome(request.mode, tuple(run.findings), tuple(run.notes), run.scanned,
                          run.parsed, tuple(run.fixed), run.rewrites, "".join(run.diffs))


def _one(run: _Run, root: Path, candidate: Candidate, shown: str) -> None:
    if candidate.path in run.seen:
        return
    run.seen.add(candidate.path)
    if candidate.size > run.request.max_bytes:
        run.notes.append(Note(shown, f"skipped: {candidate.size} bytes, over the "
                                     f"{run.request.max_bytes}-byte bound (--max-bytes)"))
        return
    try:
        data = read_bytes(candidate.path, run.request.max_bytes)
    except OSError as exc:
        run.notes.append(Note(shown, f"not read: {exc.strerror or exc}"))
        return
    run.scanned += 1
    scan = scan_file(candidate.kind, candidate.path.name, data, run.request.versions)
    run.parsed += scan.parsed
    if run.request.mode != "scan" and scan.fixable:
        scan = _fix(run, root, candidate, shown, data, scan)
    run.findings += [_finding(shown, cell, hit, run.request.versions) for cell, hit in scan.hits]


def _finding(shown: str, cell: int | None, hit: Hit, versions: Versions) -> Finding:
    return Finding(shown, hit.line, hit.col, hit.rule, hit.found, hit.fix, cell, versions.recipe)


def _fix(run: _Run, root: Path, candidate: Candidate, shown: str, data: bytes,
         scan: FileScan) -> FileScan:
    """The file rewritten (or its diff); the scan of what it becomes, whose findings are the
    ones left. A rewrite that does not compile, or that libcst cannot parse, changes nothing."""
    from neuronctl.ops.migrate.fix import rewrite_file
    from neuronctl.ops.migrate.write import diff_text, write_back

    try:
        new = rewrite_file(scan, shown)
    except Exception as exc:  # libcst's ParserSyntaxError, or a rewrite that does not compile
        run.notes.append(Note(shown, f"not rewritten: {type(exc).__name__}"))
        return scan
    if new is None or scan.text is None or new == scan.text:
        return scan
    after = scan_file(candidate.kind, candidate.path.name, new.encode("utf-8"), run.request.versions)
    run.rewrites += len(scan.hits) - len(after.hits)
    run.fixed.append(shown)
    if run.request.mode == "diff":
        run.diffs.append(diff_text(shown, scan.text, new))
        return scan
    try:
        write_back(root, candidate.path, data, new)
    except FaultError as exc:  # a link, a change under us, a full disk: this file only
        run.fixed.remove(shown)
        run.rewrites -= len(scan.hits) - len(after.hits)
        run.notes.append(Note(shown, f"not rewritten: {exc.message}"))
        return scan
    return after
