"""`neuronctl detect`: the hardware picture alone."""

from __future__ import annotations

from pathlib import Path

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.common import sysroot_option
from neuronctl.cli.printer import emit_json
from neuronctl.ops import detect as detect_op
from neuronctl.probes.hardware import HardwareReport


def print_hardware(report: HardwareReport) -> None:
    from rich.text import Text

    # Every value is data (sysfs, neuron-ls, IMDS): Text, never markup or emoji codes. One
    # unwrapped line a value (soft_wrap), so a version or an instance name is never split.
    console = get_app().console()
    rows: list[tuple[str, object]] = [
        ("chip", "none: no Neuron hardware found" if not report.present
         else f"{report.chip} ({report.chip_name})" if report.chip else "unknown"),
        ("devices", report.device_count or None),
        ("NeuronCores", (report.cores_text() or "").removeprefix("NeuronCores: ") or None),
        ("logical NC config", report.logical_nc_config),
        ("instance type", f"{report.instance_type} ({report.instance_type_source})"
         if report.instance_type else None),
        ("driver", report.driver_version), ("runtime", report.runtime_version),
        ("tools", report.tools_version), ("neuron-ls", report.neuron_ls)]
    shown = [(key, str(value)) for key, value in rows if value is not None]
    width = max(len(key) for key, _ in shown)
    for key, value in shown:
        console.print(Text(f"{key:<{width}}  {value}"), soft_wrap=True)
    for e in report.evidence:
        console.print(Text(f"  evidence: {e.source}: {e.value}" + (f" -> {e.chip}" if e.chip else "")),
                      soft_wrap=True)
    for c in report.conflicts:
        console.print(Text("  conflict: ", style="yellow").append(c), soft_wrap=True)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Versioned JSON output.")
@sysroot_option
def detect(as_json: bool, sysroot: Path | None) -> int:
    """Show the Neuron hardware on this machine, with the evidence for each conclusion."""
    report = detect_op.detect(sysroot)
    if as_json:
        emit_json({"hardware": report.to_json()})
    else:
        print_hardware(report)
    return 0
