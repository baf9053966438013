"""uv (`uv pip`), aimed at the target interpreter with --python."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class UvEngine:
    """The uv engine: argv for `uv pip` on the target, from a PEP 751 lock of exactly the files."""

    uv: str
    name: str = "uv"

    def install(self, python: str, requirements: Path, *, offline: bool = False) -> list[str]:
        # A PEP 751 lock of exactly these files (not a requirements file of direct URLs: for those
        # uv resolves, reading each wheel's metadata with range requests first, so the bytes of a
        # wheel's zip directory are served twice; from a pylock it fetches each file once).
        return [self.uv, "pip", "install", "--python", python, "--no-deps", "--no-index",
                "--require-hashes", "--no-config", *(["--offline"] if offline else []),
                "-r", str(requirements)]

    def uninstall(self, python: str, names: Sequence[str]) -> list[str]:
        return [self.uv, "pip", "uninstall", "--python", python, "--no-config", *names]

    @property
    def venv_has_pip(self) -> bool:
        # `uv venv --seed` would fetch pip from PyPI: an index outside the routing, and a network
        # call that breaks offline installs. The caller seeds pip from the base Python's own
        # bundled wheel instead, in the same install step.
        return False

    @property
    def input_name(self) -> str:
        return "pylock.toml"

    @property
    def rereads_local_files(self) -> bool:
        return False  # it hashes a local wheel as it unpacks it, from one open file

    @property
    def has_offline_cache(self) -> bool:
        return True

    def create_venv(self, base_python: str, dest: Path) -> list[str]:
        return [self.uv, "venv", "--python", base_python, "--no-python-downloads", "--no-config",
                str(dest)]
