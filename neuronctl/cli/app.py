"""Per-invocation state shared by every command: the printer, the global options, config and
manifest. How anything is written is the Printer's (cli/printer.py); App only holds it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from neuronctl.cli.printer import Printer, current
from neuronctl.cli.terminal import (
    PIPE_WIDTH,
    TerminalStream,
    is_tty,
    safe_chars,
    terminal_text,
)

if TYPE_CHECKING:
    from rich.console import Console

    from neuronctl.cli.output import HeldJson
    from neuronctl.config import Config
    from neuronctl.manifest import Manifest

__all__ = ["PIPE_WIDTH", "App", "TerminalStream", "get_app", "paint", "safe_chars",
           "terminal_text"]


class App:
    """What the commands of one invocation share: the printer, the global options, and the
    config and manifest read once. -v, -q, --no-color and the JSON state are the printer's;
    the properties below are the names main.py and the commands set them by."""

    def __init__(self, *, holds_json: bool = False, config_path: Path | None = None,
                 manifest_path: Path | None = None) -> None:
        self.config_path = config_path
        self.manifest_path = manifest_path
        self.printer = Printer(holds_json=holds_json)
        self.command: str | None = None
        """The command being run, as users type it ("releases show"), once its options are read."""
        self._config: Config | None = None

    @property
    def verbose(self) -> int:
        return self.printer.verbose

    @verbose.setter
    def verbose(self, value: int) -> None:
        self.printer.verbose = value

    @property
    def quiet(self) -> bool:
        return self.printer.quiet

    @quiet.setter
    def quiet(self, value: bool) -> None:
        self.printer.quiet = value

    @property
    def color(self) -> bool:
        """False once --no-color is given; whether a stream gets colour is printer.colour()."""
        return not self.printer.no_color

    @color.setter
    def color(self, value: bool) -> None:
        self.printer.no_color = not value

    @property
    def json_wanted(self) -> bool:
        return self.printer.json_wanted

    @json_wanted.setter
    def json_wanted(self, value: bool) -> None:
        self.printer.json_wanted = value

    @property
    def holds_json(self) -> bool:
        return self.printer.holds_json

    @holds_json.setter
    def holds_json(self, value: bool) -> None:
        self.printer.holds_json = value

    @property
    def json_held(self) -> HeldJson | None:
        return self.printer.held

    @json_held.setter
    def json_held(self, value: HeldJson | None) -> None:
        self.printer.held = value

    def config(self) -> Config:
        if self._config is None:
            from neuronctl.config import load_config

            self._config = load_config(self.config_path)
        return self._config

    def manifest(self, override: Path | None = None) -> Manifest:
        from neuronctl.manifest import load_manifest
        from neuronctl.settings import Resolver

        path = override or self.manifest_path  # --manifest > NEURONCTL_MANIFEST > config manifest
        if path is None:
            path = Resolver.of(self.config()).value("manifest")
        return load_manifest(path)

    def console(self, *, stderr: bool = False) -> Console:
        return self.printer.console(stderr=stderr)


_is_tty = is_tty  # the name cli/progress.py and others' branches import


def paint(text: str, colour: str, *, err: bool = False) -> str:
    """`text` in `colour` where the running command's printer gives that stream colour."""
    return current().paint(text, colour, err=err)


def get_app() -> App:
    ctx = click.get_current_context()
    app = ctx.find_object(App)
    if app is None:
        app = ctx.ensure_object(App)
    return app
