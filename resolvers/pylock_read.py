"""Read and validate a PEP 751 pylock.toml; pick the packages that apply to one environment.

Beyond what `packaging.pylock` checks, every file's hashes (known algorithm, exact hex length)
and file name (one plain path component) are checked here, where the lock enters: nothing later
can turn a lock's text into a path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker
from packaging.pylock import (
    Package,
    PackageSdist,
    PackageWheel,
    Pylock,
    PylockUnsupportedVersionError,
    PylockValidationError,
)

from neuronctl.errors import InputError
from neuronctl.safety import checked_hashes, safe_filename
from neuronctl.tomlfile import read_toml


@dataclass(frozen=True)
class LockedPackage:
    name: str
    version: str | None
    marker: str | None


def load_pylock(path: Path) -> Pylock:
    data = read_toml(path, "lock file")
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
    if pkg.archive is not None:
        checked_hashes(pkg.archive.hashes, f"{where}: archive")


def packages_for(lock: Pylock, markers: Mapping[str, str]) -> list[LockedPackage]:
    """The locked packages whose marker holds in an environment (all of them when none is given)."""
    out = []
    env = dict(markers)
    for pkg in lock.packages:
        marker = pkg.marker
        try:
            if marker is not None and env and not Marker(str(marker)).evaluate(env):  # type: ignore[arg-type,unused-ignore]
                continue
        except ValueError as exc:  # packaging's UndefinedComparison: a marker such as ~= "foo"
            raise InputError(f"lock package {pkg.name}: marker {str(marker)[:120]!r} cannot be "
                             f"evaluated ({str(exc)[:120]})") from None
        out.append(LockedPackage(str(pkg.name), str(pkg.version) if pkg.version else None,
                                 str(marker) if marker else None))
    return out
