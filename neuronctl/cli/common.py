"""Options and helpers that several commands share."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from neuronctl.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])

DEVICE_CHOICE = click.Choice(["auto", "neuron", "cuda", "cpu"])


def python_option(f: F) -> F:
    return click.option("--python", "python", metavar="PATH",
                        help="Interpreter (or venv directory) to inspect; default: this one.")(f)


def sysroot_option(f: F) -> F:
    return click.option("--sysroot", type=click.Path(path_type=Path, file_okay=False),
                        help="Read hardware facts under this root (default: / or "
                             "NEURONCTL_SYSROOT).")(f)


def timeout_value(value: float | None, config_value: Any, default: float) -> float:
    chosen = value if value is not None else config_value if config_value is not None else default
    if not isinstance(chosen, int | float) or isinstance(chosen, bool) or chosen <= 0:
        raise InputError(f"timeout must be a positive number of seconds, got {chosen!r}")
    return float(chosen)


def check_sysroot(path: Path | None) -> Path | None:
    if path is not None and not path.is_dir():
        raise InputError(f"--sysroot {path}: no such directory")
    return path
