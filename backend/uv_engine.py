"""uv (`uv pip`), aimed at the target interpreter with --python."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class UvEngine:
    uv: str
    name: str = "uv"

    def install(self, python: str, files: Sequence[Path]) -> list[str]:
        return [self.uv, "pip", "install", "--python", python, "--no-deps", "--no-index", "--offline",
                "--reinstall", "--no-config", *(str(f) for f in files)]

    def uninstall(self, python: str, names: Sequence[str]) -> list[str]:
        return [self.uv, "pip", "uninstall", "--python", python, "--no-config", *names]

    @property
    def venv_has_pip(self) -> bool:
        # `uv venv --seed` would fetch pip from PyPI: an index outside the routing, and a network
        # call that breaks offline installs. The caller seeds pip from the base Python's own
        # bundled wheel instead, in the same install step.
        return False

    def create_venv(self, base_python: str, dest: Path) -> list[str]:
        return [self.uv, "venv", "--python", base_python, "--no-python-downloads", "--no-config",
                str(dest)]
