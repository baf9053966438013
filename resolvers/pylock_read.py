"""Read and validate a PEP 751 pylock.toml; pick the packages that apply to one environment."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker
from packaging.pylock import Pylock, PylockUnsupportedVersionError, PylockValidationError

from neuronctl.errors import InputError
from neuronctl.tomlfile import read_toml


@dataclass(frozen=True)
class LockedPackage:
    name: str
    version: str | None
    marker: str | None


def load_pylock(path: Path) -> Pylock:
    data = read_toml(path, "lock file")
    try:
        return Pylock.from_dict(data)
    except PylockUnsupportedVersionError as exc:
        raise InputError(f"{path}: {exc}") from None
    except PylockValidationError as exc:
        raise InputError(f"{path}: not a valid PEP 751 lock: {exc}") from None


def packages_for(lock: Pylock, markers: Mapping[str, str]) -> list[LockedPackage]:
    """The locked packages whose marker holds in an environment (all of them when none is given)."""
    out = []
    env = dict(markers)
    for pkg in lock.packages:
        marker = pkg.marker
        if marker is not None and env and not Marker(str(marker)).evaluate(env):  # type: ignore[arg-type,unused-ignore]
            continue
        out.append(LockedPackage(str(pkg.name), str(pkg.version) if pkg.version else None,
                                 str(marker) if marker else None))
    return out
