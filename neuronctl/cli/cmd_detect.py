"""`neuronctl detect`: the hardware picture alone."""

from __future__ import annotations

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.host_settings_types import SysrootSettings
from neuronctl.cli.options import json_option
from neuronctl.cli.setting_options import with_settings
from neuronctl.ops import detect as detect_op


@click.command()
@with_settings("detect", SysrootSettings)
@json_option
def detect(settings: SysrootSettings) -> int:
    """Show the Neuron hardware on this machine, with the evidence for each conclusion."""
    get_app().printer.emit(detect_op.detect(settings.sysroot))
    return 0
