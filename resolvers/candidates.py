"""Which files of a project fit a target: pure selection, with a reason for every file turned away
(so a failed resolution can say what was tried and why it did not fit)."""

from __future__ import annotations

from collections.abc import Iterable

from msgspec import Struct
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

from neuronctl.resolvers.simple_index import DistFile
from neuronctl.resolvers.targets import PlatformTarget


class Rejected(Struct, frozen=True):
    """A file the resolver passed over, and why (shown when nothing fits)."""

    filename: str
    version: str | None
    reason: str


class VersionFiles(Struct, frozen=True):
    """One version of a package with its wheels that fit the target."""

    version: Version
    wheels: tuple[DistFile, ...]
    """Wheels of this version that fit the target, best tag first."""


def _yank_reason(dist: DistFile) -> str:
    if not isinstance(dist.yanked, str) or not dist.yanked:
        return "yanked"
    # The index's own words, shown to the user: never a terminal control sequence.
    shown = "".join(c if c.isprintable() else "?" for c in dist.yanked[:200])
    return f"yanked ({shown})"


def _unusable(dist: DistFile, want: NormalizedName) -> Rejected | None:
    """An unusable file of this project (or of no project one can tell), reported; another
    project's is none of this resolution's business."""
    version: str | None = None
    try:
        if dist.is_wheel:
            name, parsed, _build, _tags = parse_wheel_filename(dist.filename)
        else:
            name, parsed = parse_sdist_filename(dist.filename)
        if name != want:
            return None
        version = str(parsed)
    except (InvalidWheelFilename, InvalidSdistFilename):
        pass
    return Rejected(dist.filename, version, f"unusable: {dist.unusable}")


def select_files(project: str, files: Iterable[DistFile], target: PlatformTarget
                 ) -> tuple[list[VersionFiles], list[Rejected]]:
    """Versions (newest first) with their fitting wheels, and every file turned away with why."""
    want: NormalizedName = canonicalize_name(project)
    python = Version(target.markers["python_full_version"])
    by_version: dict[Version, list[tuple[int, DistFile]]] = {}
    rejected: list[Rejected] = []
    for dist in files:
        if dist.unusable:
            turned = _unusable(dist, want)
            if turned is not None:
                rejected.append(turned)
            continue
        if not dist.is_wheel:
            try:
                name, sversion = parse_sdist_filename(dist.filename)
            except InvalidSdistFilename:
                continue
            if name == want:
                rejected.append(Rejected(dist.filename, str(sversion),
                                         "source distribution (locks pin wheels only)"))
            continue
        try:
            name, version, _build, wheel_tags = parse_wheel_filename(dist.filename)
        except InvalidWheelFilename:
            rejected.append(Rejected(dist.filename, None, "not a valid wheel file name"))
            continue
        if name != want:
            continue
        if dist.yanked:
            rejected.append(Rejected(dist.filename, str(version), _yank_reason(dist)))
            continue
        if dist.requires_python:
            try:
                ok = SpecifierSet(dist.requires_python).contains(python, prereleases=True)
            except InvalidSpecifier:
                ok = False
            if not ok:
                rejected.append(Rejected(dist.filename, str(version),
                                         f"requires-python {dist.requires_python}"))
                continue
        rank = target.wheel_rank(wheel_tags)
        if rank is None:
            rejected.append(Rejected(dist.filename, str(version), f"no tag fits {target.label}"))
            continue
        by_version.setdefault(version, []).append((rank, dist))
    out = [VersionFiles(v, tuple(d for _, d in sorted(ws, key=lambda p: (p[0], p[1].filename))))
           for v, ws in by_version.items()]
    out.sort(key=lambda vf: vf.version, reverse=True)
    return out, rejected
