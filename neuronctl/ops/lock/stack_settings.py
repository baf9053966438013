"""What the user asked the stack to be, resolved: a module of its own, light to import, so that
a command building its settings (install with --lock, which never resolves) loads nothing of the
resolution's (request.py: the targets, the lock model)."""

from __future__ import annotations

from msgspec import Struct, field

from neuronctl.ops.index_routing import IndexSources
from neuronctl.settings import DEFAULT, Setting


class StackSettings(Struct, frozen=True):
    """What the user asked the stack to be, resolved by neuronctl.settings (flag > environment >
    config > default); the release keeps its source for messages."""

    release: Setting[str | None] = field(default_factory=lambda: Setting(None, DEFAULT))
    torch: str | None = None
    python_versions: tuple[str, ...] = ()
    python_source: str = "--python-version"
    """How the Python versions were given, for the error naming one the release lacks."""
    platforms: tuple[str, ...] = ()
    requirements: tuple[str, ...] = ()
    indexes: IndexSources = field(default_factory=IndexSources)
    latest: bool = False
    fallback: str | None = None
    """lock --fallback cuda[=VARIANT]|cpu: a fallback lock's stack."""
