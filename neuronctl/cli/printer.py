"""The one Printer of an invocation: it owns stdout and stderr, -q, colour, JSON mode and the
console's width, and every result goes out through it (`emit`, by the render table in
cli/render.py). Commands decide nothing of this: they run the operation and hand its outcome
to `printer.emit`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

import click
from msgspec import Struct

from neuronctl.cli.output import HeldJson, command_name, dump_json, envelope
from neuronctl.cli.terminal import PIPE_WIDTH, TerminalStream, is_tty, safe_console, terminal_text
from neuronctl.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console


def colour_wanted(stream: Any, *, no_color: bool, environ: Mapping[str, str] | None = None) -> bool:
    """The one rule for colour on `stream`: never with --no-color or NO_COLOR (no-color.org),
    always with FORCE_COLOR, never on TERM=dumb, else only on a terminal."""
    env = os.environ if environ is None else environ
    if no_color or env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    if env.get("TERM") == "dumb":
        return False
    return is_tty(stream)


class Printer(Struct):
    """How this invocation writes: -v, -q, --no-color and JSON mode (--json or --format json,
    noticed by cli/main.py), and the JSON document held for the error boundary."""

    verbose: int = 0
    quiet: bool = False
    no_color: bool = False
    json_wanted: bool = False
    """--json (or --format json) was given to the command being run."""
    holds_json: bool = False
    """`json` hands the document to the boundary (set by main.run) instead of printing it."""
    held: HeldJson | None = None

    @property
    def format(self) -> str:
        """The output format when a command has no --format of its own."""
        return self.format_of(None)

    def format_of(self, fmt: str | None) -> str:
        """The output format of a command with a --format of its own: --json is --format json
        (given beside another --format, a usage error)."""
        if self.json_wanted and fmt not in (None, "json"):
            raise InputError(f"--json conflicts with --format {fmt}")
        return "json" if self.json_wanted else (fmt or "text")

    @property
    def chatty(self) -> bool:
        """Whether progress, notes and the report's extra lines are wanted (text, no -q)."""
        return not self.quiet and not self.json_wanted

    def colour(self, *, err: bool = False) -> bool:
        return colour_wanted(sys.stderr if err else sys.stdout, no_color=self.no_color)

    def console(self, *, stderr: bool = False) -> Console:
        stream = sys.stderr if stderr else sys.stdout
        # Piped output is read in logs and CI and pasted from: it is not wrapped at all (rich's
        # 80-column fallback folded tables), whatever COLUMNS says (CI runners set it).
        width = None if stream.isatty() else PIPE_WIDTH
        # No emoji codes: data such as the PCI address 0000:cd:00.0 would print as an emoji.
        # Rich writes its own cursor and colour codes (progress bars), so it gets the stream
        # without the CLI's filter; what it renders from data is made safe segment by segment.
        raw = cast("IO[str]", stream.unfiltered if isinstance(stream, TerminalStream) else stream)
        return safe_console()(file=raw, no_color=not self.colour(err=stderr), highlight=False,
                              emoji=False, width=width)

    def paint(self, text: str, colour: str, *, err: bool = False) -> str:
        """`text` in bold `colour` where this stream gets colour (colour_wanted)."""
        return click.style(text, fg=colour, bold=True) if self.colour(err=err) else text

    def echo(self, text: str = "", *, err: bool = False, nl: bool = True) -> None:
        """Text the renderer made (already safe), as it is (colour codes only on a terminal:
        click drops them elsewhere, and the guarded stream passes no other)."""
        click.echo(text, err=err, nl=nl)

    def data(self, text: str) -> None:
        """A document that is the command's output itself (a lock with -o -), to stdout as it is:
        no newline added, no colour codes dropped (the guarded stream still passes no other)."""
        sys.stdout.write(text)

    def say(self, text: str, *, err: bool = False) -> None:
        """One line of data (paths, names, messages from elsewhere) made safe for a terminal."""
        click.echo(terminal_text(text, None), err=err)

    def json(self, payload: Mapping[str, Any], *, failure: str | None = None,
             hint: str | None = None) -> None:
        """The command's one JSON document (cli/output.envelope). `failure` (and `hint`) say
        why, should the command's exit code say it failed (e.g. 'doctor: 2 checks failed')."""
        command = command_name()
        text = dump_json(envelope(payload, command))  # raises here, in the command, if not JSON
        if not self.holds_json:
            click.echo(text, nl=False)
            return
        if self.held is not None:  # a second document: the first is not lost, nor merged into it
            click.echo(dump_json(envelope(self.held.payload, self.held.command)), nl=False)
        self.held = HeldJson(payload, command, failure, hint)

    def emit(self, outcome: object, fmt: str | None = None) -> None:
        """Render `outcome` in `fmt` (default: json or text, as asked) by the render table."""
        from neuronctl.cli.render import render

        render(outcome, fmt or self.format, self)

    def write_file(self, outcome: object, fmt: str, path: Path) -> None:
        """`outcome` in `fmt` to the file `path` (-o FILE), by the render table's file formats;
        what stdout gets beside it is the command's `emit`."""
        from neuronctl.cli.render import write_file

        write_file(outcome, fmt, path)

    def deliver(self, outcome: object, fmt: str, path: Path | None) -> None:
        """The report in `fmt`: to stdout, or with -o FILE to the file, stdout then getting the
        text report and owing no JSON document, not even on failure (doctor, fleet doctor)."""
        if path is None:
            self.emit(outcome, fmt)
            return
        self.write_file(outcome, fmt, path)
        self.json_wanted = False
        self.emit(outcome, "text")


def current() -> Printer:
    """The printer of the invocation running now (a fresh one outside the CLI)."""
    ctx = click.get_current_context(silent=True)
    owner = ctx.find_root().obj if ctx is not None else None
    printer = getattr(owner, "printer", None)
    return printer if isinstance(printer, Printer) else Printer()


def emit_json(payload: Mapping[str, Any], *, failure: str | None = None,
              hint: str | None = None) -> None:
    """The running command's JSON document, through its printer."""
    current().json(payload, failure=failure, hint=hint)
