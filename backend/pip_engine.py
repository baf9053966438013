"""pip, the target environment's own (`<python> -m pip`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PipEngine:
    """The pip engine: argv for the target's own pip, hashes required, no index, no deps."""

    name: str = "pip"

    def install(self, python: str, requirements: Path, *, offline: bool = False) -> list[str]:
        # pip has no offline mode; --offline installs through it only from local files.
        return [python, "-m", "pip", "install", "--no-deps", "--no-index", "--require-hashes",
                "--no-cache-dir", "--force-reinstall", "--disable-pip-version-check", "--no-input",
                "-r", str(requirements)]

    def uninstall(self, python: str, names: Sequence[str]) -> list[str]:
        return [python, "-m", "pip", "uninstall", "--yes", "--disable-pip-version-check", *names]

    @property
    def venv_has_pip(self) -> bool:
        return True  # the stdlib venv runs ensurepip: the interpreter's bundled pip, no network

    @property
    def input_name(self) -> str:
        return "requirements.txt"

    @property
    def rereads_local_files(self) -> bool:
        return True  # it hashes a file: requirement, then opens the path again to install it

    @property
    def has_offline_cache(self) -> bool:
        return False

    def create_venv(self, base_python: str, dest: Path) -> list[str]:
        return [base_python, "-m", "venv", str(dest)]
