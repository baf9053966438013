"""`neuronctl fleet`: the doctor across a Slurm cluster in one srun step, and a Kubernetes
node-problem-detector config that runs the doctor on every node."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import click

from neuronctl.cli.common import timeout_value
from neuronctl.cli.fleet_report import (
    render_json_payload,
    render_junit,
    render_markdown,
    render_text,
    verdict_line,
)
from neuronctl.cli.output import emit_json, to_json_text, write_atomic
from neuronctl.errors import InputError
from neuronctl.ops.doctor.levels import LEVELS, RUN_MARGIN_S
from neuronctl.ops.fleet.aggregate import aggregate
from neuronctl.ops.fleet.srun import LEVEL_ARGS, FleetRequest, fleet_doctor

FORMATS = ("text", "json", "junit", "markdown")
NPD_CONDITION = "NeuronStackProblem"
# What NPD runs on each node: the quick level, one line of output (the verdict), no colour.
NPD_DOCTOR_ARGS: tuple[str, ...] = ("doctor", *LEVEL_ARGS[1], "-q", "--no-color")


@click.group()
def fleet() -> None:
    """The doctor across a cluster: Slurm drift report, node-problem-detector config."""


def _remote_command(value: str | None) -> list[str]:
    if value is None:
        # The same Python and neuronctl on every node: the shared filesystem every Slurm cluster has.
        return [sys.executable, "-m", "neuronctl"]
    try:
        argv = shlex.split(value)
    except ValueError as exc:
        raise InputError(f"--remote-command {value!r}: {exc}") from exc
    if not argv:
        raise InputError("--remote-command is empty")
    return argv


@fleet.command("doctor")
@click.option("--nodes", type=int, default=None, help="Run on N nodes (Slurm picks them).")
@click.option("--nodelist", metavar="LIST", help="Run on these nodes (a Slurm host list).")
@click.option("--all", "all_nodes", is_flag=True, help="Run on every node [the default].")
@click.option("--partition", metavar="P", help="Slurm partition.")
@click.option("--level", type=click.IntRange(1, 2), default=2, show_default=True,
              help="1: quick, no device work; 2: the full doctor.")
@click.option("--python", metavar="PATH", help="Interpreter to check on each node.")
@click.option("--timeout", type=float, default=None, help="Time limit for the whole step [120].")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help="Output format.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the report in --format to FILE; the text report still goes to stdout.")
@click.option("--remote-command", metavar="CMD",
              help="How to run neuronctl on the nodes [this Python -m neuronctl].")
def fleet_doctor_command(nodes: int | None, nodelist: str | None, all_nodes: bool,
                         partition: str | None, level: int, python: str | None,
                         timeout: float | None, fmt: str | None, as_json: bool,
                         output: Path | None, remote_command: str | None) -> int:
    """Run `neuronctl doctor --json` on every node in one srun step; report stack drift."""
    if as_json and fmt not in (None, "json"):
        raise InputError("--json conflicts with --format " + str(fmt))
    fmt = "json" if as_json else (fmt or "text")
    request = FleetRequest(nodes=nodes, nodelist=nodelist, all_nodes=all_nodes,
                           partition=partition, level=level, python=python,
                           timeout=timeout_value(timeout, None, 120.0),
                           remote_command=tuple(_remote_command(remote_command)))
    report = aggregate(fleet_doctor(request, request.remote_command))
    renderers = {"junit": render_junit, "markdown": render_markdown, "text": render_text}
    failure = None if report.ok else f"fleet doctor: {verdict_line(report)}"
    if output is not None:
        text = (to_json_text(render_json_payload(report)) if fmt == "json"
                else renderers[fmt](report))
        write_atomic(output, text)
        click.echo(render_text(report), nl=False)
    elif fmt == "json":
        emit_json(render_json_payload(report), failure=failure)
    else:
        click.echo(renderers[fmt](report), nl=False)
    return report.exit_code


def _duration(seconds: float) -> str:
    return f"{int(seconds)}s"


def npd_config(path: str, interval: float, timeout: float, max_output: int) -> dict[str, Any]:
    """A node-problem-detector custom plugin monitor config (pkg/custompluginmonitor): NPD reads
    exit 0 as OK, 1 as a problem (condition True) and anything else as Unknown, and cuts stdout
    to max_output_length for the condition's message."""
    # Level 1 ends within its own budget; where NPD allows less, a per-check limit that makes
    # the whole run end before NPD kills it (which NPD would read as Unknown, not as a result).
    quick = LEVELS[1]
    limit_args: list[str] = []
    if timeout < quick.total_s + 10:
        limit_args = ["--timeout", f"{max(1.0, timeout - RUN_MARGIN_S - 5):g}"]
    return {
        "plugin": "custom",
        "pluginConfig": {"invoke_interval": _duration(interval), "timeout": _duration(timeout),
                         "max_output_length": max_output, "concurrency": 1},
        "source": "neuronctl-custom-plugin-monitor",
        "metricsReporting": True,
        "conditions": [{"type": NPD_CONDITION, "reason": "NeuronStackHealthy",
                        "message": "neuronctl doctor passes"}],
        "rules": [{"type": "permanent", "condition": NPD_CONDITION,
                   "reason": "NeuronStackUnhealthy", "path": path,
                   "args": [*NPD_DOCTOR_ARGS, *limit_args],
                   "timeout": _duration(timeout)}],
    }


def _default_neuronctl() -> str:
    beside = Path(sys.executable).parent / "neuronctl"
    return str(beside) if beside.is_file() else (shutil.which("neuronctl") or str(beside))


@fleet.command("npd-config")
@click.option("--path", "tool", metavar="PATH", default=None,
              help="neuronctl's path on the nodes [the one beside this Python].")
@click.option("--interval", type=click.IntRange(10, 86400), default=300, show_default=True,
              help="Seconds between runs.")
@click.option("--timeout", type=click.IntRange(5, 3600), default=120, show_default=True,
              help="Seconds before NPD kills a run (its result is then Unknown).")
@click.option("--max-output-length", type=click.IntRange(20, 4096), default=200,
              show_default=True, help="Characters of output NPD keeps as the message.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the config to FILE instead of stdout.")
def npd_config_command(tool: str | None, interval: int, timeout: int, max_output_length: int,
                       output: Path | None) -> int:
    """Print a node-problem-detector custom plugin config that runs `neuronctl doctor`."""
    path = tool or _default_neuronctl()
    if not path.startswith("/"):
        raise InputError(f"--path {path!r}: NPD runs a plugin by absolute path")
    text = json.dumps(npd_config(path, interval, timeout, max_output_length), indent=2) + "\n"
    if output is not None:
        write_atomic(output, text)
    else:
        click.echo(text, nl=False)
    return 0
