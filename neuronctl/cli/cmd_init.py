"""`neuronctl init`: write or update [tool.neuronctl] in ./pyproject.toml (ops/init.py does it)."""

from __future__ import annotations

from pathlib import Path

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.options import given_values, json_option, target_options
from neuronctl.cli.output import emit_json


@click.command("init")
@click.option("--release", help="Neuron release (default: kept, else the newest native one).")
@click.option("--torch", help="PyTorch line, e.g. 2.14 (default: kept, else the release's own).")
@target_options("default: kept", "default: kept")
@json_option
def init(release: str | None, torch: str | None, pythons: tuple[str, ...],
         platforms: tuple[str, ...], as_json: bool) -> int:
    """Write or update [tool.neuronctl] in ./pyproject.toml (created if absent)."""
    from neuronctl.ops.init import InitRequest, init_project

    app = get_app()
    request = InitRequest(Path.cwd() / "pyproject.toml", app.manifest(), release, torch,
                          given_values("pythons"), platforms)
    outcome = init_project(request)
    if as_json:
        emit_json(outcome.to_json())
    elif not outcome.written:
        click.echo(f"{outcome.path}: [tool.neuronctl] already up to date")
    elif not app.quiet:
        through = f" (through the link {outcome.link})" if outcome.link else ""
        click.echo(f"{'created' if outcome.created else 'updated'} {outcome.path}{through}: "
                   f"[tool.neuronctl] " + ", ".join(outcome.changed))
    return 0
