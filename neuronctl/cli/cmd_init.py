"""`neuronctl init`: write or update [tool.neuronctl] in ./pyproject.toml (ops/init.py does it)."""

from __future__ import annotations

from pathlib import Path

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.host_settings_types import InitSettings
from neuronctl.cli.options import json_option
from neuronctl.cli.setting_options import with_settings


@click.command("init")
@with_settings("init", InitSettings)
@json_option
def init(settings: InitSettings) -> int:
    """Write or update [tool.neuronctl] in ./pyproject.toml (created if absent)."""
    from neuronctl.ops.init import InitRequest, init_project

    app = get_app()
    # only what is typed: the file keeps what it has otherwise
    request = InitRequest(Path.cwd() / "pyproject.toml", app.manifest(), settings.release,
                          settings.torch, settings.python_versions, settings.platforms)
    app.printer.emit(init_project(request))
    return 0
