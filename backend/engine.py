"""The installer-engine interface: each engine turns "put exactly the files this requirements file
names into this environment" (and "remove these", "create a venv here") into an argv, never a
shell line.

The requirements (a requirements file for pip, a PEP 751 lock for uv) hold one URL per package
with its sha256: the engine
fetches each file from the URL the lock (or the resolution) recorded, verifies it against that
hash while it streams it, and resolves nothing (`--no-deps`) from no index (`--no-index`), so no
other file can take a package's place. Both engines fetch and verify every file before they
change the environment (pip prepares every requirement before its install step; uv prepares every
distribution before it unlinks or links anything), so a file that fails leaves the environment
as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class Engine(Protocol):
    @property
    def name(self) -> str: ...

    def install(self, python: str, requirements: Path, *, offline: bool = False) -> list[str]:
        """Install exactly the files `requirements` names (direct URLs, each with its sha256):
        no dependencies, no index, hashes required, replacing what is there. `offline`: from the
        engine's own cache (or local files) only."""
        ...

    def uninstall(self, python: str, names: Sequence[str]) -> list[str]: ...

    def create_venv(self, base_python: str, dest: Path) -> list[str]: ...

    @property
    def venv_has_pip(self) -> bool:
        """Whether create_venv's venv comes with pip; if not, the caller seeds it."""
        ...

    @property
    def input_name(self) -> str:
        """The file install() reads: `pylock.toml` (uv: a PEP 751 lock of exactly the files) or
        `requirements.txt` (pip: `name @ URL --hash=sha256:...` lines)."""
        ...

    @property
    def rereads_local_files(self) -> bool:
        """Whether the engine opens a local file again after it checked its hash (pip does), so
        that it must be given private, verified copies (ops/install/private_copy.py)."""
        ...

    @property
    def has_offline_cache(self) -> bool:
        """Whether the engine keeps downloaded files itself, so that --offline can install a
        lock's http(s) files it fetched before (uv does; pip here runs with --no-cache-dir)."""
        ...


@dataclass(frozen=True)
class Choice:
    """The engine an install runs, and why it was chosen (shown to the user)."""

    engine: Engine
    reason: str
    """Why this engine: "--backend uv", "config backend = pip", "NEURONCTL_BACKEND", "auto: ..."."""
