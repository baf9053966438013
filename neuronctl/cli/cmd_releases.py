"""`neuronctl releases`: what each Neuron release pins."""

from __future__ import annotations

from pathlib import Path

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.fetch_settings_types import ReleasesUpdateSettings
from neuronctl.cli.options import json_option
from neuronctl.cli.setting_options import with_settings
from neuronctl.cli.settings_types import ManifestSettings


@click.group(invoke_without_command=True)
@with_settings("releases", ManifestSettings)
@json_option
@click.pass_context
def releases(ctx: click.Context, settings: ManifestSettings) -> int:
    """Show the Neuron releases neuronctl knows, newest first."""
    manifest_path = settings.manifest
    if ctx.invoked_subcommand is not None:
        ctx.obj.manifest_path = manifest_path or ctx.obj.manifest_path
        return 0
    from neuronctl.cli.releases_report import ReleaseList  # not for a subcommand or --help

    get_app().printer.emit(ReleaseList(get_app().manifest(manifest_path)))
    return 0


@releases.command("show")
@with_settings("releases show", ManifestSettings)
@click.argument("version")
@json_option
@click.option("--sources", "with_sources", is_flag=True,
              help="Each value with its source (URL, date read), or \"not published\".")
def show(version: str, with_sources: bool, settings: ManifestSettings) -> int:
    """Show one release in full."""
    from neuronctl.cli.releases_report import ReleaseView
    from neuronctl.release.provenance import value_entries

    manifest = get_app().manifest(settings.manifest)
    release = manifest.get(version)
    entries = value_entries(release, manifest.sources) if with_sources else None
    get_app().printer.emit(ReleaseView(manifest, release, None if entries is None
                                       else tuple(entries)))
    return 0


@releases.command("import")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
@json_option
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              help="Write the converted manifest here ('-' for stdout).")
def import_(path: Path, output: Path | None) -> int:
    """Convert AWS's n2-manifest.json to neuronctl's manifest format."""
    from neuronctl.ops.releases import import_aws_manifest

    to_stdout = output is not None and str(output) == "-"
    outcome = import_aws_manifest(path, None if to_stdout else output)
    get_app().printer.emit(outcome, "manifest" if to_stdout else None)
    return 0


@releases.command("update")
@with_settings("releases update", ReleasesUpdateSettings)
@click.option("--accept-changes", is_flag=True,
              help="Apply the values of releases already known that the fetched data fills or "
                   "changes (listed without it).")
@json_option
def update(settings: ReleasesUpdateSettings, accept_changes: bool) -> int:
    """Fetch newer release data, merge it into the data in use and store it for later runs."""
    from neuronctl.ops.releases import DEFAULT_MANIFEST_URL, update_releases
    from neuronctl.release.manifest import load_default_manifest, stored_manifest_path

    url = settings.manifest_url or DEFAULT_MANIFEST_URL
    store = stored_manifest_path()
    get_app().printer.emit(update_releases(load_default_manifest(), url, accept=accept_changes,
                                           store=store))
    return 0
