"""`neuronctl smoke`: your own model on the device, timed, and checked against CPU."""

from __future__ import annotations

from pathlib import Path

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.common import target_python
from neuronctl.cli.hardware_report import SmokeView
from neuronctl.cli.host_settings_types import SmokeSettings
from neuronctl.cli.options import json_option, python_option
from neuronctl.cli.setting_options import with_settings
from neuronctl.errors import InputError
from neuronctl.ops.output_path import check_output_file
from neuronctl.ops.smoke import DEFAULT_TIMEOUT, SmokeRequest, run_smoke


@click.command()
@with_settings("smoke", SmokeSettings)
@click.option("--script", type=click.Path(path_type=Path, dir_okay=False),
              help="A Python file that defines make() (same return as FACTORY).")
@python_option
@click.option("--steps", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="Timed steps.")
@click.option("--warmup", type=click.IntRange(1, 100), default=2, show_default=True,
              help="Warm-up steps before timing (the first is timed alone; compilation lands there).")
@click.option("--train", is_flag=True, help="A backward pass and an SGD step per step; gradients "
                                            "are compared with CPU too.")
@click.option("--compile", "compile_model", is_flag=True,
              help="torch.compile the model (backend 'neuron' on Neuron, 'inductor' elsewhere).")
@json_option
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write the JSON report to FILE (for `neuronctl cost --from FILE`).")
def smoke(settings: SmokeSettings, script: Path | None, python: str | None, steps: int,
          warmup: int, train: bool, compile_model: bool,
          output: Path | None) -> int:
    """Run your model on the device: warm-up, timed steps, and a CPU comparison."""
    check_output_file(output, "-o")  # before the model runs, not after
    app = get_app()
    origin, model = "--model", settings.model_flag
    if model is None and script is None:
        configured = settings.model
        if configured.given:
            model, origin = configured.value, f"config model ({settings.model_file})"
    target = target_python(python)
    request = SmokeRequest(
        python=target.python, model=model, script=script, origin=origin,
        device=settings.device, steps=steps, warmup=warmup, train=train,
        compile=compile_model, timeout=_kill_limit(settings))
    from neuronctl.cli.progress import status_reporter

    # The step running, on a terminal (`--steps 1000 --train` runs for minutes).
    with status_reporter(lambda: app.console(stderr=True), shown=app.printer.chatty) as reporter:
        outcome = run_smoke(request, reporter)
    view = SmokeView(outcome, target)
    if output is not None:
        app.printer.write_file(view, "json", output)
    app.printer.emit(view)
    if outcome.bad_input:  # exit 2 with the one-line message (and, with --json, in `error`)
        raise InputError(outcome.report.detail)
    return outcome.exit_code


def _kill_limit(settings: SmokeSettings) -> float:
    """--timeout bounds the whole run (not a network request nor one check): no config key."""
    return float(settings.run_timeout or DEFAULT_TIMEOUT)
