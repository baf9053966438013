"""neuronctl's JSON documents (the envelope, see docs/json.md), and the fitted tables text reports
print. Nothing here writes to a stream: cli/printer.py's Printer does.

A command's one JSON document is `{"schema": 1, "command": "releases show", "status": "ok",
...its own keys..., "error": {...}}`: `schema`, `command` and `status` first, then the command's
keys, `error` (and status "failed") only when the command failed. `envelope` builds it, and
refuses a command key that would shadow one of the envelope's own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from neuronctl.atomic import write_text_atomic
from neuronctl.errors import EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_USAGE, NeuronctlError
from neuronctl.redact import redact

JSON_SCHEMA = 1


@dataclass(frozen=True)
class JsonError:
    """The `error` object of a failed command's JSON document (text already redacted)."""

    kind: str
    """input (exit 2), fault, failed or internal (exit 1), interrupted (130), terminated (143)."""
    message: str
    hint: str | None = None

    @staticmethod
    def of(kind: str, message: str, hint: str | None = None) -> JsonError:
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
    try:
        return json.dumps(document, indent=2, sort_keys=False, allow_nan=False) + "\n"
    except ValueError as exc:  # NaN/Infinity, or a circular reference: our bug, not input
        raise NeuronctlError(f"internal error: the JSON document cannot be written: {exc}") from None


def to_json_text(payload: Mapping[str, Any], error: JsonError | None = None) -> str:
    """The document as text, for a file (`-o`); `command` from click's context."""
    return dump_json(envelope(payload, command_name(), error))


@dataclass(frozen=True)
class HeldJson:
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
                 droppable: tuple[str, ...] = (), wrap: tuple[str, ...] = (),
                 **table_options: Any) -> Any:
    """A rich Table whose values are never split: every column is no_wrap except those in
    `wrap` (prose, such as a check's message, wrapped between words), and while the table is
    wider than the console the `droppable` columns go, in the order given. Print it with
    print_fitted, which prints what is still too wide whole (the terminal wraps the long line;
    no value is cut or folded into two rows)."""
    from rich.table import Table

    shown = list(range(len(headers)))

    def build() -> Table:
        table = Table(**table_options)
        for i in shown:
            prose = headers[i] in wrap
            table.add_column(headers[i], no_wrap=not prose, overflow="fold" if prose else "ignore")
        for row in rows:
            table.add_row(*(row[i] for i in shown))
        table.neuronctl_width = table_width(  # type: ignore[attr-defined]
            table, [headers[i] for i in shown], [[row[i] for i in shown] for row in rows], wrap)
        return table

    table = build()
    for name in droppable:
        if table.neuronctl_width <= console.width:  # type: ignore[attr-defined]
            break
        if name in headers and headers.index(name) in shown:
            shown.remove(headers.index(name))
            table = build()
    return table


def print_fitted(console: Any, table: Any) -> None:
    """Print a fitted_table; wider than the console even so, at its own width, so that no value
    is cut (rich would truncate a no_wrap cell to the console's width)."""
    need = getattr(table, "neuronctl_width", 0)
    if need <= console.width:
        console.print(table)
        return
    width = console.width
    console.width = need  # console.print(width=) only narrows
    try:
        console.print(table)
    finally:
        console.width = width


OUTCOME_WORDS = {"failed": "", "bad-input": "bad input", "timeout": "timed out",
                 "crashed": "the script crashed", "no-torch": "",
                 "error": "error"}


def outcome_words(outcome: str, detail: str) -> str:
    """A probe's or smoke run's outcome label (no-torch, bad-input) as words, before its detail:
    the labels are the JSON's, the words the screen's."""
    word = OUTCOME_WORDS.get(outcome, outcome)
    return f"{word}: {detail}" if word and detail else word or detail
