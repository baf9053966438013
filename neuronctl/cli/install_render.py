"""Renderers of `neuronctl install` and `neuronctl download` (registered in cli/render.py). The
lines themselves are install_report's; this module says which go where, for which outcome."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from neuronctl.cli.printer import Printer
    from neuronctl.ops.install.outcome import InstallOutcome
    from neuronctl.ops.wheelhouse import DownloadOutcome


def _doctor(outcome: InstallOutcome, printer: Printer) -> None:
    """The doctor's verdict on the target, in brief (-v: its full table)."""
    if outcome.doctor is None:
        return
    if printer.verbose:
        from neuronctl.cli.doctor_report import print_text

        print_text(outcome.doctor, printer.console(), verbose=printer.verbose, quiet=printer.quiet)
        return
    from neuronctl.cli.install_report import print_doctor

    print_doctor(outcome.doctor, outcome.target.final_python, color=printer.colour(),
                 quiet=printer.quiet)


def print_install(outcome: InstallOutcome, printer: Printer) -> None:
    _doctor(outcome, printer)
    if not printer.quiet and outcome.dry_run:
        from neuronctl.cli.install_report import print_commands

        print_commands(outcome.commands, outcome.requirements)


def install_json(outcome: InstallOutcome, printer: Printer) -> None:
    failure = "the doctor found problems in the target" if outcome.exit_code else None
    printer.json(outcome.to_json(), failure=failure)


def print_nothing(outcome: DownloadOutcome, printer: Printer) -> None:
    """`download` in text: the reporter said everything as it went (one line a file)."""


def download_json(outcome: DownloadOutcome, printer: Printer) -> None:
    printer.json(outcome.to_json())
