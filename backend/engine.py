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

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from msgspec import Struct

from neuronctl.backend.plan import changed_between
from neuronctl.locked_file import LockedFile
from neuronctl.routing import redact_url

UrlOf = Callable[[LockedFile], str]
"""The URL an engine's input gives for a file (encoded, with its index's credentials)."""


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

    @property
    def needs_target_pip(self) -> bool:
        """Whether the engine is the target's own pip, so that an existing target without one
        cannot use it."""
        ...

    def render_input(self, files: Sequence[LockedFile], url_of: UrlOf) -> str:
        """The text of the file install() reads (named input_name), for exactly `files`, each
        fetched from `url_of(file)`."""
        ...

    def cleanup(self, environment: str) -> Callable[[], None]:
        """Called just before the engine changes the existing `environment`; what it returns,
        called after a failed step, takes away what the engine leaves there that was not there
        before, so that the environment is as it was."""
        ...

    def restore_commands(self, python: str, before: Mapping[str, str], after: Mapping[str, str],
                         index_url_for: Callable[[str], str]) -> list[list[str]]:
        """Commands a person runs, with this engine, to put back what a failed apply changed
        (what: to_restore)."""
        ...


class Choice(Struct, frozen=True):
    """The engine an install runs, and why it was chosen (shown to the user)."""

    engine: Engine
    reason: str
    """Why this engine: "--engine uv", "config engine = pip", "NEURONCTL_BACKEND", "auto: ..."."""


def nothing() -> None:
    """A cleanup with nothing to take away."""


class Restore(Struct, frozen=True):
    """What puts back a failed apply's changes, whatever the engine: each old version from the
    one index its routing names (no merged indexes here either), then removal of what was new.
    Index URLs are without credentials: the engine takes them from ~/.netrc, as the README says."""

    reinstall: tuple[tuple[str, tuple[str, ...]], ...]
    """(index URL, name==version pins), one per index, in a stable order."""
    remove: tuple[str, ...]


def to_restore(before: Mapping[str, str], after: Mapping[str, str],
               index_url_for: Callable[[str], str]) -> Restore:
    changed = changed_between(before, after)
    by_index: dict[str, list[str]] = {}
    for name, old, _new in changed:
        if old is not None:
            by_index.setdefault(redact_url(index_url_for(name)), []).append(f"{name}=={old}")
    return Restore(tuple((url, tuple(pins)) for url, pins in sorted(by_index.items())),
                   tuple(name for name, old, _new in changed if old is None))
