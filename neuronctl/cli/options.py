"""The plain options several commands share, declared once (--json, --python, --latest,
--offline). A setting's flag is not here: its row of the settings table names the commands that
take it, and neuronctl.cli.setting_options.with_settings gives it to them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from neuronctl.cli.app import note

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["interpreter_option", "json_option", "note", "python_option",
           "request_options"]


# -- shared options ------------------------------------------------------------------------------

def json_option(f: F) -> F:
    """`--json` as every command spells it. The printer holds it (cli/main.py watches every
    `--json` and `--format json` and sets `printer.json_wanted`, as -q sets `quiet`): the body
    is not given it; it renders through the printer (`printer.format`, `format_of(--format)`),
    and the error boundary writes one JSON document on failure too."""
    return click.option("--json", "as_json", is_flag=True, expose_value=False,
                        help="Versioned JSON output on stdout (one document, on failure too; where "
                             "there is --format, the same as --format json).")(f)


def interpreter_option(role: str, default: str = "else neuronctl's own") -> Callable[[F], F]:
    """`--python`: always the target interpreter (platform targets are `--python-version`);
    `role`: what the command does with it."""
    return click.option("--python", "python", metavar="PATH",
                        help=f"Interpreter (or venv directory) {role}; default: the active "
                             f"VIRTUAL_ENV, else ./.venv, {default}.")


python_option = interpreter_option("to inspect")



def request_options(f: Any) -> Any:
    """The plain flags lock and install share to say what stack to build (their settings, the
    release, torch, --with, the indexes and routes, come from their rows: with_settings)."""
    options = [
        click.option("--latest", is_flag=True,
                     help="Newest builds within the release's lines instead of its exact versions."),
        click.option("--offline", is_flag=True, help="Only the HTTP cache and file:// indexes."),
        click.option("--allow-unsupported", is_flag=True,
                     help="Proceed where a documented rule (OS, support window, driver/runtime) "
                          "forbids the stack; the rule and its source are still named."),
    ]
    for option in reversed(options):
        f = option(f)
    return f
