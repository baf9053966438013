"""`neuronctl init`: write or update [tool.neuronctl] in ./pyproject.toml (ops/init.py does it)."""

from __future__ import annotations

from pathlib import Path

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.options import given_values, json_option, target_options


@click.command("init")
@click.option("--release", help="Neuron release: a version, latest or newest (default: kept, else the "
                                "newest native one).")
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
    app.printer.emit(init_project(request))
    return 0
