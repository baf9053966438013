"""`neuronctl smoke`: your own model on the device, timed, and checked against CPU."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.common import echo_target, target_python
from neuronctl.cli.options import device_option, python_option, resolve, resolver
from neuronctl.cli.output import JsonError, emit_json, outcome_words, to_json_text, write_atomic
from neuronctl.errors import InputError
from neuronctl.ops.output_path import check_output_file
from neuronctl.ops.smoke import DEFAULT_TIMEOUT, SmokeOutcome, SmokeRequest, run_smoke
from neuronctl.probes.smoke import SmokeReport

if TYPE_CHECKING:
    from rich.console import Console


@click.command()
@click.option("--model", metavar="MODULE:FACTORY",
              help="A function returning (model, example_inputs[, tokens_per_step]) "
                   "(default: config `model`, else the built-in reference model).")
@click.option("--script", type=click.Path(path_type=Path, dir_okay=False),
              help="A Python file that defines make() (same return as FACTORY).")
@device_option("what the model runs on")
@python_option
@click.option("--steps", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="Timed steps.")
@click.option("--warmup", type=click.IntRange(1, 100), default=2, show_default=True,
              help="Warm-up steps before timing (the first is timed alone; compilation lands there).")
@click.option("--train", is_flag=True, help="A backward pass and an SGD step per step; gradients "
                                            "are compared with CPU too.")
@click.option("--compile", "compile_model", is_flag=True,
              help="torch.compile the model (backend 'neuron' on Neuron, 'inductor' elsewhere).")
@click.option("--timeout", type=float, default=None,
              help=f"Seconds before the run is killed [{DEFAULT_TIMEOUT:g}].")
@click.option("--json", "as_json", is_flag=True, help="Versioned JSON output.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write the JSON report to FILE (for `neuronctl cost --from FILE`).")
def smoke(model: str | None, script: Path | None, device: str | None, python: str | None,
          steps: int, warmup: int, train: bool, compile_model: bool, timeout: float | None,
          as_json: bool, output: Path | None) -> int:
    """Run your model on the device: warm-up, timed steps, and a CPU comparison."""
    check_output_file(output, "-o")  # before the model runs, not after
    app, rules = get_app(), resolver()
    origin = "--model"
    if model is None and script is None:
        configured = rules.resolve("model")
        if configured.given:
            model, origin = configured.value, f"config model ({rules.config.source})"
    target = target_python(python)
    request = SmokeRequest(
        python=target.python, model=model, script=script, origin=origin,
        device=resolve("device", rules=rules).value, steps=steps, warmup=warmup, train=train,
        compile=compile_model, timeout=_kill_limit(timeout))
    from neuronctl.cli.progress import status_reporter

    # The step running, on a terminal (`--steps 1000 --train` runs for minutes).
    with status_reporter(lambda: app.console(stderr=True),
                         shown=not as_json and not app.quiet) as reporter:
        outcome = run_smoke(request, reporter)
    payload = {"smoke": outcome.to_json(), "target": target.to_json()}
    failure = None if outcome.ok else f"smoke {outcome.report.outcome}: {outcome.report.detail}"
    if output is not None:
        kind = "input" if outcome.bad_input else "failed"
        error = {"error": JsonError.of(kind, failure).to_json()} if failure else {}
        write_atomic(output, to_json_text({**payload, **error}))
    if as_json:
        emit_json(payload, failure=failure)
    elif not outcome.bad_input:
        echo_target(target, app.quiet)
        print_report(outcome, app.console(), quiet=app.quiet)
    if outcome.bad_input:  # exit 2 with the one-line message (and, with --json, in `error`)
        raise InputError(outcome.report.detail)
    return outcome.exit_code


def _kill_limit(timeout: float | None) -> float:
    """--timeout bounds the whole run (not a network request nor one check): no config key."""
    from neuronctl.settings import seconds

    return DEFAULT_TIMEOUT if timeout is None else seconds(timeout, "--timeout")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f} ms"


def _rows(report: SmokeReport) -> list[tuple[str, str]]:
    rows = [("first step", f"{_ms(report.first_step_ms)}"
             + (" (includes compilation)" if report.spec.compile else "")),
            ("steady step", f"median {_ms(report.median_ms)}, p90 {_ms(report.p90_ms)} "
                            f"over {len(report.step_ms)} step(s)")]
    if report.tokens_per_s is not None:
        rows.append(("throughput", f"{report.tokens_per_s:,.0f} tokens/s "
                                   f"({report.tokens_per_step:,} tokens per step)"))
    else:
        rows.append(("throughput", "unknown (the factory gave no tokens per step)"))
    peak = report.peak_memory_bytes
    rows.append(("peak memory", f"{peak / 2**20:,.1f} MiB" if peak is not None
                 else f"not reported by the {report.device} backend"))
    for c in report.comparisons:
        verdict = "match" if c.ok else "DIFFER"
        rows.append((f"vs CPU {c.what}", f"{verdict}: max abs error {c.max_abs:.3g}, max rel error "
                                         f"{c.max_rel:.3g} over {c.tensors} tensor(s) "
                                         f"({c.dtype}: rtol {c.rtol:g}, atol {c.atol:g})"))
    return rows


def _facts(report: SmokeReport) -> str:
    mode = "training step" if report.spec.train else "inference"
    parts: list[Any] = [report.spec.label, f"{mode} on {report.device or report.spec.device}"]
    if report.torch:
        parts.append(f"torch {report.torch}")
    if report.params is not None:
        parts.append(f"{report.params:,} parameters ({report.dtype})")
    return ", ".join(str(p) for p in parts)


def print_report(outcome: SmokeOutcome, console: Console, *, quiet: bool = False) -> None:
    from rich.markup import escape

    report = outcome.report
    if not quiet:
        console.print(f"[bold]smoke[/]: {escape(_facts(report))}")
        if report.step_ms or report.comparisons:
            for label, text in _rows(report):
                console.print(f"  {label:<18} {escape(text)}")
    if outcome.ok:
        console.print(f"[green]pass[/]: {escape(report.detail)}")
        return
    console.print(f"[red]fail[/]: {escape(outcome_words(report.outcome, report.detail))}")
