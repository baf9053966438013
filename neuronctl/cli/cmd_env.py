"""`neuronctl env`: the bug-report dump (markdown by default), secrets never printed."""

from __future__ import annotations

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.common import target_python
from neuronctl.cli.env_report import EnvView, to_markdown
from neuronctl.cli.host_settings_types import EnvSettings
from neuronctl.cli.options import json_option, python_option
from neuronctl.cli.setting_options import with_settings
from neuronctl.ops.env import REDACTED, TORCH_TIMEOUT_S, relevant_environ
from neuronctl.ops.env import collect_env as collect

__all__ = ["REDACTED", "collect", "env", "relevant_environ", "to_markdown"]

@click.command()
@with_settings("env", EnvSettings)
@python_option
@json_option
def env(settings: EnvSettings, python: str | None) -> int:
    """Dump everything a Neuron bug report needs, as markdown (or JSON): a superset of
    `python -m torch.utils.collect_env`, plus every Neuron package, the driver, runtime and chip."""
    # collect_env is bounded like a check: config `check_timeout`, which a flag beats.
    limit = settings.check_timeout or TORCH_TIMEOUT_S
    target = target_python(python)
    sysroot = settings.sysroot
    get_app().printer.emit(EnvView(collect(target.python, sysroot, None, limit).to_json(), target))
    return 0
