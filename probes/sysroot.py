"""All filesystem reads of the probes go through one root, so captured trees can stand in."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SysRoot:
    root: Path = Path("/")

    @classmethod
    def from_env(cls, explicit: str | Path | None = None) -> SysRoot:
        value = explicit or os.environ.get("NEURONCTL_SYSROOT") or "/"
        return cls(Path(value))

    @property
    def is_host(self) -> bool:
        return self.root == Path("/")

    def path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/")

    def read(self, absolute: str | Path) -> str | None:
        """The stripped text of a file, or None when it is absent or unreadable."""
        path = absolute if isinstance(absolute, Path) else self.path(absolute)
        try:
            return path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return None

    def exists(self, absolute: str) -> bool:
        return self.path(absolute).exists()

    def glob(self, absolute_dir: str, pattern: str) -> list[Path]:
        base = self.path(absolute_dir)
        try:
            return sorted(base.glob(pattern))
        except OSError:
            return []

    def display(self, path: Path) -> str:
        """Show a path as it is on the inspected system, not inside the captured tree."""
        try:
            return "/" + str(path.relative_to(self.root)).lstrip("/")
        except ValueError:
            return str(path)
