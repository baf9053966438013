"""`neuronctl download`: a wheelhouse from a lock (neuronctl.ops.wheelhouse does the work)."""

from __future__ import annotations

from pathlib import Path

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.fetch_settings_types import DownloadSettings
from neuronctl.cli.options import (
    json_option,
)
from neuronctl.cli.setting_options import with_settings
from neuronctl.ops.output_path import check_output_dir


@click.command("download")
@with_settings("download", DownloadSettings)
@click.option("-d", "--dest", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="The wheelhouse directory (made if absent; files already there and verified "
                   "are kept).")
@json_option
def download(settings: DownloadSettings, dest: Path) -> int:
    """Fetch every file a lock selects into DIR, each verified against the lock's sha256 and size,
    for `install --lock LOCK --find-links DIR [--offline]` on hosts without the indexes.

    Files are written atomically (nothing unverified ever has its final name); a re-run, after
    Ctrl-C or on another day, skips what is already there and verified."""
    from neuronctl.cli.progress import CliReporter
    from neuronctl.errors import InputError
    from neuronctl.ops.index_routing import route_indexes
    from neuronctl.ops.reporter import NullReporter, Reporter
    from neuronctl.ops.wheelhouse import DownloadRequest
    from neuronctl.ops.wheelhouse import download as run_download
    from neuronctl.resolvers.targets import make_targets

    check_output_dir(dest, "-d")
    app = get_app()
    # the lock's own targets otherwise, not config `python` nor `platform`
    pythons, platforms = settings.python_versions, settings.platforms
    if platforms and not pythons:
        raise InputError("--platform needs --python-version (the target is a Python and a "
                         "platform)")
    targets = make_targets(pythons, platforms) if pythons else ()
    sources = settings.indexes  # the config's and the environment's indexes (no flags here)
    request = DownloadRequest(lock=settings.lock, dest=dest, targets=targets,
                              routing=lambda recorded: route_indexes(sources, recorded),
                              timeout=settings.timeout)
    if not app.printer.chatty:
        reporter: Reporter = NullReporter()
        outcome = run_download(request, reporter)
    else:
        with CliReporter(lambda: app.console(stderr=True)) as cli_reporter:
            outcome = run_download(request, cli_reporter)
    app.printer.emit(outcome)
    return 0
