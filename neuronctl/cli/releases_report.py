"""Renderers of `neuronctl releases`: the list, one release (with --sources), an import and an
update (text and JSON; registered in cli/render.py)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from msgspec import Struct

from neuronctl.cli.output import print_line, print_table
from neuronctl.cli.terminal import terminal_text
from neuronctl.release.model import Manifest, Release

if TYPE_CHECKING:  # listing and showing releases never load the import/update operation
    from neuronctl.cli.printer import Printer
    from neuronctl.ops.releases import ReleasesImport, ReleasesUpdate
    from neuronctl.release.model import Rule
    from neuronctl.release.provenance import ValueEntry


class ReleaseList(Struct, frozen=True):
    """`neuronctl releases`: the releases a manifest holds, newest first."""

    manifest: Manifest


class ReleaseView(Struct, frozen=True):
    """`neuronctl releases show`: one release; `entries`, with --sources: each value's source."""

    manifest: Manifest
    release: Release
    entries: tuple[ValueEntry, ...] | None = None


def list_json(view: ReleaseList, printer: Printer) -> None:
    manifest = view.manifest
    printer.json({"manifest": manifest.source, "data": data_in_use(manifest),
                  "default": {"version": manifest.default.version,
                              "reason": default_reason(manifest)},
                  "releases": [r.to_json() for r in manifest.releases]})


def print_list(view: ReleaseList, printer: Printer) -> None:

    manifest = view.manifest
    _release_table(manifest, f"Neuron releases ({manifest.source})", printer)
    if not printer.quiet:
        console = printer.console()
        # Folded to the terminal's width like the table; never cut.
        print_line(console, default_reason(manifest))
        print_line(console, terminal_safe(data_line(manifest)))


def release_json(view: ReleaseView, printer: Printer) -> None:
    manifest, release = view.manifest, view.release
    doc: dict[str, object] = {"release": release.to_json()}
    if view.entries is not None:
        doc["values"] = [e.to_json() for e in view.entries]
        doc["rules"] = [{**r.to_json(), "source": manifest.cite(r.source)}
                        for r in _rules_for(manifest, release)]
    printer.json(doc)


def print_release(view: ReleaseView, printer: Printer) -> None:
    manifest, release = view.manifest, view.release
    if view.entries is not None:
        _sources_table(release, view.entries, printer)
        _rules_lines(manifest, release, printer)
        return
    _release_detail(release, printer)
    if release is not manifest.default and not release.complete:
        printer.echo(f"note: not published: {', '.join(release.unpublished_pins())} "
                     f"(resolved from the index where AWS's recipe gives a constraint); the "
                     f"default release is {manifest.default.version}")


def _import_note(outcome: ReleasesImport, printer: Printer) -> None:
    if outcome.written is None and not printer.quiet:
        printer.echo(f"note: nothing was written; to save the converted manifest: neuronctl "
                     f"releases import {terminal_text(shlex.quote(str(outcome.source)), None)} "
                     "-o neuron.json", err=True)


def import_manifest(outcome: ReleasesImport, printer: Printer) -> None:
    """`-o -`: the converted manifest itself on stdout."""
    printer.echo(outcome.text, nl=False)


def import_json(outcome: ReleasesImport, printer: Printer) -> None:
    printer.json(outcome.to_json())
    _import_note(outcome, printer)


def print_import(outcome: ReleasesImport, printer: Printer) -> None:
    _release_table(outcome.manifest, f"Imported from {outcome.source}", printer)
    if outcome.written is not None and not printer.quiet:
        written = terminal_text(str(outcome.written), None)
        quoted = terminal_text(shlex.quote(str(outcome.written)), None)
        printer.echo(f"wrote {len(outcome.manifest.releases)} releases to {written}; use it "
                     f"with: neuronctl --manifest {quoted} releases")
    _import_note(outcome, printer)


def update_json(outcome: ReleasesUpdate, printer: Printer) -> None:
    printer.json(outcome.to_json())


def print_update(outcome: ReleasesUpdate, printer: Printer) -> None:
    m = outcome.merge
    lines = [f"fetched {terminal_safe(outcome.source)}"]
    lines += [f"added: {v} (from {outcome.source})" for v in m.added]
    verb = "applied" if m.accepted else "not applied"
    lines += [f"filled ({verb}; was not published): {c.describe()}" for c in m.filled]
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
    if (m.conflicts or m.filled) and not m.accepted:
        lines.append(f"{len(m.conflicts) + len(m.filled)} value(s) of releases already known "
                     "would change; to take the fetched ones: neuronctl releases update "
                     "--accept-changes")
    for line in lines:
        printer.echo(terminal_safe(line))


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
    text = f"default release: {d.version} (--release latest), the newest whose whole stack is published"
    if newer:
        text += "; " + "; ".join(
            f"{r.version} is not ({', '.join(r.unpublished_pins()) or 'no native stack'}"
            f"{' not published' if r.unpublished_pins() else ''}; use it with --release "
            f"{r.version}{' or --release newest' if r is manifest.latest else ''})" for r in newer)
    return text


def _release_table(manifest: Manifest, title: str, printer: Printer) -> None:
    from rich.text import Text

    rows = []
    for r in manifest.releases:
        own = tuple(f.torch_neuronx for f in r.frameworks if f.flavour == r.flavour)
        rows.append((r.version, r.date or "unknown", _status(manifest, r), r.flavour,
                     _lines(r.torch), _lines(own),
                     _lines(r.packages.get("neuronx-cc", ())) if "neuronx-cc" not in r.constraints
                     else "not published",
                     f"{r.python[0]}-{r.python[-1]}" if r.python else "-", _short(r.chips)))
    # Values are never split (a version folded as 2.13.3.|0 read as another), and no column is
    # dropped: where the table does not fit, every release is a line (print_table).
    headers = ["release", "date", "status", "flavour", "torch", "torch-neuronx", "neuronx-cc",
               "python", "chips"]
    styles = {"native": "green", "xla": "yellow", "none": "dim"}
    cells = []
    for row in rows:
        line = [Text(c) for c in row]
        line[3].stylize(styles.get(row[3], ""))
        cells.append(line)
    print_table(printer.console(), headers, cells, title=title, title_justify="left")


def _release_detail(r: Release, printer: Printer) -> None:
    from rich.text import Text

    # Manifests are data (an imported one is AWS's, or anyone's): Text, never markup.
    console = printer.console()
    head = [("release", f"{r.version} ({r.date or 'date unknown'})"), ("status", r.status),
            ("flavour", r.flavour), ("torch", _short(r.torch)), ("python", _short(r.python)),
            ("chips", _short(r.chips))]
    for key, value in head:  # a key and its value, one line each: nothing padded
        print_line(console, f"{key}: {value}")
    if r.frameworks:
        print_table(console, ["flavour", "torch", "torch-neuronx", "chips", "python"],
                    [[Text(c) for c in (f.flavour, f.torch, f.torch_neuronx, ", ".join(f.chips),
                                        ", ".join(f.python))] for f in r.frameworks],
                    title="PyTorch lines", title_justify="left")
    print_table(console, ["package", "versions"],
                [[Text(name), Text(_short(versions))] for name, versions in r.packages.items()],
                title="Python packages", title_justify="left")
    if r.system:
        print_table(console, ["package", "version"],
                    [[Text(name), Text(version)] for name, version in r.system.items()],
                    title="System packages", title_justify="left")
    for note in r.notes:
        print_line(console, f"note: {note}")


def data_in_use(manifest: Manifest) -> dict[str, str | None]:
    """Which release data is in use, where it came from and when."""
    return {"origin": manifest.origin, "source": manifest.source, "compiled": manifest.compiled,
            "from": manifest.generated_from.get("fetched_from"),
            "fetched": manifest.generated_from.get("fetched"),
            "fetched_at": manifest.generated_from.get("fetched_at")}


def data_line(manifest: Manifest) -> str:
    d = data_in_use(manifest)
    when = f", compiled {d['compiled']}" if d["compiled"] else ", compile date not recorded"
    fetched = (f", fetched from {d['from']} at {d['fetched_at'] or d['fetched']}" if d["from"]
               else "")
    return f"release data: {d['origin']} ({d['source']}{fetched}{when})"


def _rules_for(manifest: Manifest, release: Release) -> list[Rule]:
    from packaging.specifiers import SpecifierSet

    return [r for r in manifest.rules
            if not r.releases or release.key in SpecifierSet(r.releases)]


def _rules_lines(manifest: Manifest, release: Release, printer: Printer) -> None:
    """The documented rules whose release range holds this release, each with its source."""

    console = printer.console()
    for rule in _rules_for(manifest, release):
        print_line(console, f"rule {rule.id} ({rule.kind}, {rule.severity}): {rule.says}  "
                            f"[source: {manifest.cite(rule.source)}]")


def _sources_table(release: Release, entries: tuple[ValueEntry, ...], printer: Printer) -> None:
    """One value a line with its source, so a value and its source are read (and grepped)
    together."""
    from rich.text import Text

    console = printer.console()
    console.print(Text(f"Neuron {release.version}: each value and its source"))
    for e in entries:
        where = f"source: {e.source.cite()}" if e.source else "no source: not published"
        print_line(console, f"{e.key} = {e.value}  [{where}]")


def terminal_safe(text: str) -> str:
    """Text from a fetched manifest as it may be printed: control characters made spaces."""
    return "".join(ch if ch.isprintable() else " " for ch in text)
