"""`neuronctl releases`: what each Neuron release pins."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import click

from neuronctl.cli.app import get_app, terminal_text
from neuronctl.cli.output import emit_json, fitted_table, print_fitted
from neuronctl.manifest import Manifest, Release

if TYPE_CHECKING:
    from neuronctl.provenance import ValueEntry
    from neuronctl.rules import Rule

MANIFEST_OPTION = click.option(
    "--manifest", "manifest_path", type=click.Path(path_type=Path, dir_okay=False),
    help="Use this neuronctl manifest instead of the bundled one.")


def _short(versions: tuple[str, ...]) -> str:
    return ", ".join(versions) if versions else "-"


def _lines(versions: tuple[str, ...]) -> str:
    return "\n".join(versions) if versions else "-"


def _status(manifest: Manifest, r: Release) -> str:
    """The release's label (ga, beta) and where it stands (default, partial: partly
    published), one a line so the column stays narrow."""
    parts = [r.status]
    if not r.complete:
        parts.append("partial")
    if r is manifest.default:
        parts.append("default")
    return "\n".join(parts)


def default_reason(manifest: Manifest) -> str:
    """Why the default release is the default, naming the newer ones that are not."""
    d = manifest.default
    newer = [r for r in manifest.releases if r.key > d.key]
    text = f"default release: {d.version}, the newest whose whole stack is published"
    if newer:
        text += "; " + "; ".join(
            f"{r.version} is not ({', '.join(r.unpublished_pins()) or 'no native stack'}"
            f"{' not published' if r.unpublished_pins() else ''}; use it with --release "
            f"{r.version})" for r in newer)
    return text


def _release_table(manifest: Manifest, title: str) -> None:
    from rich.text import Text

    rows = []
    for r in manifest.releases:
        own = tuple(f.torch_neuronx for f in r.frameworks if f.backend == r.backend)
        rows.append((r.version, r.date or "unknown", _status(manifest, r), r.backend,
                     _lines(r.torch), _lines(own),
                     _lines(r.packages.get("neuronx-cc", ())) if "neuronx-cc" not in r.constraints
                     else "not published",
                     f"{r.python[0]}-{r.python[-1]}" if r.python else "-", _short(r.chips)))
    # Values are never split (a version folded as 2.13.3.|0 read as another); a narrow terminal
    # loses the least-needed columns instead, in this order.
    headers = ["release", "date", "status", "backend", "torch", "torch-neuronx", "neuronx-cc",
               "python", "chips"]
    styles = {"native": "green", "xla": "yellow", "none": "dim"}
    cells = []
    for row in rows:
        line = [Text(c) for c in row]
        line[3].stylize(styles.get(row[3], ""))
        cells.append(line)
    console = get_app().console()
    print_fitted(console, fitted_table(console, headers, cells, title=Text(title),
                                       title_justify="left",
                                       droppable=("chips", "date", "python", "backend",
                                                  "neuronx-cc", "status")))


def _release_detail(r: Release) -> None:
    from rich.table import Table
    from rich.text import Text

    # Manifests are data (an imported one is AWS's, or anyone's): Text, never markup.
    def table(title: str, *columns: str) -> Table:
        t = Table(title=title, title_justify="left")
        for col in columns:
            t.add_column(col, no_wrap=True, overflow="ignore")  # a version is never split
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
        emit_json({"manifest": manifest.source, "data": data_in_use(manifest),
                   "default": {"version": manifest.default.version,
                               "reason": default_reason(manifest)},
                   "releases": [r.to_json() for r in manifest.releases]})
    else:
        _release_table(manifest, f"Neuron releases ({manifest.source})")
        if not get_app().quiet:
            console = get_app().console()
            from rich.text import Text

            # Folded to the terminal's width like the table; never cut.
            console.print(Text(default_reason(manifest)), overflow="fold")
            console.print(Text(data_line(manifest)), overflow="fold")
    return 0


def data_in_use(manifest: Manifest) -> dict[str, str | None]:
    """Which release data is in use, where it came from and when."""
    return {"origin": manifest.origin, "source": manifest.source, "compiled": manifest.compiled,
            "from": manifest.generated_from.get("fetched_from"),
            "fetched": manifest.generated_from.get("fetched")}


def data_line(manifest: Manifest) -> str:
    d = data_in_use(manifest)
    when = f", compiled {d['compiled']}" if d["compiled"] else ", compile date not recorded"
    fetched = f", fetched from {d['from']} on {d['fetched']}" if d["from"] else ""
    return f"release data: {d['origin']} ({d['source']}{fetched}{when})"


@releases.command("show")
@click.argument("version")
@click.option("--json", "as_json", is_flag=True, help="Versioned JSON output.")
@click.option("--sources", "with_sources", is_flag=True,
              help="Each value with its source (URL, date read), or \"not published\".")
@MANIFEST_OPTION
def show(version: str, as_json: bool, with_sources: bool, manifest_path: Path | None) -> int:
    """Show one release in full."""
    from neuronctl.provenance import value_entries

    manifest = get_app().manifest(manifest_path)
    release = manifest.get(version)
    entries = value_entries(release, manifest.sources) if with_sources else None
    if as_json:
        doc: dict[str, object] = {"release": release.to_json()}
        if entries is not None:
            doc["values"] = [e.to_json() for e in entries]
            doc["rules"] = [{**r.to_json(), "source": manifest.cite(r.source)}
                            for r in _rules_for(manifest, release)]
        emit_json(doc)
    elif entries is not None:
        _sources_table(release, entries)
        _rules_lines(manifest, release)
    else:
        _release_detail(release)
        if release is not manifest.default and not release.complete:
            click.echo(f"note: not published: {', '.join(release.unpublished_pins())} "
                       f"(resolved from the index where AWS's recipe gives a constraint); the "
                       f"default release is {manifest.default.version}")
    return 0


def _rules_for(manifest: Manifest, release: Release) -> list[Rule]:
    from packaging.specifiers import SpecifierSet

    return [r for r in manifest.rules
            if not r.releases or release.key in SpecifierSet(r.releases)]


def _rules_lines(manifest: Manifest, release: Release) -> None:
    """The documented rules whose release range holds this release, each with its source."""
    from rich.text import Text

    console = get_app().console()
    for rule in _rules_for(manifest, release):
        console.print(Text(f"rule {rule.id} ({rule.kind}, {rule.severity}): {rule.says}  "
                           f"[source: {manifest.cite(rule.source)}]"), soft_wrap=True)


def _sources_table(release: Release, entries: list[ValueEntry]) -> None:
    """One value a line with its source, so a value and its source are read (and grepped)
    together."""
    from rich.text import Text

    console = get_app().console()
    console.print(Text(f"Neuron {release.version}: each value and its source"))
    for e in entries:
        where = f"source: {e.source.cite()}" if e.source else "no source: not published"
        console.print(Text(f"{e.key} = {e.value}  [{where}]"), soft_wrap=True)


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
            written = terminal_text(str(outcome.written), None)
            click.echo(f"wrote {len(outcome.manifest.releases)} releases to {written}; use it with: "
                       f"neuronctl --manifest {terminal_text(shlex.quote(str(outcome.written)), None)} "
                       "releases")
    if outcome.written is None and not quiet:
        click.echo(f"note: nothing was written; to save the converted manifest: neuronctl releases "
                   f"import {terminal_text(shlex.quote(str(path)), None)} -o neuron.json", err=True)
    return 0


@releases.command("update")
@click.option("--from", "source", metavar="URL|FILE",
              help="Where to fetch the manifest (default: NEURONCTL_MANIFEST_URL, else config "
                   "`manifest_url`, else AWS's n2-manifest.json on GitHub).")
@click.option("--accept-changes", is_flag=True,
              help="Apply the values that differ from the data in use (listed as conflicts).")
@click.option("--json", "as_json", is_flag=True, help="Versioned JSON summary.")
def update(source: str | None, accept_changes: bool, as_json: bool) -> int:
    """Fetch newer release data, merge it into the data in use and store it for later runs."""
    from neuronctl.cli.options import resolve
    from neuronctl.manifest import load_default_manifest, stored_manifest_path
    from neuronctl.ops.releases import DEFAULT_MANIFEST_URL, update_releases

    url = resolve("manifest_url", "source").value or DEFAULT_MANIFEST_URL
    store = stored_manifest_path()
    outcome = update_releases(load_default_manifest(), url, accept=accept_changes, store=store)
    if as_json:
        emit_json(outcome.to_json())
        return 0
    m = outcome.merge
    lines = [f"fetched {terminal_safe(url)}"]
    lines += [f"added: {v}" for v in m.added]
    lines += [f"filled (was not published): {c.describe()}" for c in m.filled]
    verb = "applied" if m.applied_conflicts else "not applied"
    lines += [f"conflict ({verb}): {c.describe()}" for c in m.conflicts]
    if m.dropped:
        lines.append(f"not in the fetched manifest (kept): {', '.join(m.dropped)}")
    if m.older_skipped:
        lines.append(f"{m.older_skipped} release(s) older than the data in use: not added")
    if outcome.stored is not None:
        lines.append(f"stored {outcome.releases} releases in {outcome.stored}; used from now on "
                     "(--manifest still overrides it)")
    else:
        lines.append("nothing new: nothing was written")
    if m.conflicts and not m.applied_conflicts:
        lines.append(f"{len(m.conflicts)} value(s) differ from the data in use; to take the "
                     "fetched ones: neuronctl releases update --accept-changes")
    for line in lines:
        click.echo(terminal_safe(line))
    return 0


def terminal_safe(text: str) -> str:
    """Text from a fetched manifest as it may be printed: control characters made spaces."""
    return "".join(ch if ch.isprintable() else " " for ch in text)
