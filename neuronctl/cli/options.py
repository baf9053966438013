"""The options several commands share, declared once. A setting's flag is built from its row of
the settings table (neuronctl.cli.setting_options); the groups here only say which settings (and
which plain flags: --json, --latest, --offline) a family of commands takes (their typed settings:
neuronctl.cli.settings_types and neuronctl.cli.stack_settings_types)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from neuronctl.cli.app import note
from neuronctl.cli.setting_options import setting_option
from neuronctl.devices import DEVICES

F = TypeVar("F", bound=Callable[..., Any])

DEVICE_CHOICE = click.Choice(DEVICES)

__all__ = ["DEVICE_CHOICE", "check_timeout_option", "device_option",
           "interpreter_option", "json_option", "note", "python_option", "request_options",
           "setting_option", "sysroot_option", "target_options",
           "timeout_option"]


# -- shared options ------------------------------------------------------------------------------

def json_option(f: F) -> F:
    """`--json` as every command spells it (`as_json`). The error boundary notices it given (on
    any command: cli/main.py watches every `--json` and `--format`), and then writes one JSON
    document on failure too; a command emits its own through `output.emit_json`."""
    return click.option("--json", "as_json", is_flag=True, help="Versioned JSON output on stdout "
                        "(one document, on failure too; where there is --format, the same as "
                        "--format json).")(f)


def interpreter_option(role: str, default: str = "else neuronctl's own") -> Callable[[F], F]:
    """`--python`: always the target interpreter (platform targets are `--python-version`);
    `role`: what the command does with it."""
    return click.option("--python", "python", metavar="PATH",
                        help=f"Interpreter (or venv directory) {role}; default: the active "
                             f"VIRTUAL_ENV, else ./.venv, {default}.")


python_option = interpreter_option("to inspect")


sysroot_option = setting_option("sysroot")
device_option = setting_option("device")
timeout_option = setting_option("timeout")


def check_timeout_option(*, was_timeout: bool = False) -> Callable[[F], F]:
    """`--check-timeout`: the time limit of work run in the target (config `check_timeout`);
    `was_timeout`: this command had it as `--timeout`, still accepted with a note."""
    return setting_option("check_timeout", old=was_timeout)


def target_options(f: F) -> F:
    """The platform targets: `--python-version X.Y` (once `--python`, still accepted with a note)
    and `--platform TAG`."""
    return setting_option("python_versions")(setting_option("platforms")(f))


def request_options(f: Any) -> Any:
    """The options lock and install share to say what stack to build."""
    options = [
        setting_option("release"), setting_option("torch"), setting_option("requirements"),
        setting_option("indexes"), setting_option("routes"),
        click.option("--latest", is_flag=True,
                     help="Newest builds within the release's lines instead of its exact versions."),
        click.option("--offline", is_flag=True, help="Only the HTTP cache and file:// indexes."),
        timeout_option,
        click.option("--allow-unsupported", is_flag=True,
                     help="Proceed where a documented rule (OS, support window, driver/runtime) "
                          "forbids the stack; the rule and its source are still named."),
    ]
    for option in reversed(options):
        f = option(f)
    return f
