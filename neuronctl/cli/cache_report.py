"""Renderers of `neuronctl cache`: the caches and a prune (text and JSON; registered in
cli/render.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import Struct

from neuronctl.ops.cache import CacheReport, PruneOutcome
from neuronctl.ops.doctor.checks_cache import size_text
from neuronctl.probes.compile_cache import public
from neuronctl.records import asdict

if TYPE_CHECKING:
    from neuronctl.cli.printer import Printer


class CacheView(Struct, frozen=True):
    """`neuronctl cache show`: the caches in use, by compiler version."""

    report: CacheReport


class PruneView(Struct, frozen=True):
    """`neuronctl cache prune`: what was (or would be) removed, against the compiler kept."""

    compiler: str | None
    outcome: PruneOutcome


def _public(fields: dict[str, object]) -> dict[str, object]:
    """A record's JSON fields: the scan's (device, inode) stays inside neuronctl."""
    fields.pop("identity", None)
    return fields


def caches_json(view: CacheView, printer: Printer) -> None:
    report = view.report
    keep = public(report.compiler) if report.compiler else None
    caches = []
    for state in report.caches:
        entries = [{**_public(asdict(e)), "name": e.display,
                    "current": None if e.version is None or keep is None
                    else public(e.version) == keep} for e in state.entries]
        caches.append({**asdict(state.location), "present": state.present,
                       "writable": state.writable, "free_bytes": state.free_bytes,
                       "fstype": state.fstype, "network": state.network,
                       "truncated": state.truncated, "problem": state.problem,
                       "size": sum(e.size for e in state.entries), "entries": entries})
    printer.json({"compiler": report.compiler, "compiler_source": report.compiler_source,
                  "caches": caches})


def print_caches(view: CacheView, printer: Printer) -> None:
    report, say = view.report, printer.say
    keep = public(report.compiler) if report.compiler else None
    say(f"compiler: {report.compiler or 'none'} ({report.compiler_source})")
    for state in report.caches:
        loc = state.location
        head = f"{loc.path} [{loc.kind}, {loc.source}]"
        if not state.present or state.problem:
            say(f"{head}: {state.problem or 'not there'}")
            continue
        extra = [f"on {state.fstype}" if state.fstype else "",
                 f"{size_text(state.free_bytes)} free" if state.free_bytes is not None else "",
                 "NOT writable" if state.writable is False else ""]
        say(f"{head}: {size_text(sum(e.size for e in state.entries))} in {len(state.entries)} "
            f"entries" + "".join(f", {x}" for x in extra if x))
        for e in state.entries:
            mark = "link, left alone" if e.link else (
                "" if e.version is None or keep is None else
                "current" if public(e.version) == keep else "stale")
            say(f"  {e.display}: {size_text(e.size)}, {e.files} files" + (f" ({mark})" if mark else ""))


def prune_json(view: PruneView, printer: Printer) -> None:
    outcome = view.outcome
    printer.json({"compiler": view.compiler, "applied": outcome.applied,
                  "items": [{**_public(asdict(i)), "name": i.display} for i in outcome.items],
                  "removed": list(outcome.removed),
                  "failed": list(outcome.failed), "notes": list(outcome.notes)},
                 failure=f"{len(outcome.failed)} entries not removed" if outcome.failed else None)


def print_prune(view: PruneView, printer: Printer) -> None:
    outcome, say = view.outcome, printer.say
    verb = "removed" if outcome.applied else "would remove"
    for item in outcome.items:
        say(f"{verb}: {item.cache}/{item.display} ({size_text(item.size)}, {item.files} files): "
            f"{item.reason}")
    for note in outcome.notes:
        say(f"left alone: {note}")
    for failure in outcome.failed:
        say(f"failed: {failure}")
    total = sum(i.size for i in outcome.items)
    say(f"{len(outcome.items)} entr{'y' if len(outcome.items) == 1 else 'ies'}, {size_text(total)}"
        + ("" if outcome.applied else "; dry run: add --yes to remove them"))
