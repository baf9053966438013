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
from neuronctl.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console

    from neuronctl.config import Config
    from neuronctl.release.model import Manifest
    from neuronctl.settings import Resolver

__all__ = ["PIPE_WIDTH", "App", "TerminalStream", "get_app", "note", "paint", "safe_chars",
           "terminal_text"]


class App:
    """What the commands of one invocation share: the printer, the global options, and the
    config and manifest read once. -v, -q, --no-color and the JSON state are the printer's
    (app.printer), set and read there alone."""

    def __init__(self, *, holds_json: bool = False, config_path: Path | None = None,
                 manifest_path: Path | None = None) -> None:
        self.config_path = config_path
        self.manifest_path = manifest_path
        self.printer = Printer(holds_json=holds_json)
        self.command: str | None = None
        """The command being run, as users type it ("releases show"), once its options are read."""
        self._config: Config | None = None
        self._user_config: Config | None = None
        self.for_node = False
        """The run acts on its node (a scheduler's health check): it reads no project file, so a
        broken ./pyproject.toml is not its error (set by the command before any setting is read)."""

    def config(self) -> Config:
        if self._config is None:
            from neuronctl.config import Config, load_config

            try:
                self._config = load_config(self.config_path)
            except InputError as error:
                if not self.for_node or self.config_path is not None:  # --config FILE: theirs
                    raise
                note(f"{error} (not read: a node's health check reads no project file)")
                self._config = Config(base_dir=Path.cwd())
        return self._config

    def user_config(self) -> Config:
        """The user's own config file (~/.config/neuronctl/config.toml), read once."""
        if self._user_config is None:
            from neuronctl.config import load_user_config

            self._user_config = load_user_config()
        return self._user_config

    def resolver(self, *, for_node: bool = False) -> Resolver:
        """The rule over this invocation's config files (each read once) and environment;
        `for_node`: the run acts on its node (no project file is read)."""
        from neuronctl.settings import Resolver

        return Resolver.of(self.config(), note, user=self.user_config(), for_node=for_node)

    def manifest(self, override: Path | None = None) -> Manifest:
        from neuronctl.release.manifest import load_manifest

        # --manifest > NEURONCTL_MANIFEST > the user's config `manifest` (a trust root: never
        # the project's) > the stored, else bundled, data
        path, where = override or self.manifest_path, "--manifest"
        if path is None:
            found = self.resolver().resolve("manifest")
            path, where = found.value, found.source.named
        try:
            return load_manifest(path)
        except InputError as exc:  # "PATH: no such file" says which file, not who named it
            if path is None or not exc.message.startswith(f"{path}:"):
                raise
            raise InputError(f"{where} {exc.message}", hint=exc.hint) from None

    def console(self, *, stderr: bool = False) -> Console:
        return self.printer.console(stderr=stderr)


_NOTED = "neuronctl.noted"
"""ctx.meta's set of the notes said already: each says itself once an invocation."""


def note(line: str) -> None:
    """A one-line note on stderr (an old spelling accepted, an old config key read, a project
    file's trust root not used), once per invocation."""
    ctx = click.get_current_context(silent=True)
    said: set[str] = ctx.find_root().meta.setdefault(_NOTED, set()) if ctx else set()
    if line in said:
        return
    said.add(line)
    click.echo(f"neuronctl: note: {line}", err=True)


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
