"""`neuronctl releases`: what each Neuron release pins."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.output import emit_json
from neuronctl.manifest import Manifest, Release

MANIFEST_OPTION = click.option(
    "--manifest", "manifest_path", type=click.Path(path_type=Path, dir_okay=False),
    help="Use this neuronctl manifest instead of the bundled one.")


def _short(versions: tuple[str, ...]) -> str:
    return ", ".join(versions) if versions else "-"


def _lines(versions: tuple[str, ...]) -> str:
    return "\n".join(versions) if versions else "-"


def _release_table(manifest: Manifest, title: str) -> None:
    from rich.table import Table
    from rich.text import Text

    rows = []
    for r in manifest.releases:
        own = tuple(f.torch_neuronx for f in r.frameworks if f.backend == r.backend)
        # Status is shown only where it is news (beta, deprecated...), beside the version.
        version = r.version if r.status == "ga" else f"{r.version} ({r.status})"
        rows.append((version, r.date or "unknown", r.backend, _lines(r.torch), _lines(own),
                     _lines(r.packages.get("neuronx-cc", ())),
                     f"{r.python[0]}-{r.python[-1]}" if r.python else "-", _short(r.chips)))
    table = Table(title=Text(title), title_justify="left")
    for col in ("release", "date", "backend", "torch", "torch-neuronx", "neuronx-cc", "python",
                "chips"):
        # One version a line keeps every column as narrow as its longest version, so the table
        # fits 120 columns without cutting any; narrower terminals fold rather than truncate.
        table.add_column(col, overflow="fold")
    styles = {"native": "green", "xla": "yellow", "none": "dim"}
    for row in rows:
        cells = [Text(c) for c in row]
        cells[2].stylize(styles.get(row[2], ""))
        table.add_row(*cells)
    get_app().console().print(table)


def _release_detail(r: Release) -> None:
    from rich.table import Table
    from rich.text import Text

    # Manifests are data (an imported one is AWS's, or anyone's): Text, never markup.
    def table(title: str, *columns: str) -> Table:
        t = Table(title=title, title_justify="left")
        for col in columns:
            t.add_column(col, overflow="fold")
        return t

    def row(target: Table, *cells: str) -> None:
        target.add_row(*(Text(c) for c in cells))

    console = get_app().console()
    head = Table.grid(padding=(0, 2))
    head.add_row("release", Text(r.version, style="bold").append(f" ({r.date or 'date unknown'})",
                                                                 style="none"))
    for key, value in (("status", r.status), ("backend", r.backend), ("torch", _short(r.torch)),
                       ("python", _short(r.python)), ("chips", _short(r.chips))):
        row(head, key, value)
    console.print(head)
    if r.frameworks:
        fw = table("PyTorch lines", "backend", "torch", "torch-neuronx", "chips", "python")
        for f in r.frameworks:
            row(fw, f.backend, f.torch, f.torch_neuronx, ", ".join(f.chips), ", ".join(f.python))
        console.print(fw)
    pk = table("Python packages", "package", "versions")
    for name, versions in r.packages.items():
        row(pk, name, _short(versions))
    console.print(pk)
    if r.system:
        sy = table("System packages", "package", "version")
        for name, version in r.system.items():
            row(sy, name, version)
        console.print(sy)
    for note in r.notes:
        console.print(Text(f"note: {note}"))


@click.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Versioned JSON output.")
@MANIFEST_OPTION
@click.pass_context
def releases(ctx: click.Context, as_json: bool, manifest_path: Path | None) -> int:
    """Show the Neuron releases neuronctl knows, newest first."""
    if ctx.invoked_subcommand is not None:
        ctx.obj.manifest_path = manifest_path or ctx.obj.manifest_path
        return 0
    manifest = get_app().manifest(manifest_path)
    if as_json:
        emit_json({"manifest": manifest.source,
                   "releases": [r.to_json() for r in manifest.releases]})
    else:
        _release_table(manifest, f"Neuron releases ({manifest.source})")
    return 0


@releases.command("show")
@click.argument("version")
@click.option("--json", "as_json", is_flag=True, help="Versioned JSON output.")
@MANIFEST_OPTION
def show(version: str, as_json: bool, manifest_path: Path | None) -> int:
    """Show one release in full."""
    release = get_app().manifest(manifest_path).get(version)
    if as_json:
        emit_json({"release": release.to_json()})
    else:
        _release_detail(release)
    return 0


@releases.command("import")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Versioned JSON summary.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              help="Write the converted manifest here ('-' for stdout).")
def import_(path: Path, as_json: bool, output: Path | None) -> int:
    """Convert AWS's n2-manifest.json to neuronctl's manifest format."""
    from neuronctl.ops.releases import import_aws_manifest

    to_stdout = output is not None and str(output) == "-"
    outcome = import_aws_manifest(path, None if to_stdout else output)
    if to_stdout:
        click.echo(outcome.text, nl=False)
        return 0
    quiet = get_app().quiet
    if as_json:
        emit_json(outcome.to_json())
    else:
        _release_table(outcome.manifest, f"Imported from {path}")
        if outcome.written is not None and not quiet:
            click.echo(f"wrote {len(outcome.manifest.releases)} releases to {outcome.written}; "
                       f"use it with: neuronctl --manifest {shlex.quote(str(outcome.written))} releases")
    if outcome.written is None and not quiet:
        click.echo(f"note: nothing was written; to save the converted manifest: neuronctl releases "
                   f"import {shlex.quote(str(path))} -o neuron.json", err=True)
    return 0
