"""pip, the target environment's own (`<python> -m pip`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PipEngine:
    name: str = "pip"

    def install(self, python: str, files: Sequence[Path]) -> list[str]:
        return [python, "-m", "pip", "install", "--no-deps", "--no-index", "--no-cache-dir",
                "--force-reinstall", "--disable-pip-version-check", "--no-input",
                *(str(f) for f in files)]

    def uninstall(self, python: str, names: Sequence[str]) -> list[str]:
        return [python, "-m", "pip", "uninstall", "--yes", "--disable-pip-version-check", *names]

    @property
    def venv_has_pip(self) -> bool:
        return True  # the stdlib venv runs ensurepip: the interpreter's bundled pip, no network

    def create_venv(self, base_python: str, dest: Path) -> list[str]:
        return [base_python, "-m", "venv", str(dest)]
