"""What `neuronctl install` did (or would do), as one value, and its two renderings: text for
people, versioned JSON for machines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from neuronctl.backend.engine import Choice
from neuronctl.backend.external_tool import shown
from neuronctl.backend.plan import Plan
from neuronctl.errors import FaultError, Interrupted
from neuronctl.ops.install.source import InstallSource
from neuronctl.ops.install.target import InstallTarget
from neuronctl.routing import redact_url

if TYPE_CHECKING:
    from neuronctl.ops.install.apply import ApplyFailure

SHOWN_STRAYS = 8


@dataclass(frozen=True)
class InstallOutcome:
    target: InstallTarget
    source: InstallSource
    choice: Choice
    plan: Plan
    commands: tuple[tuple[str, ...], ...]
    dry_run: bool
    applied: bool
    doctor: Any = None
    """The DoctorReport run on the target afterwards, if any."""

    @property
    def exit_code(self) -> int:
        return int(self.doctor.exit_code) if self.doctor is not None else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "install",
            "target": {"python": self.target.final_python,
                       "venv": str(self.target.venv) if self.target.venv else None,
                       "new_venv": self.target.new_venv,
                       "seed_pip": str(self.target.seed_pip) if self.target.seed_pip else None},
            "source": {"describe": self.source.describe, "release": self.source.release,
                       "lock": str(self.source.lock) if self.source.lock else None},
            "engine": {"name": self.choice.engine.name, "reason": self.choice.reason},
            "plan": [c.to_json() for c in self.plan.changes],
            "commands": [list(c) for c in self.commands],
            "dry_run": self.dry_run,
            "applied": self.applied,
            "doctor": self.doctor.summary() if self.doctor is not None else None,
            "exit_code": self.exit_code,
        }


def wants_color(app_color: bool) -> bool:
    """Colour only for a person at a terminal: not with --no-color or NO_COLOR (app_color False),
    not into a pipe or a file."""
    import sys

    return app_color and sys.stdout.isatty()


def plan_lines(plan: Plan, *, verbose: int, color: bool) -> list[str]:
    """One aligned line per change (kept ones only with -v); removals in red when `color`."""
    rows = []
    for c in plan.changes:
        if c.action == "keep" and not verbose:
            continue
        versions = c.new if c.old is None else (c.old if c.new is None else f"{c.old} -> {c.new}")
        where = redact_url(c.wanted.url) if c.wanted else c.why
        rows.append((c.action, c.name, versions or "", where))
    name_w = max([len(r[1]) for r in rows] + [7])
    ver_w = max([len(r[2]) for r in rows] + [7])
    lines = []
    for action, name, versions, where in rows:
        line = f"  {action:<9} {name:<{name_w}} {versions:<{ver_w}}  {where}"
        lines.append(click.style(line, fg="red") if color and action == "remove" else line)
    return lines


def print_plan(plan: Plan, source: InstallSource, target: InstallTarget, choice: Choice,
               *, verbose: int, color: bool = False) -> None:
    click.echo(f"target: {target.describe()}")
    click.echo(f"source: {source.describe}")
    click.echo(f"engine: {choice.engine.name} ({choice.reason})")
    for line in plan_lines(plan, verbose=verbose, color=color):
        click.echo(line, color=color)
    kept = sum(1 for c in plan.changes if c.action == "keep")
    click.echo(f"plan: {len(plan.applies)} to install, {len(plan.removals)} to remove, {kept} unchanged")


def print_commands(commands: tuple[tuple[str, ...], ...]) -> None:
    click.echo("dry run: nothing changed. The engine would run:")
    for argv in commands:
        click.echo(f"  {shown(argv)}")


def failure_error(failure: ApplyFailure, target: InstallTarget, before: Any, routing: Any) -> FaultError:
    """The error for an apply that did not finish, saying what it changed in the target: package
    versions (inspected again) and files no package change accounts for (compared with the
    snapshot taken before the engine ran), with the commands that undo both. It says "nothing
    changed" only when both were checked."""
    from neuronctl.backend.plan import changed_between, restore_commands
    from neuronctl.backend.snapshot import file_changes
    from neuronctl.probes.pyenv import inspect_python

    error = type(failure.error)  # an interrupt keeps its own exit code
    if isinstance(failure.error, Interrupted):
        stopped, why = f"{failure.stage} was {failure.error.message}", ""
    else:
        stopped, why = f"{failure.stage} failed", f": {failure.error.message}"
    if failure.venv_removed is not None:
        undone = "emptied" if target.keep_dir else "removed"
        return error(f"{stopped}{why}; {undone} the new venv {failure.venv_removed}")
    old = {d.name: d.version for d in before.distributions.values()}
    try:
        new = {d.name: d.version for d in inspect_python(target.final_python).distributions.values()}
    except FaultError as exc:
        return error(f"{stopped}{why}; what it changed is unknown (the environment cannot be "
                     f"inspected again: {exc.message})")
    changed = changed_between(old, new)
    files = failure.files_before
    strays = file_changes(files) if files is not None else []
    if not changed and not strays:
        if files is None:
            return error(f"{stopped}{why}; its files were not compared, so what changed is unknown")
        return error(f"{stopped}, nothing changed{why} (checked {files.count:,} files and directories "
                     f"in {', '.join(files.roots)})")
    what = [", ".join(f"{name} {was or '-'} -> {now or 'removed'}" for name, was, now in changed)]
    what = [w for w in what if w] + [s.describe() for s in strays[:SHOWN_STRAYS]]
    if len(strays) > SHOWN_STRAYS:
        what.append(f"and changes in {len(strays) - SHOWN_STRAYS} more places")
    cmds: list[list[str]] = []
    removable = [path for s in strays for path in s.removable]
    if removable:  # only paths that did not exist before, inside site-packages, owned by nothing
        cmds.append(["rm", "-rf", "--", *removable])
    cmds += restore_commands(target.final_python, old, new, routing.url_for)
    hint = "restore with: " + " && ".join(shown(c) for c in cmds) if cmds else (
        "reinstall the packages those files belong to")
    return error(f"{stopped} after changing {'; '.join(what)}{why}", hint=hint)
