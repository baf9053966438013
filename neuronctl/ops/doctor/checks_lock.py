"""The doctor's lock.drift check: the installed versions against the --lock file, and what is
installed that the lock does not list (a CUDA torch's nvidia-* left behind), with its size."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.fixes import install_fix, neuronctl_command, public
from neuronctl.ops.doctor.registry import check
from neuronctl.ops.doctor.runner import CheckOutcome
from neuronctl.probes.sysroot import read_regular_bytes

TOOLING = frozenset({"pip", "setuptools", "wheel"})
"""Installer tooling: in an environment whatever the lock says, never drift."""
RECORD_CAP = 64 << 20
"""A RECORD larger than this is not read (torch's is about 2 MB): size unknown."""
SHOWN = 20


def _relock_fix(f: Facts) -> str:
    """Lock for this environment's Python where the release supports it, else a new venv."""
    release, minor = f.selection.release, ".".join(f.env.python.split(".")[:2])
    if minor not in release.python:
        return install_fix(f)
    return neuronctl_command(f, "lock", "--release", release.version, "--python-version", minor,
                             "-o", str(f.lock))


def _site_dirs(prefix: str, python: str) -> list[Path]:
    """Where an environment with this prefix keeps its distributions (a venv's site-packages, a
    distro's dist-packages); only those that exist."""
    minor = ".".join(python.split(".")[:2])
    base = Path(prefix)
    found = [base / lib / f"python{minor}" / "site-packages" for lib in ("lib", "lib64")]
    found += [base / "local" / "lib" / f"python{minor}" / "dist-packages",
              base / "lib" / "python3" / "dist-packages"]
    return [d for d in found if d.is_dir()]


def _dist_infos(dirs: Iterable[Path]) -> dict[str, Path]:
    """Canonical name -> its .dist-info directory, first found first."""
    from packaging.utils import canonicalize_name

    out: dict[str, Path] = {}
    for folder in dirs:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".dist-info") and entry.is_dir(follow_symlinks=False):
                name = entry.name[:-len(".dist-info")].split("-", 1)[0]
                out.setdefault(str(canonicalize_name(name)), Path(entry.path))
    return out


def _row_size(site: Path, row: list[str]) -> int:
    """One RECORD row's bytes: its size column when that is a plain number, else the listed
    file's size when it lies inside the site directory; 0 when neither can be had."""
    size = row[2] if len(row) >= 3 else ""
    # "²".isdigit() is true but int() refuses it; 15 digits is already a petabyte.
    if size.isascii() and size.isdigit() and len(size) <= 15:
        return int(size)
    if not row or not row[0]:
        return 0
    try:
        path = (site / row[0]).resolve()
        if path.is_relative_to(site) and path.is_file():
            return path.stat().st_size
    except (OSError, ValueError):  # a NUL in the name, a loop of links, a file gone
        pass
    return 0


def record_size(info: Path) -> int | None:
    """Bytes a distribution takes: its RECORD's sizes, or the size of each listed file where the
    RECORD gives none (files outside the site directory are not looked at); None if the RECORD
    is unreadable, too big, not a regular file or not CSV (a bad RECORD never fails the check)."""
    import csv  # only a package the lock does not list is sized; a clean environment has none

    data = read_regular_bytes(info / "RECORD", RECORD_CAP + 1)
    if data is None or len(data) > RECORD_CAP:
        return None
    try:
        site = info.parent.resolve()
        rows = list(csv.reader(data.decode("utf-8", errors="replace").splitlines()))
    except (OSError, ValueError, csv.Error):
        return None
    return sum(_row_size(site, row) for row in rows)


def _size_text(size: int | None) -> str:
    if size is None:
        return "size unknown"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def unlisted(f: Facts, listed: Iterable[str]) -> list[str]:
    """'name version (size)' for each installed distribution the lock does not list."""
    from packaging.utils import canonicalize_name

    names = {str(canonicalize_name(n)) for n in listed} | TOOLING
    extra = sorted(k for k in f.env.distributions if k not in names)
    if not extra:
        return []
    infos = _dist_infos(_site_dirs(f.env.prefix, f.env.python))
    sized = [(k, record_size(infos[k]) if k in infos else None) for k in extra]
    sized.sort(key=lambda item: (-(item[1] or 0), item[0]))
    return [f"{k} {f.env.distributions[k].version}: not in the lock ({_size_text(s)})"
            for k, s in sized]


@check("lock.drift", "Lock file drift")
def check_lock(f: Facts) -> CheckOutcome:
    from neuronctl.resolvers.pylock import packages_for

    assert f.lock is not None
    lock = f.pylock
    markers = dict(f.env.markers)
    if not f.lock_fits():
        return CheckOutcome("fail", f"{f.lock} is not for this environment (Python {f.env.python}, "
                               f"{f.env.machine}): its environments are "
                               + "; ".join(str(m) for m in lock.environments or ()),
                       _relock_fix(f))
    locked = packages_for(lock, markers)
    drift = []
    for pkg in locked:
        have = f.env.get(pkg.name)
        if have is None:
            drift.append(f"{pkg.name}: locked {pkg.version}, not installed")
        elif pkg.version and public(have.version) != public(str(pkg.version)) and \
                have.version != str(pkg.version):
            drift.append(f"{pkg.name}: locked {pkg.version}, installed {have.version}")
    extra = unlisted(f, (str(p.name) for p in locked))
    shown = extra[:SHOWN] + ([f"and {len(extra) - SHOWN} more"] if len(extra) > SHOWN else [])
    if drift:
        also = f"; {len(extra)} installed packages are not in it" if extra else ""
        return CheckOutcome("fail", f"{len(drift)} of {len(locked)} locked packages differ from "
                               f"{f.lock}{also}", install_fix(f), tuple(drift + shown))
    if extra:
        return CheckOutcome("warn", f"all {len(locked)} packages match {f.lock}, but {len(extra)} "
                               "installed packages are not in it (your own, or left behind by "
                               "a stack the lock replaced)", None, tuple(shown))
    return CheckOutcome("pass", f"all {len(locked)} packages match {f.lock}")
