"""The types of an install's source (step 6), in a module of their own: source.py makes them,
find_links.py (a lock's files from a wheelhouse) and resolution.py (a fresh resolution) make them
too, and plan, check, the outcome and the report read them. None of those is imported here, so
the three that make a source import this and not each other."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from msgspec import Struct, field

from neuronctl.locked_file import LockedFile
from neuronctl.release.model import Framework
from neuronctl.routing import IndexRouting


class InstallSource(Struct, frozen=True):
    """The wheels an install puts in place, from a lock or a fresh resolution, and their stack."""

    wanted: tuple[LockedFile, ...]
    release: str | None
    framework: Framework | None
    describe: str
    lock: Path | None = None
    indexes: Mapping[str, str] = field(default_factory=dict)
    """Index name -> URL as the lock recorded them."""


class LockToWrite(Protocol):
    """What --write-lock writes: a fresh resolution (resolution.Resolution), named here by what
    it does so that this module imports no resolution (nor the HTTP stack a resolution loads)."""

    def write(self, path: Path) -> None: ...


class Sourced(Struct, frozen=True):
    """An install's source, the index routing its files are fetched by, and the fresh resolution
    it came from (None for a lock), which --write-lock writes."""

    source: InstallSource
    routing: IndexRouting
    resolution: LockToWrite | None = None

    def engine_files(self, wanted: Sequence[LockedFile]) -> list[LockedFile]:
        """What the engine is given for `wanted`: each file with the URL the lock (or the
        resolution) recorded, so each package comes from its own index, checked for the
        engine's input."""
        return [w.checked() for w in wanted]

    def write_lock(self, path: Path | None) -> Path | None:
        """The fresh resolution as a pylock.toml at `path` (--write-lock), if both are there."""
        if path is None or self.resolution is None:
            return None
        self.resolution.write(path)
        return path
