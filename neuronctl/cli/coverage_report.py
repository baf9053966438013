"""Renderers of `neuronctl coverage`: one model, the --all sweep, and `coverage table` (text,
JSON, markdown; registered in cli/render.py). Operator names and modules come from the target:
printed as Text, never as markup."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from neuronctl.cli.common import echo_target

if TYPE_CHECKING:
    from neuronctl.cli.printer import Printer
    from neuronctl.ops.coverage import CoverageOutcome, ModelCoverage
    from neuronctl.ops.coverage_sweep import SweepOutcome, TableOutcome
    from neuronctl.ops.target_env import TargetPython

WORDS = {"native": "native", "cpu_fallback": "cpu fallback", "unsupported": "unsupported",
         "unknown": "unknown"}


class CoverageView(Struct, frozen=True):
    """`neuronctl coverage`'s result for one model, in the target it chose."""

    outcome: CoverageOutcome
    target: TargetPython

    @property
    def payload(self) -> dict[str, Any]:
        return {**self.outcome.to_json(), "target": self.target.to_json()}


class SweepView(Struct, frozen=True):
    """`neuronctl coverage --all`'s result, in the target it chose."""

    outcome: SweepOutcome
    target: TargetPython


class TableView(Struct, frozen=True):
    """`neuronctl coverage table`'s result and the file it wrote."""

    outcome: TableOutcome
    target: TargetPython
    path: Path


def _say(printer: Printer, text: str, style: str | None = None) -> None:
    from rich.text import Text

    printer.console().print(Text(text, style=style or ""), soft_wrap=True)


def _confirm_lines(coverage: ModelCoverage) -> list[str]:
    confirm = coverage.confirm or {}
    if not confirm:
        return []
    lines = [f"one step on {confirm.get('device')}: {confirm.get('device_ms')} ms; on CPU: "
             f"{confirm.get('cpu_ms')} ms"]
    for what, result in (confirm.get("compare") or {}).items():
        if not isinstance(result, dict):
            continue
        verdict = "match" if result.get("ok") else "DIFFER"
        if result.get("problem"):
            lines.append(f"vs CPU {what}: {verdict}: {result.get('problem')}")
        else:
            lines.append(f"vs CPU {what}: {verdict}, max abs error {result.get('max_abs'):.3g} at "
                         f"{result.get('worst')} ({result.get('dtype')}: rtol {result.get('rtol')}, "
                         f"atol {result.get('atol')} of the largest value)")
    return lines


def print_coverage(view: CoverageView, printer: Printer) -> None:
    """The verdict first, then the operators that are not native, with where they ran."""
    outcome = view.outcome
    echo_target(view.target, printer)
    coverage = outcome.coverage
    if coverage is None:
        _say(printer, f"fail: coverage {outcome.outcome}: {outcome.detail}", "red")
        return
    _say(printer, coverage.verdict(), "bold")
    if not printer.quiet:
        for op in coverage.operators:
            if op.klass != "native":
                _say(printer, f"  {WORDS[op.klass]:<13} {op.op}  ({op.calls} call(s), "
                              f"{'/'.join(op.dtypes) or '-'}, first in {op.module})")
        _say(printer, f"classes from: {coverage.source.detail}"
                      + (f" (torch-neuronx {coverage.source.torch_neuronx})"
                         if coverage.source.torch_neuronx else ""))
        for line in _confirm_lines(coverage):
            _say(printer, line)
    failure = outcome.failure
    if failure:
        _say(printer, f"fail: {failure}", "red")
    elif coverage.summary.cpu_fallback:
        _say(printer, f"warn: {coverage.summary.cpu_fallback} operator(s) run on the CPU on "
                      "Neuron (slower; --strict fails on them)", "yellow")


def coverage_json(view: CoverageView, printer: Printer) -> None:
    printer.json(view.payload, failure=view.outcome.failure)


def coverage_markdown(view: CoverageView, printer: Printer) -> None:
    """A pull-request comment: the verdict, then a table of the operators not native."""
    coverage = view.outcome.coverage
    if coverage is None:
        printer.echo(f"**coverage {view.outcome.outcome}**: {_md(view.outcome.detail)}")
        return
    lines = [f"**{_md(coverage.verdict())}**", "",
             f"Classes from: {_md(coverage.source.detail)}", ""]
    rows = [op for op in coverage.operators if op.klass != "native"]
    if rows:
        lines += ["| operator | class | calls | dtypes | first module |", "|---|---|---|---|---|"]
        lines += [f"| `{op.op}` | {WORDS[op.klass]} | {op.calls} | {_md('/'.join(op.dtypes))} | "
                  f"`{_md(op.module)}` |" for op in rows]
    printer.echo("\n".join(lines))


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").replace("`", "'")


def print_sweep(view: SweepView, printer: Printer) -> None:
    outcome = view.outcome
    echo_target(view.target, printer)
    counts = outcome.counts()
    _say(printer, f"coverage --all: {counts['total']} architecture(s) of transformers "
                  f"{outcome.transformers}: {counts['ran']} build and run on CPU "
                  f"({counts['native']} fully native, {counts['fallback']} with CPU fallbacks, "
                  f"{counts['unsupported']} unsupported, {counts['unknown']} unknown); "
                  f"{counts['unbuildable']} cannot be built, {counts['failed']} failed", "bold")
    if not printer.quiet:
        for arch in outcome.archs:
            _say(printer, f"  {arch.verdict:<12} {arch.name}: {arch.detail}")
    if outcome.failure:
        _say(printer, f"fail: {outcome.failure}", "red")


def sweep_json(view: SweepView, printer: Printer) -> None:
    printer.json({**view.outcome.to_json(), "target": view.target.to_json()},
                 failure=view.outcome.failure)


def sweep_markdown(view: SweepView, printer: Printer) -> None:
    counts = view.outcome.counts()
    lines = [f"**coverage --all**: {counts['ran']} of {counts['total']} architectures build and "
             f"run; {counts['native']} fully native, {counts['fallback']} with CPU fallbacks, "
             f"{counts['unsupported']} unsupported", "",
             "| architecture | verdict | detail |", "|---|---|---|"]
    lines += [f"| {_md(a.name)} | {a.verdict} | {_md(a.detail)} |" for a in view.outcome.archs]
    printer.echo("\n".join(lines))


def print_table(view: TableView, printer: Printer) -> None:
    echo_target(view.target, printer)
    if view.outcome.document is None:
        _say(printer, f"fail: coverage table {view.outcome.outcome}: {view.outcome.detail}", "red")
        return
    _say(printer, f"wrote {view.path}: {view.outcome.detail}")


def table_json(view: TableView, printer: Printer) -> None:
    failure = None if view.outcome.document is not None else view.outcome.detail
    printer.json({**view.outcome.to_json(), "file": str(view.path),
                  "target": view.target.to_json()}, failure=failure)


def table_file(view: TableView) -> str:
    """The table itself (not an envelope: `--table` reads it, as it reads a hand-made one)."""
    return json.dumps(view.outcome.document, indent=1) + "\n"
