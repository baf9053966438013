"""Renderers of `neuronctl lock`: the lock written, and --check (text and JSON; registered in
cli/render.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import Struct

from neuronctl.ops.lock.outcome import LockOutcome
from neuronctl.redact import redact

if TYPE_CHECKING:
    from neuronctl.cli.printer import Printer


class CheckView(Struct, frozen=True):
    """`neuronctl lock --check`: the lock against the request, and the command that refreshes it."""

    outcome: LockOutcome
    refresh: str


def _check_lines(view: CheckView, printer: Printer) -> None:
    outcome, refresh = view.outcome, view.refresh
    if outcome.missing:
        printer.echo(f"{outcome.path}: no lock file; run `{refresh}`", err=True)
    for problem in outcome.problems:
        printer.echo(redact(f"{outcome.path}: out of date: {problem}"), err=True)
    if outcome.problems:
        printer.echo(f"hint: refresh it with: {redact(refresh)}", err=True)


def check_json(view: CheckView, printer: Printer) -> None:
    _check_lines(view, printer)
    outcome = view.outcome
    failure = None if outcome.up_to_date else f"{outcome.path}: the lock no longer matches the request"
    printer.json(outcome.to_json(), failure=failure, hint=f"refresh it with: {redact(view.refresh)}")


def print_check(view: CheckView, printer: Printer) -> None:
    _check_lines(view, printer)
    outcome = view.outcome
    if outcome.up_to_date:
        printer.echo(f"{outcome.path}: up to date ({outcome.stack_label}, "
                     f"{len(outcome.targets)} target(s))")


def lock_json(outcome: LockOutcome, printer: Printer) -> None:
    if outcome.text is not None:  # with -o -, stdout holds the lock itself
        printer.data(outcome.text)
        return
    printer.json(outcome.to_json())


def print_lock(outcome: LockOutcome, printer: Printer) -> None:
    if outcome.text is not None:
        printer.data(outcome.text)
    if printer.quiet:
        return
    verbose = printer.verbose
    stream_err = outcome.text is not None
    labels = ", ".join(t.label for t in outcome.targets)
    printer.echo(f"locked {len(outcome.packages)} packages for {labels} ({outcome.stack_label}) "
               f"-> {outcome.path}", err=stream_err)
    if verbose or not stream_err:
        for p in outcome.packages:
            printer.echo(f"  {p.name} {p.version}  [{p.index_name}]", err=stream_err)
    net, methods = outcome.network, outcome.metadata
    printer.echo(f"network: {net.get('requests')} requests, {net.get('bytes', 0):,} bytes, "
               f"{net.get('cache_hits')} from cache; "
               f"metadata: {', '.join(f'{k} {v}' for k, v in methods.items()) or 'none'}", err=stream_err)
    for note in outcome.full_downloads:
        printer.echo(f"note: downloaded whole {note}", err=True)
