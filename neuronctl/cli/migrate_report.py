"""`neuronctl migrate`'s renderers: text by file, JSON (the envelope), GitHub annotations,
SARIF 2.1.0 for code scanning. Every path and found text came from the scanned files: each is
made one safe line (terminal_text) before it is printed."""

from __future__ import annotations

import json
from itertools import groupby
from typing import TYPE_CHECKING, Any

from neuronctl._version import __version__
from neuronctl.cli.terminal import terminal_text
from neuronctl.ops.migrate.finding import Finding
from neuronctl.ops.migrate.rules import RULES, rule

if TYPE_CHECKING:
    from neuronctl.cli.printer import Printer
    from neuronctl.ops.migrate import MigrateOutcome

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _line(text: str) -> str:
    return terminal_text(text, None)


def summary_line(outcome: MigrateOutcome) -> str:
    n, files, k = len(outcome.findings), outcome.files, outcome.fixable
    line = (f"{n} finding{'s' if n != 1 else ''} in {files} file{'s' if files != 1 else ''}: "
            f"{k} fixable ({outcome.scanned} files scanned, {outcome.parsed} parsed)")
    if outcome.mode == "fix":
        line += f"; --fix rewrote {outcome.rewrites} in {len(outcome.fixed)} files"
    elif outcome.mode == "diff":
        line += f"; --fix would rewrite {outcome.rewrites} in {len(outcome.fixed)} files"
    return line


def _failure(outcome: MigrateOutcome) -> str | None:
    return f"migrate: {summary_line(outcome)}" if outcome.findings else None


def print_text(outcome: MigrateOutcome, printer: Printer) -> None:
    if outcome.diff:
        printer.echo(terminal_text(outcome.diff, None, lines=True), nl=False)
    for path, group in groupby(outcome.findings, key=lambda f: f.path):
        if not printer.quiet:
            printer.echo(printer.paint(_line(path), "cyan"))
        for f in group:
            _print_finding(f, printer)
    if printer.chatty:
        verb = "rewritten" if outcome.mode == "fix" else "would be rewritten"
        for path in outcome.fixed:
            printer.say(f"{verb}: {path}")
        for note in outcome.notes:
            printer.say(f"note: {note.path}: {note.why}")
    printer.say(summary_line(outcome))


def _print_finding(f: Finding, printer: Printer) -> None:
    if printer.quiet:
        return
    r = rule(f.rule)
    where = f"{f.line}:{f.col}" if f.cell is None else f"cell {f.cell} {f.line}:{f.col}"
    tag = "fixable" if f.fix else ("question" if r.question else "manual")
    said = f.message.split(": ", 1)[1] if f.cell is not None else f.message
    printer.echo(f"  {where}  {f.rule}  {_line(said)}  [{tag}]")
    printer.echo(f"      becomes: {_line(f.becomes)}")
    printer.echo(f"      source: {_line(r.source.cite())}")


def payload(outcome: MigrateOutcome) -> dict[str, Any]:
    return {"mode": outcome.mode, "findings": [f.to_json() for f in outcome.findings],
            "summary": outcome.summary(), "notes": [n.to_json() for n in outcome.notes],
            "fixed": list(outcome.fixed), "diff": outcome.diff or None}


def print_json(outcome: MigrateOutcome, printer: Printer) -> None:
    printer.json(payload(outcome), failure=_failure(outcome))


def _escape_data(text: str) -> str:
    # GitHub's workflow-command escaping (actions/toolkit escapeData / escapeProperty)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(outcome: MigrateOutcome) -> str:
    lines = []
    for f in outcome.findings:
        r = rule(f.rule)
        message = (f"{_line(f.message)}\nbecomes: {_line(f.becomes)}\nsource: {_line(r.source.cite())}")
        props = (f"file={_escape_property(_line(f.path))},line={f.line},col={f.col},"
                 f"title={_escape_property(f'neuronctl {f.rule}')}")
        lines.append(f"::warning {props}::{_escape_data(message)}")
    lines.append(f"neuronctl migrate: {summary_line(outcome)}")
    return "\n".join(lines) + "\n"


def print_github(outcome: MigrateOutcome, printer: Printer) -> None:
    printer.echo(render_github(outcome), nl=False)


def sarif(outcome: MigrateOutcome) -> dict[str, Any]:
    """The SARIF 2.1.0 log: one run, every rule in the driver, one result per finding."""
    index = {r.id: i for i, r in enumerate(RULES)}
    rules = [{"id": r.id, "name": r.id, "shortDescription": {"text": r.what},
              "fullDescription": {"text": f"{r.what}: on TorchNeuron, {r.becomes}"},
              "help": {"text": f"{r.becomes}\nsource: {r.source.cite()}"},
              **({"helpUri": r.source.page} if r.source.page.startswith("https://") else {}),
              "properties": {"fixable": r.fixable, "question": r.question,
                             "source": r.source.page, "read": r.source.read}}
             for r in RULES]
    results = []
    for f in outcome.findings:
        location: dict[str, Any] = {"physicalLocation": {
            "artifactLocation": {"uri": _uri(f.path), "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": f.line, "startColumn": f.col}}}
        if f.cell is not None:
            location["logicalLocations"] = [{"name": f"cell {f.cell}", "kind": "module"}]
        results.append({"ruleId": f.rule, "ruleIndex": index[f.rule], "level": "warning",
                        "message": {"text": f"{f.message}; becomes: {f.becomes}"},
                        "locations": [location], "properties": {"fixable": f.fix}})
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "neuronctl", "version": __version__, "rules": rules}},
        "columnKind": "unicodeCodePoints", "results": results}]}


def _uri(path: str) -> str:
    from urllib.parse import quote

    return quote(path, safe="/")


def print_sarif(outcome: MigrateOutcome, printer: Printer) -> None:
    printer.data(json.dumps(sarif(outcome), indent=2) + "\n")
