"""Options and helpers that several commands share."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from neuronctl.devices import DEVICES
from neuronctl.errors import InputError

if TYPE_CHECKING:
    from neuronctl.ops.target_env import TargetPython

F = TypeVar("F", bound=Callable[..., Any])

DEVICE_CHOICE = click.Choice(DEVICES)


def json_option(f: F) -> F:
    """`--json` as every command spells it (`as_json`). The error boundary notices it given (on
    any command: cli/main.py watches every `--json` and `--format`), and then writes one JSON
    document on failure too; a command emits its own through `output.emit_json`."""
    return click.option("--json", "as_json", is_flag=True, help="Versioned JSON output on stdout "
                        "(one document, on failure too).")(f)


def python_option(f: F) -> F:
    return click.option("--python", "python", metavar="PATH",
                        help="Interpreter (or venv directory) to inspect; default: the active "
                             "VIRTUAL_ENV, else ./.venv, else neuronctl's own.")(f)


def target_python(python: str | None) -> TargetPython:
    """The environment this command works on (neuronctl.ops.target_env: the one rule)."""
    from neuronctl.ops.target_env import choose_target

    return choose_target(python)


def echo_target(target: TargetPython, quiet: bool) -> None:
    """A text report's first line: the target and why it was chosen (not with -q)."""
    if not quiet:
        from neuronctl.cli.app import terminal_text

        click.echo(terminal_text(target.line(), None))


def sysroot_option(f: F) -> F:
    return click.option("--sysroot", type=click.Path(path_type=Path, file_okay=False),
                        help="Read hardware facts under this root (default: / or "
                             "NEURONCTL_SYSROOT).")(f)


MAX_TIMEOUT = 86400.0
"""A day: longer is a typo (1e300), and would overflow the clocks that deadlines are built on."""


def timeout_value(value: float | None, config_value: Any, default: float) -> float:
    """--timeout, else config `timeout`, else the default; a finite number of seconds above 0
    and at most a day (click parses 'nan' and 'inf' as floats: they are refused here)."""
    chosen = value if value is not None else config_value if config_value is not None else default
    where = "--timeout" if value is not None else "config timeout"
    if (not isinstance(chosen, int | float) or isinstance(chosen, bool) or not math.isfinite(chosen)
            or not 0 < chosen <= MAX_TIMEOUT):
        raise InputError(f"{where}: timeout must be a positive number of seconds, at most "
                         f"{MAX_TIMEOUT:g}; got {chosen!r}")
    return float(chosen)


def check_sysroot(path: Path | None) -> Path | None:
    """--sysroot as given, after the root it or NEURONCTL_SYSROOT names is validated (exit 2
    before anything runs); SysRoot.from_env is the one place that decides what a root is."""
    from neuronctl.probes.sysroot import SysRoot

    SysRoot.from_env(path)
    return path
