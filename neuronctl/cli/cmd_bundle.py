"""`neuronctl bundle`: one redacted archive for a support case."""

from __future__ import annotations

from pathlib import Path

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.common import check_sysroot, target_python
from neuronctl.cli.host_settings_types import SysrootSettings
from neuronctl.cli.options import json_option, python_option
from neuronctl.cli.setting_options import with_settings
from neuronctl.ops.bundle import BundleRequest, make_bundle
from neuronctl.ops.output_path import check_output_file
from neuronctl.ops.reporter import NullReporter
from neuronctl.probes.sysroot import SysRoot


@click.command()
@with_settings("bundle", SysrootSettings)
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Archive to write (default: ./neuronctl-bundle-<host>-<time>.tar.gz).")
@python_option
@click.option("--redact-hostnames", is_flag=True,
              help="Replace this host's name and FQDN everywhere in the archive.")
@json_option
def bundle(settings: SysrootSettings, output: Path | None, python: str | None,
           redact_hostnames: bool) -> int:
    """Collect env, doctor, neuron-ls, lspci, modinfo, kernel log lines, system packages, the
    target's distributions, [tool.neuronctl] and the lock into one .tar.gz, redacted; what could
    not be gathered is listed with its reason in the archive's index."""
    check_output_file(output, "-o")
    app = get_app()
    global_args: list[str] = []
    if app.manifest_path is not None:
        global_args += ["--manifest", str(app.manifest_path)]
    if app.config_path is not None:
        global_args += ["--config", str(app.config_path)]
    target = target_python(python)
    request = BundleRequest(output=output, python=target.python,
                            sysroot=SysRoot.from_env(check_sysroot(settings.sysroot)),
                            redact_hostnames=redact_hostnames,
                            config=app.config_path or Path("pyproject.toml"),
                            global_args=tuple(global_args))
    from neuronctl.cli.hardware_report import BundleView

    app.printer.emit(BundleView(make_bundle(request, NullReporter()), target))
    return 0
