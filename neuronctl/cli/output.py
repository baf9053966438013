"""neuronctl's JSON documents (the envelope, see docs/json.md), and the fitted tables text reports
print. Nothing here writes to a stream: cli/printer.py's Printer does.

A command's one JSON document is `{"schema": 1, "command": "releases show", "status": "ok",
...its own keys..., "error": {...}}`: `schema`, `command` and `status` first, then the command's
keys, `error` (and status "failed") only when the command failed. `envelope` builds it, and
refuses a command key that would shadow one of the envelope's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
from msgspec import Struct

from neuronctl.atomic import write_text_atomic
from neuronctl.errors import EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_USAGE, NeuronctlError

JSON_SCHEMA = 1


class JsonError(Struct, frozen=True):
    """The `error` object of a failed command's JSON document (text already redacted)."""

    kind: str
    """input (exit 2), fault, failed or internal (exit 1), interrupted (130), terminated (143)."""
    message: str
    hint: str | None = None

    @staticmethod
    def of(kind: str, message: str, hint: str | None = None) -> JsonError:
        from neuronctl.redact import redact  # only a failure is redacted here: not at start-up

        return JsonError(kind, redact(message), redact(hint) if hint else None)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "hint": self.hint}


def error_kind(exc: BaseException) -> str:
    """What sort of failure `exc` is, as the JSON document's `error.kind` names it."""
    if isinstance(exc, NeuronctlError):
        return exc.kind
    if isinstance(exc, click.UsageError):
        return "input"
    return "failed" if isinstance(exc, click.ClickException) else "internal"


def kind_of_exit(code: int) -> str:
    """The `error.kind` of a command that returned a failing exit code without raising."""
    return {EXIT_USAGE: "input", EXIT_INTERRUPTED: "interrupted",
            EXIT_TERMINATED: "terminated"}.get(code, "failed")


def command_name(ctx: click.Context | None = None) -> str | None:
    """The command a context runs, as users type it ("doctor", "releases show"); None for the
    top-level group or outside click."""
    ctx = ctx or click.get_current_context(silent=True)
    names: list[str] = []
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(reversed(names)) or None


ENVELOPE_KEYS = ("schema", "command", "status", "error")
"""The envelope's own keys: no command's payload may use them."""


def envelope(payload: Mapping[str, Any], command: str | None,
             error: JsonError | None = None) -> dict[str, Any]:
    """The one JSON document shape: schema, command (None for the top-level group: omitted),
    status ("ok", or "failed" with `error`), then the payload's keys in their order, then error.
    A payload key that is one of the envelope's is a bug in the command, refused here (a test
    runs every command's JSON through this)."""
    shadowed = [key for key in ENVELOPE_KEYS if key in payload]
    if shadowed:
        raise NeuronctlError(f"internal error: the JSON payload of {command or 'neuronctl'} "
                             f"uses the envelope's key(s) {', '.join(shadowed)}")
    document: dict[str, Any] = {"schema": JSON_SCHEMA}
    if command:
        document["command"] = command
    document["status"] = "failed" if error is not None else "ok"
    document.update(payload)
    if error is not None:
        document["error"] = error.to_json()
    return document


def dump_json(document: dict[str, Any]) -> str:
    """The one place neuronctl's JSON documents become text (stdout and -o files): strict JSON,
    so a NaN or an infinity is an error here, never the `NaN`/`Infinity` no JSON parser takes.
    The operations refuse such numbers where they enter; this is the last line."""
    import json  # only a JSON document loads it: --version, --help and text output never do

    try:
        return json.dumps(document, indent=2, sort_keys=False, allow_nan=False) + "\n"
    except ValueError as exc:  # NaN/Infinity, or a circular reference: our bug, not input
        raise NeuronctlError(f"internal error: the JSON document cannot be written: {exc}") from None


def to_json_text(payload: Mapping[str, Any], error: JsonError | None = None) -> str:
    """The document as text, for a file (`-o`); `command` from click's context."""
    return dump_json(envelope(payload, command_name(), error))


class HeldJson(Struct, frozen=True):
    """A command's JSON payload, held for the error boundary to write once the command ends."""

    payload: Mapping[str, Any]
    command: str | None
    failure: str | None = None
    hint: str | None = None


def finish_json(held: HeldJson | None, wanted: bool, command: str | None, code: int,
                error: JsonError | None) -> str | None:
    """The document the error boundary writes once the command has ended, or None.

    `held`: what the command emitted; `wanted`: whether --json (or --format json) was asked;
    `error`: what the command raised, if it raised. A failed command's document gets `error`:
    that exception, else the failure the command gave emit_json, else one its exit code implies.
    """
    if code == 0:
        return dump_json(envelope(held.payload, held.command)) if held is not None else None
    if held is None and not wanted:
        return None
    if error is None and held is not None and held.failure:
        error = JsonError.of(kind_of_exit(code), held.failure, held.hint)
    if error is None:
        error = JsonError.of(kind_of_exit(code), " ".join(
            ["neuronctl", *([command] if command else []), f"failed (exit {code})"]))
    if held is None:
        return dump_json(envelope({}, command, error))
    return dump_json(envelope(held.payload, held.command, error))


def write_atomic(path: Path, text: str) -> None:
    """Write a text file whole or not at all (temp file beside it, fsync, rename over)."""
    write_text_atomic(path, text)


__all__ = ["HeldJson", "JsonError", "envelope", "error_kind", "finish_json", "to_json_text",
           "write_atomic"]


def _cell_lines(cell: Any) -> list[str]:
    return (cell.plain if hasattr(cell, "plain") else str(cell)).splitlines() or [""]


def table_width(table: Any, headers: list[str], rows: list[list[Any]], wrap: tuple[str, ...]) -> int:
    """The narrowest width `table` takes without splitting a value: each value column as wide
    as its widest line, each prose column (`wrap`) as its longest word, plus padding and rules."""
    from rich.cells import cell_len

    total = 0
    for i, header in enumerate(headers):
        cells = [header, *(row[i] for row in rows)]
        lines = [line for cell in cells for line in _cell_lines(cell)]
        parts = [w for line in lines for w in line.split()] if header in wrap else lines
        total += max((cell_len(p) for p in parts), default=0)
    left, right = int(table.padding[3]), int(table.padding[1])
    rules = (len(headers) - 1 + (2 if table.show_edge else 0)) if table.box else 0
    return int(total + len(headers) * (left + right) + rules)


def fitted_table(console: Any, headers: list[str], rows: list[list[Any]], *,
                 wrap: tuple[str, ...] = (), **table_options: Any) -> Any:
    """A rich Table whose values are never split: every column is no_wrap except those in
    `wrap` (prose, such as a check's message, wrapped between words). Its `neuronctl_width` is
    the narrowest width it takes so (table_width)."""
    from rich.table import Table

    table = Table(**table_options)
    for header in headers:
        prose = header in wrap
        table.add_column(header, no_wrap=not prose, overflow="fold" if prose else "ignore")
    for row in rows:
        table.add_row(*row)
    table.neuronctl_width = table_width(table, headers, rows, wrap)  # type: ignore[attr-defined]
    return table


def fitting_table(console: Any, headers: list[str], rows: list[list[Any]], *,
                  wrap: tuple[str, ...] = (), **table_options: Any) -> Any | None:
    """The fitted_table to draw, or None: a table is drawn only on a terminal wide enough for it
    whole. Off a terminal (a CI log, a pipe, a file; none is built there) and on a narrow one
    every table is the line form instead (row_line): no column is dropped, no box character or
    padding written, no value split, whatever COLUMNS says."""
    if not console.is_terminal:
        return None
    table = fitted_table(console, headers, rows, wrap=wrap, **table_options)
    return table if table.neuronctl_width <= console.width else None


def cell_text(cell: Any) -> str:
    """A cell as one line: its lines joined by ', ' (a release's `beta` / `default`)."""
    return ", ".join(line.strip() for line in _cell_lines(cell) if line.strip())


def row_line(headers: list[str], row: list[Any]) -> str:
    """The line form of a row, as the README shows the doctor's: the first value, then each other
    column as `header value`, '; ' between them; empty and '-' values are left out."""
    first, *rest = (cell_text(c) for c in row)
    named = [f"{h} {v}" for h, v in zip(headers[1:], rest, strict=True) if v not in ("", "-")]
    return f"{first}: {'; '.join(named)}" if named else first


def print_table(console: Any, headers: list[str], rows: list[list[Any]], *,
                title: str | None = None, wrap: tuple[str, ...] = (), **table_options: Any) -> None:
    """The one way a table is printed: a table where it fits on a terminal (fitting_table), else
    the title and one line a row (row_line)."""
    from rich.text import Text

    table = fitting_table(console, headers, rows, wrap=wrap,
                          title=Text(title) if title else None, **table_options)
    if table is not None:
        console.print(table)
        return
    for line in ([title] if title else []) + [row_line(headers, row) for row in rows]:
        print_line(console, line)


def print_line(console: Any, line: str, *, lead: int = 0, lead_style: str = "") -> None:
    """One line of the line form. Off a terminal, as it is, however long (logs are grepped and
    pasted from); on a terminal, wrapped between words to its width, the rest indented, a value
    wider than the terminal kept whole on its own line (never split, never cut). The first
    `lead` characters (a status word) get `lead_style`."""
    import textwrap

    from rich.text import Text

    parts = [line] if not console.is_terminal else [
        part for given in line.split("\n") for part in textwrap.wrap(
            given, console.width, initial_indent="", subsequent_indent="  ",
            break_long_words=False, break_on_hyphens=False, drop_whitespace=True) or [""]]
    for n, part in enumerate(parts):
        text = Text(part)
        if n == 0 and lead:
            text.stylize(lead_style, 0, lead)
        console.print(text, soft_wrap=True)


OUTCOME_WORDS = {"failed": "", "bad-input": "bad input", "timeout": "timed out",
                 "crashed": "the script crashed", "no-torch": "",
                 "error": "error"}


def outcome_words(outcome: str, detail: str) -> str:
    """A probe's or smoke run's outcome label (no-torch, bad-input) as words, before its detail:
    the labels are the JSON's, the words the screen's."""
    word = OUTCOME_WORDS.get(outcome, outcome)
    return f"{word}: {detail}" if word and detail else word or detail
