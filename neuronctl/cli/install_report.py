"""`neuronctl install` in text for people: the plan (removals in red on a terminal) and a dry
run's engine commands. The outcome itself and its JSON are neuronctl.ops.install.outcome's."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from neuronctl.backend.engine import Choice
from neuronctl.backend.plan import Plan
from neuronctl.cli.app import terminal_text
from neuronctl.ops.install.source_types import InstallSource
from neuronctl.ops.install.target import InstallTarget
from neuronctl.proc import shown  # what external_tool.shown is; not the engine runner
from neuronctl.routing import redact_url

if TYPE_CHECKING:
    from neuronctl.ops.doctor.report import DoctorReport


def plan_lines(plan: Plan, *, verbose: int, color: bool) -> list[str]:
    """One aligned line per change (kept ones only with -v); removals in red when `color`."""
    rows = []
    for c in plan.changes:
        if c.action == "keep" and not verbose:
            continue
        versions = c.new if c.old is None else (c.old if c.new is None else f"{c.old} -> {c.new}")
        where = redact_url(c.wanted.url) if c.wanted else c.why
        # A lock's names, versions and URLs are data: one safe line each, so no cursor move or
        # screen clear in them can rewrite the plan being reviewed.
        rows.append((c.action, terminal_text(c.name, None), terminal_text(versions or "", None),
                     terminal_text(where, None)))
    name_w = max([len(r[1]) for r in rows] + [7])
    ver_w = max([len(r[2]) for r in rows] + [7])
    lines = []
    for action, name, versions, where in rows:
        line = f"  {action:<9} {name:<{name_w}} {versions:<{ver_w}}  {where}"
        lines.append(click.style(line, fg="red") if color and action == "remove" else line)
    return lines


def print_plan(plan: Plan, source: InstallSource, target: InstallTarget, choice: Choice,
               *, verbose: int, color: bool = False) -> None:
    click.echo(f"target: {terminal_text(target.describe(), None)}")
    click.echo(f"source: {terminal_text(source.describe, None)}")
    click.echo(f"engine: {choice.engine.name} ({terminal_text(choice.reason, None)})")
    for line in plan_lines(plan, verbose=verbose, color=color):
        click.echo(line, color=color)
    kept = sum(1 for c in plan.changes if c.action == "keep")
    click.echo(f"plan: {len(plan.applies)} to install, {len(plan.removals)} to remove, {kept} unchanged")


def print_commands(commands: tuple[tuple[str, ...], ...], requirements: tuple[str, ...] = ()) -> None:
    click.echo("dry run: nothing changed. The engine would run:")
    for argv in commands:
        click.echo(f"  {terminal_text(shown(argv), None)}")
    if requirements:
        click.echo("the files it installs (written privately for it; it fetches each from its URL "
                   "and checks its sha256):")
        for line in requirements:
            click.echo(f"  {terminal_text(line, None)}")


STATUS_COLOURS = {"pass": "green", "warn": "yellow", "fail": "red", "skip": "blue"}


def print_doctor(report: DoctorReport, python: str, *, color: bool, quiet: bool) -> None:
    """The doctor after an install, in brief: the passed and skipped checks by id, each warning
    and failure with its message and fix, then the verdict. The full table is `neuronctl doctor`'s
    (and install -v's); an install's output stays a screen, and needs no table renderer."""
    def style(text: str, status: str) -> str:
        return click.style(text, fg=STATUS_COLOURS[status], bold=True) if color else text

    if not quiet:
        python = terminal_text(python, None)
        click.echo(f"doctor on {python} (neuronctl doctor --python {python} for every check's result):")
        for status in ("pass", "skip"):
            ids = [c.id for c in report.checks if c.status == status]
            if ids:
                click.echo(f"  {style(status.upper(), status)}  {', '.join(ids)}")
        for c in report.checks:
            if c.status in ("warn", "fail"):
                click.echo(f"  {style(c.status.upper(), c.status)}  {c.id}: {terminal_text(c.message, None)}")
                if c.fix:
                    click.echo(f"        fix: {terminal_text(c.fix, None)}")
    click.echo(style(report.verdict_line(), report.verdict))
