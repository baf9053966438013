"""The installer-engine interface: each engine turns "put exactly these local wheel files into
this environment" (and "remove these", "create a venv here") into an argv, never a shell line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class Engine(Protocol):
    @property
    def name(self) -> str: ...

    def install(self, python: str, files: Sequence[Path]) -> list[str]:
        """Install exactly these files: no dependencies, no index, replacing what is there."""
        ...

    def uninstall(self, python: str, names: Sequence[str]) -> list[str]: ...

    def create_venv(self, base_python: str, dest: Path) -> list[str]: ...

    @property
    def venv_has_pip(self) -> bool:
        """Whether create_venv's venv comes with pip; if not, the caller seeds it."""
        ...


@dataclass(frozen=True)
class Choice:
    engine: Engine
    reason: str
    """Why this engine: "--backend uv", "config backend = pip", "NEURONCTL_BACKEND", "auto: ..."."""
