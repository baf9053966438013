"""`neuronctl fleet`: the doctor across a Slurm cluster in one srun step, and a Kubernetes
node-problem-detector config that runs the doctor on every node."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from neuronctl.cli.app import get_app, terminal_text
from neuronctl.cli.host_settings_types import RunSettings
from neuronctl.cli.options import json_option, python_option
from neuronctl.cli.output import write_atomic
from neuronctl.cli.setting_options import with_settings
from neuronctl.errors import InputError
from neuronctl.ops.doctor.levels import LEVELS, RUN_MARGIN_S
from neuronctl.ops.fleet.aggregate import aggregate
from neuronctl.ops.fleet.select import Selection
from neuronctl.ops.fleet.srun import LEVEL_ARGS, FleetRequest, default_remote, fleet_doctor

FORMATS = ("text", "json", "junit", "markdown")
NPD_CONDITION = "NeuronStackProblem"
NPD_HARDWARE_CONDITION = "NeuronHardwareProblem"
"""Severity to condition: `drain` outcomes (hardware errors, no driver, devices missing) set
NeuronHardwareProblem (the doctor run with --exit-on drain), any failure NeuronStackProblem (a
`fix` one has its command in the message); `info` sets none."""
# What NPD runs on each node: the quick level, one line of output (the verdict), no colour.
NPD_DOCTOR_ARGS: tuple[str, ...] = ("doctor", *LEVEL_ARGS[1], "-q", "--no-color")
# Where NPD's timeout is short, each check gets what is left after the run's margin and 5 s for
# the interpreter to start and exit; below 5 s a check is a time-out, not a result.
NPD_START_S = 5.0
NPD_MIN_CHECK_S = 5.0
NPD_MIN_TIMEOUT = int(NPD_MIN_CHECK_S + RUN_MARGIN_S + NPD_START_S)
NPD_MAX_TIMEOUT = 3600
FLEET_RUN_S = 120.0
"""`fleet doctor`'s srun step limit without --timeout: level 2 on a node, started and reported."""
# Environments made to be thrown away: a path in one is gone (or another program) on the nodes.
EPHEMERAL_PARTS = (("uv", "archive-v0"), ("uv", "builds-v0"), ("pipx", ".cache"))


@click.group()
def fleet() -> None:
    """The doctor across a cluster: Slurm drift report, node-problem-detector config."""


def _remote_command(value: str | None) -> list[str]:
    if value is None:
        # The same Python and neuronctl on every node: the shared filesystem every Slurm cluster
        # has; never a neuronctl/ in the directory srun runs the tasks in.
        return default_remote(sys.executable)
    try:
        argv = shlex.split(value)
    except ValueError as exc:
        raise InputError(f"--remote-command {value!r}: {exc}") from exc
    if not argv:
        raise InputError("--remote-command is empty")
    return argv


@fleet.command("doctor")
@with_settings("fleet doctor", RunSettings)
@click.option("--nodes", type=int, default=None, help="Run on N nodes (Slurm picks them).")
@click.option("--nodelist", metavar="LIST", help="Run on these nodes (a Slurm host list).")
@click.option("--all", "all_nodes", is_flag=True, help="Run on every node [the default].")
@click.option("--partition", metavar="P", help="Slurm partition.")
@click.option("--account", metavar="A", help="Slurm account to charge the step to (srun --account).")
@click.option("--qos", metavar="Q", help="Slurm quality of service (srun --qos).")
@click.option("--reservation", metavar="R",
              help="Run in this Slurm reservation (srun --reservation); with --all or --nodelist, "
                   "only its nodes.")
@click.option("--exclude", metavar="LIST", help="Leave out these nodes (a Slurm host list).")
@click.option("--constraint", metavar="FEATURES",
              help="Only nodes with these Slurm features (srun --constraint); with --all or "
                   "--nodelist: FEATURE, A&B or A|B.")
@click.option("--level", type=click.IntRange(1, 2), default=2, show_default=True,
              help="1: quick, no device work; 2: the full doctor.")
@python_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help="Output format.")
@json_option
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the report in --format to FILE; the text report still goes to stdout.")
@click.option("--remote-command", metavar="CMD",
              help="How to run neuronctl on the nodes [this Python, importing neuronctl from "
                   "its installation, never from the working directory].")
def fleet_doctor_command(settings: RunSettings, nodes: int | None, nodelist: str | None,
                         all_nodes: bool,
                         partition: str | None, account: str | None, qos: str | None,
                         reservation: str | None, exclude: str | None, constraint: str | None,
                         level: int, python: str | None, fmt: str | None,
                         output: Path | None, remote_command: str | None) -> int:
    """Run `neuronctl doctor --json` on every node in one srun step; report stack drift."""
    fmt = get_app().printer.format_of(fmt)
    request = FleetRequest(nodes=nodes, nodelist=nodelist, all_nodes=all_nodes,
                           partition=partition, level=level, python=python,
                           timeout=settings.run_timeout or FLEET_RUN_S,
                           remote_command=tuple(_remote_command(remote_command)),
                           selection=Selection(account=account, qos=qos, reservation=reservation,
                                               exclude=exclude, constraint=constraint))
    report = aggregate(fleet_doctor(request, request.remote_command))
    printer = get_app().printer
    printer.deliver(report, fmt, output)
    return report.exit_code


def _duration(seconds: float) -> str:
    return f"{int(seconds)}s"


def npd_config(path: str, interval: float, timeout: float, max_output: int) -> dict[str, Any]:
    """A node-problem-detector custom plugin monitor config (pkg/custompluginmonitor): NPD reads
    exit 0 as OK, 1 as a problem (condition True) and anything else as Unknown, and cuts stdout
    to max_output_length for the condition's message."""
    # Level 1 ends within its own budget; where NPD allows less, a per-check limit that makes
    # the whole run end before NPD kills it (which NPD would read as Unknown, not as a result).
    limit_args: list[str] = []
    per_check = npd_check_limit(timeout)
    if per_check is not None:
        limit_args = ["--check-timeout", f"{per_check:g}"]
    return {
        "plugin": "custom",
        "pluginConfig": {"invoke_interval": _duration(interval), "timeout": _duration(timeout),
                         "max_output_length": max_output, "concurrency": 1},
        "source": "neuronctl-custom-plugin-monitor",
        "metricsReporting": True,
        "conditions": [{"type": NPD_CONDITION, "reason": "NeuronStackHealthy",
                        "message": "neuronctl doctor passes"},
                       {"type": NPD_HARDWARE_CONDITION, "reason": "NeuronHardwareHealthy",
                        "message": "no neuronctl doctor outcome of severity drain"}],
        "rules": [{"type": "permanent", "condition": NPD_CONDITION,
                   "reason": "NeuronStackUnhealthy", "path": path,
                   "args": [*NPD_DOCTOR_ARGS, *limit_args],
                   "timeout": _duration(timeout)},
                  {"type": "permanent", "condition": NPD_HARDWARE_CONDITION,
                   "reason": "NeuronNeedsDrain", "path": path,
                   "args": [*NPD_DOCTOR_ARGS, *limit_args, "--exit-on", "drain"],
                   "timeout": _duration(timeout)}],
    }


def npd_check_limit(timeout: float) -> float | None:
    """Each check's --check-timeout where NPD's `timeout` is under level 1's budget; None where the
    level's own fits. InputError where not even NPD_MIN_CHECK_S a check would fit."""
    if timeout >= LEVELS[1].total_s + NPD_START_S + RUN_MARGIN_S:
        return None
    if timeout < NPD_MIN_TIMEOUT:
        raise InputError(f"--timeout {timeout:g}: too short for the doctor's level 1, which needs "
                         f"at least {NPD_MIN_TIMEOUT} s under NPD ({NPD_MIN_CHECK_S:g} s a check, "
                         f"{RUN_MARGIN_S + NPD_START_S:g} s to start and finish)")
    return timeout - RUN_MARGIN_S - NPD_START_S


def ephemeral_reason(path: str) -> str | None:
    """Why `path` will not be there on the nodes (a temporary directory, uvx's or pipx run's
    cache), or None."""
    resolved = Path(path).resolve(strict=False)
    temps = {Path(p).resolve(strict=False) for p in
             (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm")}
    for temp in temps:
        if resolved.is_relative_to(temp):
            return f"it is under the temporary directory {temp}"
    parts = [p.lower() for p in resolved.parts]
    for first, second in EPHEMERAL_PARTS:
        for i, part in enumerate(parts[:-1]):
            if first in part and parts[i + 1] == second:
                return f"it is in {first}'s cache of throw-away environments"
    return None


def _default_neuronctl() -> str:
    beside = Path(sys.executable).parent / "neuronctl"
    return str(beside) if beside.is_file() else (shutil.which("neuronctl") or str(beside))


@fleet.command("npd-config")
@click.option("--path", "tool", metavar="PATH", default=None,
              help="neuronctl's path on the nodes [the one beside this Python].")
@click.option("--interval", type=click.IntRange(10, 86400), default=300, show_default=True,
              help="Seconds between runs.")
@click.option("--timeout", type=click.IntRange(NPD_MIN_TIMEOUT, NPD_MAX_TIMEOUT), default=120,
              show_default=True,
              help=f"Seconds NPD allows a whole doctor run before it kills it (its result is then "
                   f"Unknown); at least {NPD_MIN_TIMEOUT}: {NPD_MIN_CHECK_S:g} s a check and "
                   f"{RUN_MARGIN_S + NPD_START_S:g} s to start and finish. Under "
                   f"{int(LEVELS[1].total_s + NPD_START_S + RUN_MARGIN_S)} each check's "
                   "--check-timeout is cut to fit (said on stderr).")
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
    per_check = npd_check_limit(timeout)
    if per_check is not None and per_check < LEVELS[1].check_s:
        _warn(f"--timeout {timeout}: NPD's limit is under level 1's {LEVELS[1].total_s:g} s "
              f"budget; the doctor runs with --check-timeout {per_check:g} (each check {per_check:g} s, "
              f"not {LEVELS[1].check_s:g} s)")
    why = ephemeral_reason(path)
    if why is not None:
        _warn(f"{'--path' if tool else 'neuronctl'} {path}: {why}; the nodes need a neuronctl that "
              "stays (install it on them or on a shared filesystem and give --path)")
    if output is not None:
        write_atomic(output, text)
    else:
        get_app().printer.echo(text, nl=False)
    return 0


def _warn(text: str) -> None:
    printer = get_app().printer
    printer.echo(f"{printer.paint('neuronctl: warning:', 'yellow', err=True)} "
                 f"{terminal_text(text, None)}", err=True)
