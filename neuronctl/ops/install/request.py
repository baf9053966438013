"""What `neuronctl install` is asked to do, as one typed value the CLI builds from its flags, the
environment and the config, every setting already resolved (no config reaches the operation)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct

from neuronctl.backend.engine import Choice
from neuronctl.errors import InputError
from neuronctl.routing import IndexRouting

if TYPE_CHECKING:
    from neuronctl.ops.lock.request import StackRequest
    from neuronctl.release.model import Manifest


class InstallRequest(Struct, frozen=True):
    """What `neuronctl install` was asked, options parsed and settings resolved, for the
    operation to validate."""

    manifest: Callable[[], Manifest]
    """Loads the release manifest; the operation calls it once, when it first needs it."""
    engine: Choice
    """The engine and why (--engine, config engine, NEURONCTL_ENGINE, else auto)."""
    routing: Callable[[Mapping[str, str]], IndexRouting]
    """The index routing (bundled, config, NEURONCTL_INDEX_*, --index, --route) over the indexes
    a lock records."""
    stack: Callable[[str, str], StackRequest]
    """A fresh resolution's request for a target Python X.Y and platform: the release, torch,
    --with, --latest and the routing, as flags, environment and config set them."""
    timeout: float = 30.0
    """Seconds per request and per interpreter inspection, already validated."""
    check_timeout: float | None = None
    """Each check's limit for the doctor afterwards, in seconds (--check-timeout, config
    `check_timeout`); None: the doctor level's budget."""
    release: str | None = None
    """--release, else the config's."""
    torch: str | None = None
    """--torch, else the config's."""
    with_: tuple[str, ...] = ()
    latest: bool = False
    offline: bool = False
    lock: Path | None = None
    python: str | None = None
    venv: Path | None = None
    venv_python: str | None = None
    dry_run: bool = False
    yes: bool = False
    write_lock: Path | None = None
    check: bool = True
    """Run the doctor on the target afterwards (--no-check: False)."""
    sysroot: Path | None = None
    device: str = "auto"
    """Which of a --lock's locks to install: auto (by the host's hardware), neuron, cuda, cpu."""
    show_engine: bool = False
    """Let the engine draw its own progress on the terminal (stderr is one, no --json or -q)."""
    find_links: Path | None = None
    """A wheelhouse (neuronctl download) the lock's files come from, each verified by the engine."""
    allow_unsupported: bool = False
    """--allow-unsupported: proceed where a documented rule forbids the stack (it is named)."""

    def __post_init__(self) -> None:
        if self.find_links is not None and self.lock is None:
            raise InputError("--find-links installs a lock's files from a wheelhouse; pass --lock "
                             "LOCK too (the lock the wheelhouse was downloaded for)")
        if self.lock is not None and (self.with_ or self.latest or self.write_lock):
            raise InputError("--lock installs exactly the lock; --with, --latest and --write-lock "
                             "need a fresh resolution (drop --lock)")
        if self.device != "auto" and self.lock is None:
            raise InputError(f"--device {self.device} picks one of a lock's fallback locks; it needs "
                             "--lock pylock.toml")
