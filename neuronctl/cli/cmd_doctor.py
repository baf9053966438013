"""`neuronctl doctor`: a CI-grade health check of a PyTorch-on-Neuron environment."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from neuronctl.cli.app import get_app, terminal_text
from neuronctl.cli.common import check_sysroot, target_python
from neuronctl.cli.doctor_report import DoctorView, render_markdown_summary
from neuronctl.cli.host_settings_types import DoctorSettings
from neuronctl.cli.options import (
    json_option,
    python_option,
)
from neuronctl.cli.setting_options import with_settings
from neuronctl.errors import InputError, NeuronctlError
from neuronctl.ops.doctor import run as doctor_run
from neuronctl.ops.doctor.levels import DEFAULT_LEVEL, LEVELS, choose_level
from neuronctl.ops.doctor.report import DoctorReport
from neuronctl.ops.doctor.run import SELECTORS_HELP, DoctorRequest
from neuronctl.ops.output_path import check_output_file
from neuronctl.ops.target_env import TargetPython
from neuronctl.settings import Setting
from neuronctl.settings_table import BY_NAME

FORMATS = ("text", "json", "junit", "github", "prometheus")


@click.command(help="Check a PyTorch-on-Neuron environment and say how to fix what is wrong.\n\n"
                    "--level and its time budgets (a check past its budget, or still running "
                    "when the run's budget is spent, fails with 'timed out'):\n\n"
                    + "\n\n".join(f"{lv.number}: {lv.what}; {lv.budget_text()}."
                                  for lv in LEVELS.values()))
@with_settings("doctor", DoctorSettings)
@python_option
@click.option("--level", type=click.IntRange(1, 3), default=None, metavar="[1|2|3]",
              help=f"What to check, within what time (above) [{DEFAULT_LEVEL}].")
@click.option("--no-device-probe", is_flag=True, help="Skip the device probe tiers (= --level 1).")
@click.option("--compile", "compile_tier", is_flag=True,
              help="Also probe torch.compile, and run your model (= --level 3).")
@click.option("--only", multiple=True, metavar="ID",
              help=f"Run only these checks or groups (repeatable; {SELECTORS_HELP}).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Output format (prometheus: a node_exporter textfile, needs -o FILE.prom).")
@json_option
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the report in --format to FILE; a text summary still goes to stdout.")
@click.option("--slurm-drain", is_flag=True,
              help="After the report, drain this Slurm node (scontrol) when a check calls for it "
                   "(--drain-on), and resume it when none does if neuronctl drained it (for "
                   "HealthCheckProgram).")
@click.option("--exit-on", type=click.Choice(BY_NAME["drain_on"].choices or ()), default=None,
              help="Exit 1 only for these outcomes (as --drain-on: drain = severity drain); "
                   "node-problem-detector's hardware condition runs with drain [fail].")
@click.option("--lookback", metavar="DURATION", default=None,
              help="hardware.errors reads the kernel log this far back (e.g. 300, 5m, 2h, 1d) "
                   "[since boot].")
def doctor(settings: DoctorSettings, python: str | None, level: int | None,
           no_device_probe: bool, compile_tier: bool, only: tuple[str, ...], fmt: str | None,
           output: Path | None, slurm_drain: bool, exit_on: str | None,
           lookback: str | None) -> int:
    app = get_app()
    fmt = app.printer.format_of(fmt)
    if fmt == "prometheus" and (output is None or output.suffix != ".prom"):
        raise InputError("--format prometheus writes a node_exporter textfile: give -o FILE.prom"
                         + (f" (the textfile collector reads only *.prom, not {output.name})"
                            if output is not None else ""))
    check_output_file(output, "-o")
    chosen = choose_level(level, no_device_probe, compile_tier)
    # A run that acts on its node (a scheduler's health check) reads no project file: not even a
    # broken one stops it
    for_node = slurm_drain or exit_on is not None
    get_app().for_node = for_node
    request, policy, target, chosen_release = _request(
        settings.on_node(for_node), python, chosen, only, lookback)
    started, clock = time.time(), time.perf_counter()
    from neuronctl.cli.progress import status_reporter

    # Which checks still run, on a terminal (a level-3 doctor takes 20 s and more).
    with status_reporter(lambda: app.console(stderr=True),
                         shown=fmt == "text" and output is None and app.printer.chatty) as reporter:
        report = doctor_run.doctor(request, reporter)
    duration = time.perf_counter() - clock
    drained = _slurm_drain(report, policy) if slurm_drain else None
    _deliver(DoctorView(report, target, drained, chosen_release, started, duration), fmt, output)
    if drained is not None and drained.get("action") == "error":
        return 1
    if exit_on is not None:
        from neuronctl.ops.slurm_node import drain_triggers

        return 1 if drain_triggers(report.checks, exit_on, report.strict) else 0
    return report.exit_code


def _request(settings: DoctorSettings, python: str | None, level: int, only: tuple[str, ...],
             lookback: str | None) -> tuple[DoctorRequest, str, TargetPython, Setting[str | None]]:
    """The doctor request from the flags, the environment and the config (neuronctl.settings),
    the --slurm-drain policy, the target, and the release setting (with where it came from);
    `settings.for_node`: the run decides what happens to its node, so no project file is read."""
    app = get_app()
    policy = settings.drain_on
    target = target_python(python)
    model, release = settings.model, settings.release
    model_file, model_base = settings.model_config
    request = DoctorRequest(
        manifest=app.manifest(settings.manifest), python=target.python,
        release=release.value, lock=settings.lock,
        device=settings.device, level=level,
        strict=settings.strict, only=only,
        skip=settings.skip,
        check_timeout=settings.check_timeout,
        sysroot=check_sysroot(settings.sysroot), model=model.value,
        model_origin=f"config model ({model_file})", model_cwd=model_base,
        lookback_s=lookback_seconds(lookback))
    return request, policy, target, release


_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def lookback_seconds(text: str | None) -> float | None:
    """--lookback: seconds, or a number with s, m, h or d; at most 366 days (exit 2 else)."""
    if text is None:
        return None
    value = text.strip().lower()
    number, unit = (value[:-1], value[-1]) if value[-1:] in "smhd" and value else (value, "")
    try:
        seconds = float(number) * _UNITS[unit]
    except ValueError:
        seconds = -1.0
    if not (0 < seconds <= 366 * 86400) or number.strip() != number or not number:
        raise InputError(f"--lookback {text!r}: give a duration such as 300, 5m, 2h or 1d "
                         "(at most 366d)")
    return seconds


def _slurm_drain(report: DoctorReport, drain_on: str) -> dict[str, str]:
    """What --slurm-drain did to this node; a Slurm that cannot be reached is reported (and
    fails the run), never taken for a healthy node. The node drains for the checks `drain_on`
    names (severity drain by default) and is resumed, when neuronctl drained it, once none."""
    from neuronctl.ops.slurm_node import apply_slurm_drain, drain_triggers, this_node

    triggers = drain_triggers(report.checks, drain_on, report.strict)
    try:
        outcome = apply_slurm_drain(triggers, bool(triggers), None)
    except NeuronctlError as exc:
        return {"node": this_node(), "action": "error", "why": exc.message}
    return {"node": outcome.node, "action": outcome.action, "why": outcome.why}


def _deliver(view: DoctorView, fmt: str, output: Path | None) -> None:
    get_app().printer.deliver(view, fmt, output)
    if fmt == "github" and os.environ.get("GITHUB_STEP_SUMMARY"):
        _append_step_summary(Path(os.environ["GITHUB_STEP_SUMMARY"]), view.report)


def _append_step_summary(path: Path, report: DoctorReport) -> None:
    """The step summary is a nicety beside the report: a path that cannot be written is a
    warning, and the exit code stays the checks' own."""
    try:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(render_markdown_summary(report))
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        printer = get_app().printer
        label = printer.paint("neuronctl: warning:", "yellow", err=True)
        printer.echo(f"{label} GITHUB_STEP_SUMMARY "
                   f"{terminal_text(str(path), None)}: "
                   f"{reason}; step summary not written", err=True)
