"""`neuronctl detect`: the hardware picture alone."""

from __future__ import annotations

from pathlib import Path

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.common import json_option, sysroot_option
from neuronctl.ops import detect as detect_op


@click.command()
@json_option
@sysroot_option
def detect(as_json: bool, sysroot: Path | None) -> int:
    """Show the Neuron hardware on this machine, with the evidence for each conclusion."""
    get_app().printer.emit(detect_op.detect(sysroot))
    return 0
