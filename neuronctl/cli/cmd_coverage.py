"""`neuronctl coverage`: the operators a model runs, and which of them the Neuron backend runs
natively, sends to the CPU, or lacks; `coverage table` writes the table that classifies them
where no backend is installed."""

from __future__ import annotations

from pathlib import Path

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.common import target_python
from neuronctl.cli.host_settings_types import RunSettings
from neuronctl.cli.options import json_option, python_option
from neuronctl.cli.setting_options import with_settings
from neuronctl.errors import InputError
from neuronctl.ops.coverage import DEFAULT_TIMEOUT, DTYPES, CoverageRequest, run_coverage
from neuronctl.ops.output_path import check_output_file

FORMATS = ("text", "json", "markdown")



@click.group(invoke_without_command=True)
@with_settings("coverage", RunSettings)
@click.option("--arch", metavar="NAME", help="A Hugging Face architecture by its model_type "
                                            "(llama, qwen3, gpt2, ...), random weights.")
@click.option("--model-config", "config_file", type=click.Path(path_type=Path, dir_okay=False),
              help="A model's local config.json, built the same way (nothing downloaded). "
                   "(--config is neuronctl's config file, as on every command.)")
@click.option("--model", metavar="MODULE:FACTORY",
              help="A function returning (model, example_inputs[, tokens_per_step]), the form "
                   "smoke's --model takes (coverage reads no config model: name it here).")
@click.option("--script", type=click.Path(path_type=Path, dir_okay=False),
              help="A Python file that defines make() (same return as FACTORY).")
@click.option("--all", "sweep", is_flag=True,
              help="Every causal-LM architecture the target's transformers knows, one child each.")
@click.option("--layers", type=int, default=2, show_default=True,
              help="Layers of an --arch/--model-config model.")
@click.option("--tiny", is_flag=True, help="Tiny widths too (hidden 64, vocab 512), not the config's.")
@click.option("--train", is_flag=True, help="Loss, backward and an SGD step, not a forward alone.")
@click.option("--dtype", type=click.Choice(DTYPES), default="float32", show_default=True)
@click.option("--device", type=click.Choice(("cpu", "neuron")), default="cpu", show_default=True,
              help="neuron: also run the step on the device and compare it with CPU.")
@click.option("--table", type=click.Path(path_type=Path, dir_okay=False),
              help="Classify from this table (JSON or CSV op,class; `coverage table` writes one).")
@click.option("--strict", is_flag=True, help="Exit 1 when an operator falls back to the CPU too.")
@click.option("--limit", type=int, default=None, help="--all: the first N architectures.")
@click.option("--arch-filter", metavar="REGEX", help="--all: architectures matching REGEX.")
@click.option("--arch-timeout", type=click.FloatRange(1, 3600), default=300.0, show_default=True,
              help="--all: seconds for each architecture.")
@click.option("--memory-mb", type=click.IntRange(256, 1 << 20), default=16384, show_default=True,
              help="--all: address space each architecture's child may add, MiB.")
@python_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help="Output format.")
@json_option
@click.pass_context
def coverage(ctx: click.Context, settings: RunSettings, arch: str | None,
             config_file: Path | None, model: str | None, script: Path | None, sweep: bool,
             layers: int, tiny: bool, train: bool, dtype: str, device: str, table: Path | None,
             strict: bool, limit: int | None, arch_filter: str | None, arch_timeout: float,
             memory_mb: int, python: str | None, fmt: str | None) -> int | None:
    """Which operators a model runs, and which the Neuron backend runs natively, falls back to
    CPU for, or lacks (from the installed backend, a --table, else unknown).

    Exit 0 when nothing is unsupported, 1 when an operator is (or, with --strict, falls back),
    2 for bad input."""
    if ctx.invoked_subcommand is not None:
        return None
    app = get_app()
    fmt = app.printer.format_of(fmt)
    if sweep:
        if arch or config_file or model or script or device != "cpu":
            raise InputError("--all runs every architecture on CPU: give it without --arch, "
                             "--model-config, --model, --script or --device neuron")
        return _sweep(python, layers, tiny, train, dtype, table, strict, limit, arch_filter,
                      arch_timeout, memory_mb, fmt)
    if limit is not None or arch_filter is not None:
        raise InputError("--limit and --arch-filter go with --all")
    timeout = settings.run_timeout or DEFAULT_TIMEOUT
    target = target_python(python)
    request = CoverageRequest(target.python, arch, config_file, model, script, layers, tiny, train,
                              dtype, device, table, strict, timeout)
    from neuronctl.cli.coverage_report import CoverageView
    from neuronctl.cli.progress import status_reporter

    with status_reporter(lambda: app.console(stderr=True), shown=app.printer.chatty) as reporter:
        outcome = run_coverage(request, reporter)
    if outcome.bad_input:
        raise InputError(outcome.detail)
    app.printer.emit(CoverageView(outcome, target), fmt)
    return outcome.exit_code


def _sweep(python: str | None, layers: int, tiny: bool, train: bool, dtype: str,
           table: Path | None, strict: bool, limit: int | None, arch_filter: str | None,
           arch_timeout: float, memory_mb: int, fmt: str) -> int:
    from neuronctl.cli.coverage_report import SweepView
    from neuronctl.cli.progress import status_reporter
    from neuronctl.ops.coverage_sweep import SweepRequest, run_sweep

    app = get_app()
    target = target_python(python)
    request = SweepRequest(target.python, layers, tiny, train, dtype, table, limit, arch_filter,
                           arch_timeout, memory_mb, strict)
    with status_reporter(lambda: app.console(stderr=True), shown=app.printer.chatty) as reporter:
        outcome = run_sweep(request, reporter)
    app.printer.emit(SweepView(outcome, target), fmt)
    return outcome.exit_code


@coverage.command("table")
@python_option
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="The table file to write (JSON).")
@json_option
def table_command(python: str | None, output: Path) -> int:
    """Write the operator table of the Neuron backend installed in the target (run it once on a
    Neuron host; commit the file; classify elsewhere with --table)."""
    from neuronctl.cli.coverage_report import TableView
    from neuronctl.ops.coverage_sweep import make_table

    check_output_file(output, "-o")
    app = get_app()
    target = target_python(python)
    from neuronctl.cli.progress import status_reporter

    with status_reporter(lambda: app.console(stderr=True), shown=app.printer.chatty) as reporter:
        outcome = make_table(target.python, reporter)
    view = TableView(outcome, target, output)
    if outcome.document is not None:
        app.printer.write_file(view, "json", output)
    app.printer.emit(view, app.printer.format)
    return outcome.exit_code
