"""Per-invocation state shared by every command: global options, config, manifest."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

from neuronctl.redact import redact

if TYPE_CHECKING:
    from rich.console import Console

    from neuronctl.cli.output import HeldJson
    from neuronctl.config import Config
    from neuronctl.manifest import Manifest


@dataclass
class App:
    """What the commands of one invocation share: the global options, the config and manifest
    read once, and the JSON document held for the error boundary."""

    verbose: int = 0
    quiet: bool = False
    color: bool = True
    config_path: Path | None = None
    manifest_path: Path | None = None
    _config: Config | None = field(default=None, repr=False)
    # What the error boundary needs to write a command's one JSON document (cli/output.py):
    holds_json: bool = False
    """emit_json hands the document to the boundary (set by main.run) instead of printing it."""
    json_held: HeldJson | None = field(default=None, repr=False)
    json_wanted: bool = False
    """--json (or --format json) was given to the command being run."""
    command: str | None = None
    """The command being run, as users type it ("releases show"), once its options are read."""

    def config(self) -> Config:
        if self._config is None:
            from neuronctl.config import load_config

            self._config = load_config(self.config_path)
        return self._config

    def manifest(self, override: Path | None = None) -> Manifest:
        from neuronctl.manifest import load_manifest

        path = override or self.manifest_path
        if path is None:
            path = self.config().path("manifest")
        if path is None and os.environ.get("NEURONCTL_MANIFEST"):
            path = Path(os.environ["NEURONCTL_MANIFEST"])
        return load_manifest(path)

    def console(self, *, stderr: bool = False) -> Console:
        from rich.console import Console

        stream = sys.stderr if stderr else sys.stdout
        # Piped output is read in logs and CI, where rich's 80-column fallback folds tables.
        width = None if stream.isatty() else int(os.environ.get("COLUMNS", "120") or 120)
        # No emoji codes: data such as the PCI address 0000:cd:00.0 would print as an emoji.
        return Console(stderr=stderr, no_color=not self.color, highlight=False, emoji=False,
                       width=width)


# Whether this run may colour its output at all (--no-color, before or after the command); the
# error boundary prints after the command's context is gone, so it reads this, not the App.
_colour_allowed = [True]


def allow_colour(allowed: bool) -> None:
    _colour_allowed[0] = allowed


def terminal_text(text: str, limit: int | None = 300) -> str:
    """Text that came from elsewhere (a check's message, a node's answer) as it may be printed:
    control characters and escape sequences made spaces, credentials redacted, cut at `limit`."""
    return redact("".join(ch if ch.isprintable() else " " for ch in text))[:limit]


def paint(text: str, colour: str, *, err: bool = False) -> str:
    """`text` in `colour` on a terminal; unchanged in a pipe, with NO_COLOR or --no-color."""
    stream = sys.stderr if err else sys.stdout
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty or not _colour_allowed[0] or os.environ.get("NO_COLOR"):
        return text
    return click.style(text, fg=colour, bold=True)


def get_app() -> App:
    ctx = click.get_current_context()
    app = ctx.find_object(App)
    if app is None:
        app = ctx.ensure_object(App)
    return app
