"""Renderers of the commands that write a host's or a project's configuration: `neuronctl setup`
(the plan as text, sh or JSON, its application with --yes, the Dockerfile) and `neuronctl init`
(registered in cli/render.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct

if TYPE_CHECKING:
    from neuronctl.cli.printer import Printer
    from neuronctl.ops.init import InitOutcome
    from neuronctl.ops.setup.apply import ApplyOutcome
    from neuronctl.ops.setup.model import SetupPlan


class PlanView(Struct, frozen=True):
    """`neuronctl setup`: the plan, not applied."""

    plan: SetupPlan


class ApplyView(Struct, frozen=True):
    """`neuronctl setup --yes`: the plan and what applying it did."""

    plan: SetupPlan
    outcome: ApplyOutcome


class DockerfileView(Struct, frozen=True):
    """`neuronctl setup --dockerfile`: the text, and the file it went to (or None: stdout)."""

    release: str
    text: str
    written: Path | None


def _lines(text: str, printer: Printer, *, err: bool = False) -> None:
    from rich.text import Text

    console = printer.console(stderr=err)
    for line in text.splitlines():
        console.print(Text(line), soft_wrap=True)


def plan_json(view: PlanView, printer: Printer) -> None:
    printer.json({"setup": view.plan.to_json()})


def print_plan(view: PlanView, printer: Printer) -> None:
    from neuronctl.ops.setup.script import render_text

    _lines(render_text(view.plan), printer)


def print_sh(view: PlanView, printer: Printer) -> None:
    from neuronctl.ops.setup.script import render_sh

    printer.echo(render_sh(view.plan), nl=False)


def plan_file(view: PlanView) -> str:
    from neuronctl.ops.setup.script import render_text

    return render_text(view.plan)


def sh_file(view: PlanView) -> str:
    from neuronctl.ops.setup.script import render_sh

    return render_sh(view.plan)


def plan_json_file(view: PlanView) -> str:
    from neuronctl.cli.output import to_json_text

    return to_json_text({"setup": view.plan.to_json()})


def apply_json(view: ApplyView, printer: Printer) -> None:
    outcome = view.outcome
    printer.json({"setup": view.plan.to_json(), "applied": outcome.to_json()},
                 failure=f"setup: step {outcome.failed} failed" if outcome.failed else None)


def print_apply(view: ApplyView, printer: Printer) -> None:
    """Nothing when every step went (each said itself as it ran); where it stopped, else."""
    outcome = view.outcome
    if not outcome.failed:
        return
    err = printer.console(stderr=True)
    err.print(f"setup stopped at {outcome.failed}", markup=False)
    _lines(outcome.output, printer)
    err.print(f"done: {', '.join(outcome.done) or 'nothing'}; already done: "
              f"{', '.join(outcome.skipped) or 'nothing'}; not done: "
              f"{', '.join(outcome.not_done) or 'nothing'}", markup=False)
    err.print(outcome.resume or "", markup=False)


def dockerfile_json(view: DockerfileView, printer: Printer) -> None:
    printer.json({"dockerfile": {"release": view.release, "text": view.text,
                                 "written": str(view.written) if view.written else None}})


def print_dockerfile(view: DockerfileView, printer: Printer) -> None:
    if view.written is None:
        printer.echo(view.text, nl=False)


def dockerfile_file(view: DockerfileView) -> str:
    return view.text


def init_json(outcome: InitOutcome, printer: Printer) -> None:
    printer.json(outcome.to_json())


def print_init(outcome: InitOutcome, printer: Printer) -> None:
    """`neuronctl init`: what changed in [tool.neuronctl] (nothing with -q, unless up to date)."""
    if not outcome.written:
        printer.echo(f"{outcome.path}: [tool.neuronctl] already up to date")
    elif not printer.quiet:
        through = f" (through the link {outcome.link})" if outcome.link else ""
        printer.echo(f"{'created' if outcome.created else 'updated'} {outcome.path}{through}: "
                     f"[tool.neuronctl] " + ", ".join(outcome.changed))
