"""`neuronctl doctor`: a CI-grade health check of a PyTorch-on-Neuron environment."""

from __future__ import annotations

import os
from pathlib import Path

import click

from neuronctl.cli.app import get_app, paint
from neuronctl.cli.common import (
    DEVICE_CHOICE,
    python_option,
    sysroot_option,
    timeout_value,
)
from neuronctl.cli.doctor_report import (
    json_payload,
    print_text,
    render_github,
    render_json,
    render_junit,
    render_markdown_summary,
    render_plain,
)
from neuronctl.cli.output import emit_json, write_atomic
from neuronctl.errors import InputError
from neuronctl.ops.doctor import run as doctor_run
from neuronctl.ops.doctor.report import DoctorReport
from neuronctl.ops.doctor.run import SELECTORS_HELP, DoctorRequest

FORMATS = ("text", "json", "junit", "github")


@click.command()
@python_option
@click.option("--release", metavar="V", help="Check against this Neuron release.")
@click.option("--lock", type=click.Path(path_type=Path, dir_okay=False),
              help="Also check installed versions against this pylock.toml.")
@click.option("--device", type=DEVICE_CHOICE, default=None, help="Device for the probe tiers.")
@click.option("--no-device-probe", is_flag=True, help="Skip the device probe tiers.")
@click.option("--compile", "compile_tier", is_flag=True, help="Also probe torch.compile (slow).")
@click.option("--strict", is_flag=True, help="Warnings fail too.")
@click.option("--only", multiple=True, metavar="ID",
              help=f"Run only these checks or groups (repeatable; {SELECTORS_HELP}).")
@click.option("--skip", multiple=True, metavar="ID",
              help="Skip these checks or groups (repeatable; as --only).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help="Output format.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the report in --format to FILE; a text summary still goes to stdout.")
@click.option("--timeout", type=float, default=None, help="Per-check timeout in seconds [60].")
@sysroot_option
@click.option("--manifest", "manifest_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Use this neuronctl manifest instead of the bundled one.")
def doctor(python: str | None, release: str | None, lock: Path | None, device: str | None,
           no_device_probe: bool, compile_tier: bool, strict: bool, only: tuple[str, ...],
           skip: tuple[str, ...], fmt: str | None, as_json: bool, output: Path | None,
           timeout: float | None, sysroot: Path | None, manifest_path: Path | None) -> int:
    """Check a PyTorch-on-Neuron environment and say how to fix what is wrong."""
    app = get_app()
    config = app.config()
    if as_json and fmt not in (None, "json"):
        raise InputError("--json conflicts with --format " + str(fmt))
    fmt = "json" if as_json else (fmt or "text")
    request = DoctorRequest(
        manifest=app.manifest(manifest_path), python=python,
        release=release or config.get("release"), lock=lock or config.path("lock"),
        device=device or config.get("device") or "auto", device_probe=not no_device_probe,
        compile_tier=compile_tier, strict=strict or bool(config.get("strict")), only=only,
        skip=skip + tuple(config.list("skip")),
        timeout=timeout_value(timeout, config.get("timeout"), 60.0),
        sysroot=sysroot)
    report = doctor_run.doctor(request)
    rendered = {"json": render_json, "junit": render_junit, "github": render_github}
    if output is not None:
        text = rendered[fmt](report) if fmt in rendered else render_plain(report)
        write_atomic(output, text)
    if fmt == "json" and output is None:  # the one JSON document; `error` added if it failed
        emit_json(json_payload(report), failure=report.verdict_line() if report.exit_code else None)
    elif fmt in rendered and output is None:
        click.echo(rendered[fmt](report), nl=False)
    else:
        app.json_wanted = False  # any JSON went to the -o file: stdout is the text report
        print_text(report, app.console(), verbose=app.verbose, quiet=app.quiet)
    if fmt == "github" and os.environ.get("GITHUB_STEP_SUMMARY"):
        _append_step_summary(Path(os.environ["GITHUB_STEP_SUMMARY"]), report)
    return report.exit_code


def _append_step_summary(path: Path, report: DoctorReport) -> None:
    """The step summary is a nicety beside the report: a path that cannot be written is a
    warning, and the exit code stays the checks' own."""
    try:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(render_markdown_summary(report))
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        click.echo(f"{paint('neuronctl: warning:', 'yellow', err=True)} GITHUB_STEP_SUMMARY {path}: "
                   f"{reason}; step summary not written", err=True)
