"""`neuronctl env`: the bug-report dump (markdown by default), secrets never printed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from neuronctl.cli.common import python_option, sysroot_option
from neuronctl.cli.output import emit_json
from neuronctl.ops.env import REDACTED, relevant_environ
from neuronctl.ops.env import collect_env as collect
from neuronctl.redact import redact

__all__ = ["REDACTED", "collect", "env", "relevant_environ", "to_markdown"]


def to_markdown(data: dict[str, Any]) -> str:
    lines = [f"## Environment (neuronctl {data['neuronctl']} env)", ""]
    sections = [("OS", data["os"]), ("Python", data["python"]), ("PyTorch", data["torch"]),
                ("Python packages", data["packages"]), ("Neuron hardware and system",
                                                          data["hardware"]),
                ("Environment variables", data["environment"])]
    for title, table in sections:
        lines += [f"### {title}", ""]
        if not table:
            lines += ["(none)", ""]
            continue
        lines += ["| key | value |", "| --- | --- |"]
        for key, value in table.items():
            shown = value
            if isinstance(value, dict):
                shown = ", ".join(f"{k} {v}" for k, v in value.items()) or "-"
            text = "-" if shown is None else str(shown)
            lines.append(f"| {key} | {text.replace('|', '/')} |")
        lines.append("")
    return "\n".join(lines)


@click.command()
@python_option
@click.option("--json", "as_json", is_flag=True, help="Versioned JSON output.")
@sysroot_option
def env(python: str | None, as_json: bool, sysroot: Path | None) -> int:
    """Dump everything a Neuron bug report needs, as markdown (or JSON)."""
    data = collect(python, sysroot).to_json()
    if as_json:
        emit_json({"env": data})
    else:
        click.echo(redact(to_markdown(data)))  # the variables are redacted; paths and versions too
    return 0
