"""`neuronctl probe`: the device tiers alone."""

from __future__ import annotations

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.common import target_python
from neuronctl.cli.host_settings_types import ProbeSettings
from neuronctl.cli.options import (
    json_option,
    python_option,
)
from neuronctl.cli.setting_options import with_settings
from neuronctl.ops import probe as probe_op


@click.command()
@with_settings("probe", ProbeSettings)
@python_option
@json_option
@click.option("--compile", "compile_tier", is_flag=True, help="Also probe torch.compile (slow).")
def probe(settings: ProbeSettings, python: str | None,
          compile_tier: bool) -> int:
    """Import torch, find the device, allocate, compute, differentiate: stop at the first failure."""
    app = get_app()
    # The probe's run is bounded like a check's: config `check_timeout`, which a flag beats.
    limit = settings.check_timeout or 120.0
    device = settings.device
    target = target_python(python)
    from neuronctl.cli.progress import status_reporter

    with status_reporter(lambda: app.console(stderr=True), shown=app.printer.chatty) as reporter:
        report = probe_op.probe(target.python, device, limit, compile_tier, reporter)
    from neuronctl.cli.hardware_report import ProbeView

    app.printer.emit(ProbeView(report, target))
    return 0 if report.ok else 1
