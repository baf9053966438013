"""pylock.toml as install and the doctor read it: validated where the lock enters, and what
applies to one environment. Writing a lock (and lock --check's reading of what it records) is
neuronctl.resolvers.lock_record's: an install that reads a lock creates none of its classes.

Beyond what `packaging.pylock` checks, every file's hashes (known algorithm, exact hex length)
and file name (one plain path component) are checked here: nothing later can turn a lock's text
into a path. A read lock is packaging's `Pylock`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from packaging.markers import Marker
from packaging.pylock import (
    Package,
    PackageSdist,
    PackageWheel,
    Pylock,
    PylockUnsupportedVersionError,
    PylockValidationError,
)

from neuronctl.devices import FALLBACK_DEVICES
from neuronctl.errors import InputError
from neuronctl.safety import checked_hashes, checked_url, safe_filename
from neuronctl.tomlfile import read_toml

MAX_LOCK_BYTES = 8 << 20
"""A lock for the largest stack, every target, is well under 1 MB; doctor reads a project's lock on
every run, and TOML parses at about a second a megabyte here."""


def load_pylock(path: Path) -> Pylock:
    """The lock, validated as PEP 751 and with every hash and file name checked; InputError
    naming the file (and the package) otherwise."""
    data = read_toml(path, "lock file", MAX_LOCK_BYTES)
    try:
        lock = Pylock.from_dict(data)
        for i, pkg in enumerate(lock.packages):
            _check_files(pkg, f"{path}: packages[{i}] ({pkg.name} {pkg.version or '?'})")
    except PylockUnsupportedVersionError as exc:
        raise InputError(f"{path}: {exc}") from None
    except PylockValidationError as exc:
        raise InputError(f"{path}: not a valid PEP 751 lock: {exc}") from None
    return lock


def _check_files(pkg: Package, where: str) -> None:
    """InputError naming the lock and the package unless every hash and file name is safe."""
    files: list[tuple[str, PackageWheel | PackageSdist]] = [
        (f"wheels[{j}]", wheel) for j, wheel in enumerate(pkg.wheels or ())]
    if pkg.sdist is not None:
        files.append(("sdist", pkg.sdist))
    for label, dist in files:
        checked_hashes(dist.hashes, f"{where}: {label}")
        safe_filename(dist.filename, f"{where}: {label}")
        if dist.url is not None:  # it goes into the engine's input: one plain http(s)/file URL
            checked_url(dist.url, f"{where}: {label}")
    if pkg.archive is not None:
        checked_hashes(pkg.archive.hashes, f"{where}: archive")
        if pkg.archive.url is not None:
            checked_url(pkg.archive.url, f"{where}: archive")
    if pkg.index is not None:
        checked_url(pkg.index, f"{where}: index")


def neuronctl_table(lock: Pylock) -> dict[str, Any] | None:
    """The lock's [tool.neuronctl] table (what it was made from), or None if it has none."""
    tool = (lock.tool or {}).get("neuronctl")
    return tool if isinstance(tool, dict) else None


def fallback_of(lock: Pylock, where: str = "lock") -> dict[str, str] | None:
    """The device (and CUDA variant) a fallback lock is for, from its [tool.neuronctl]
    `fallback` table; None for a Neuron lock. A malformed table is bad input naming `where`
    (the lock's path)."""
    tool = neuronctl_table(lock) or {}
    table = tool.get("fallback")
    if table is None:
        return None
    if not isinstance(table, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and len(v) <= 32 for k, v in table.items()):
        raise InputError(f"{where}: [tool.neuronctl] fallback: expected a table of short strings "
                         "(device, variant)")
    if table.get("device") not in FALLBACK_DEVICES:
        raise InputError(f"{where}: [tool.neuronctl] fallback: device "
                         f"{str(table.get('device'))[:32]!r}: expected cuda or cpu")
    return dict(table)


def _marker_holds(marker: object, env: Mapping[str, str], where: str) -> bool:
    try:
        return Marker(str(marker)).evaluate(dict(env))  # type: ignore[arg-type,unused-ignore]
    except ValueError as exc:  # packaging's UndefinedComparison: a marker such as ~= "foo"
        raise InputError(f"{where}: marker {str(marker)[:120]!r} cannot be evaluated "
                         f"({str(exc)[:120]})") from None


def fits_environments(lock: Pylock, markers: Mapping[str, str]) -> bool:
    """Whether the lock's `environments` admit an environment (True when either is unknown)."""
    if not lock.environments or not markers:
        return True
    return any(_marker_holds(m, markers, "lock environments") for m in lock.environments)


def packages_for(lock: Pylock, markers: Mapping[str, str]) -> list[Package]:
    """The locked packages whose marker holds in an environment (all of them when none is given)."""
    return [pkg for pkg in lock.packages
            if pkg.marker is None or not markers
            or _marker_holds(pkg.marker, markers, f"lock package {pkg.name}")]
