"""`neuronctl init`: write or update [tool.neuronctl] in ./pyproject.toml (ops/init.py does it)."""

from __future__ import annotations

from pathlib import Path

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.options import json_option, target_options
from neuronctl.cli.setting_options import CommandSettings, setting_option, with_settings


@click.command("init")
@with_settings("init")
@setting_option("release")
@setting_option("torch")
@target_options
@json_option
def init(settings: CommandSettings, as_json: bool) -> int:
    """Write or update [tool.neuronctl] in ./pyproject.toml (created if absent)."""
    from neuronctl.ops.init import InitRequest, init_project

    app = get_app()
    given = settings.given  # only what is typed: the file keeps what it has otherwise
    request = InitRequest(Path.cwd() / "pyproject.toml", app.manifest(), given.value("release"),
                          given.value("torch"), given.values("python_versions"),
                          given.values("platforms"))
    app.printer.emit(init_project(request))
    return 0
