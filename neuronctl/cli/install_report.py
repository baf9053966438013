"""What `neuronctl install` did (or would do), as one value, and its two renderings: text for
people, versioned JSON for machines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from neuronctl.backend.engine import Choice
from neuronctl.backend.plan import Plan
from neuronctl.backend.runner import shown
from neuronctl.cli.install_source import InstallSource
from neuronctl.cli.install_target import InstallTarget
from neuronctl.routing import redact_url


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


def print_plan(plan: Plan, source: InstallSource, target: InstallTarget, choice: Choice,
               *, verbose: int) -> None:
    click.echo(f"target: {target.describe()}")
    click.echo(f"source: {source.describe}")
    click.echo(f"engine: {choice.engine.name} ({choice.reason})")
    rows = []
    for c in plan.changes:
        if c.action == "keep" and not verbose:
            continue
        versions = c.new if c.old is None else (c.old if c.new is None else f"{c.old} -> {c.new}")
        where = redact_url(c.wanted.url) if c.wanted else c.why
        rows.append((c.action, c.name, versions or "", where))
    name_w = max([len(r[1]) for r in rows] + [7])
    ver_w = max([len(r[2]) for r in rows] + [7])
    for action, name, versions, where in rows:
        click.echo(f"  {action:<9} {name:<{name_w}} {versions:<{ver_w}}  {where}")
    kept = sum(1 for c in plan.changes if c.action == "keep")
    click.echo(f"plan: {len(plan.applies)} to install, {len(plan.removals)} to remove, {kept} unchanged")


def print_commands(commands: tuple[tuple[str, ...], ...]) -> None:
    click.echo("dry run: nothing changed. The engine would run:")
    for argv in commands:
        click.echo(f"  {shown(argv)}")
