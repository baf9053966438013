"""`neuronctl cache [show|prune]`: the Neuron compile caches an environment uses, by compiler
version, and pruning the stale ones (dry run unless --yes)."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

import click

from neuronctl.cli.app import get_app, terminal_text
from neuronctl.cli.common import python_option, target_python
from neuronctl.cli.printer import emit_json
from neuronctl.errors import InputError
from neuronctl.ops.cache import (
    CacheReport,
    PruneOutcome,
    apply_prune,
    plan_prune,
    public,
    show_caches,
)
from neuronctl.ops.doctor.checks_cache import size_text

_VERSION_CHARS = set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+_-")


def _compiler(python: str | None, keep: str | None) -> tuple[str | None, str, str]:
    """(the compiler version to keep, where it came from, the target python)."""
    target = target_python(python)
    if keep is not None:
        if not keep or len(keep) > 64 or not set(keep) <= _VERSION_CHARS:
            raise InputError(f"--keep-compiler {keep[:80]!r}: not a version")
        return keep, "--keep-compiler", target.python
    from neuronctl.probes.pyenv import inspect_python

    dist = inspect_python(target.python, timeout=30.0, tags=False).get("neuronx-cc")
    version = dist.version if dist is not None else None
    return version, f"neuronx-cc in {target.shown()}", target.python


def _report(python: str | None, keep: str | None) -> CacheReport:
    import os

    compiler, source, _target = _compiler(python, keep)
    return show_caches(os.environ, compiler, source)


def _cache_json(report: CacheReport) -> dict[str, Any]:
    keep = public(report.compiler) if report.compiler else None
    caches = []
    for state in report.caches:
        entries = [{**asdict(e), "current": None if e.version is None or keep is None
                    else public(e.version) == keep} for e in state.entries]
        caches.append({**asdict(state.location), "present": state.present,
                       "writable": state.writable, "free_bytes": state.free_bytes,
                       "fstype": state.fstype, "network": state.network,
                       "truncated": state.truncated, "problem": state.problem,
                       "size": sum(e.size for e in state.entries), "entries": entries})
    return {"compiler": report.compiler, "compiler_source": report.compiler_source,
            "caches": caches}


def say(text: str) -> None:
    """One line of data (paths and names from the filesystem) made safe for the terminal."""
    click.echo(terminal_text(text, None))


def _print_report(report: CacheReport) -> None:
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
            say(f"  {e.name}: {size_text(e.size)}, {e.files} files" + (f" ({mark})" if mark else ""))


@click.group(invoke_without_command=True)
@python_option
@click.option("--keep-compiler", "keep", metavar="V", default=None,
              help="The compiler version that is current [the target's neuronx-cc].")
@click.option("--json", "as_json", is_flag=True, help="Versioned JSON output.")
@click.pass_context
def cache(ctx: click.Context, python: str | None, keep: str | None, as_json: bool) -> None:
    """Show or prune the Neuron compile caches (legacy XLA, TorchNeuron, vLLM) in use.

    Without a subcommand: show. Options given before the subcommand apply to it."""
    ctx.meta["neuronctl.cache"] = {"python": python, "keep": keep, "as_json": as_json}
    if ctx.invoked_subcommand is None:
        ctx.invoke(show, python=python, keep=keep, as_json=as_json)


def _given(python: str | None, keep: str | None, as_json: bool) -> tuple[str | None, str | None,
                                                                      bool]:
    """A subcommand's options, else those given before it (`cache --python X prune`)."""
    ctx = click.get_current_context()
    outer = ctx.meta.get("neuronctl.cache", {})
    return (python if python is not None else outer.get("python"),
            keep if keep is not None else outer.get("keep"),
            as_json or bool(outer.get("as_json")))


@cache.command("show")
@python_option
@click.option("--keep-compiler", "keep", metavar="V", default=None,
              help="The compiler version that is current [the target's neuronx-cc].")
@click.option("--json", "as_json", is_flag=True, help="Versioned JSON output.")
def show(python: str | None = None, keep: str | None = None, as_json: bool = False) -> int:
    """Each cache with its size and entries by compiler version (stale: another neuronx-cc)."""
    python, keep, as_json = _given(python, keep, as_json)
    report = _report(python, keep)
    if as_json or get_app().json_wanted:
        emit_json(_cache_json(report))
    else:
        _print_report(report)
    return 0


def _print_prune(outcome: PruneOutcome) -> None:
    verb = "removed" if outcome.applied else "would remove"
    for item in outcome.items:
        say(f"{verb}: {item.cache}/{item.name} ({size_text(item.size)}, {item.files} files): "
            f"{item.reason}")
    for note in outcome.notes:
        say(f"left alone: {note}")
    for failure in outcome.failed:
        say(f"failed: {failure}")
    total = sum(i.size for i in outcome.items)
    say(f"{len(outcome.items)} entr{'y' if len(outcome.items) == 1 else 'ies'}, {size_text(total)}"
        + ("" if outcome.applied else "; dry run: add --yes to remove them"))


@cache.command("prune")
@python_option
@click.option("--older-than", "older", type=float, metavar="DAYS", default=None,
              help="Also remove entries with nothing newer than DAYS days.")
@click.option("--keep-compiler", "keep", metavar="V", default=None,
              help="Keep this compiler version's entries [the target's neuronx-cc].")
@click.option("--yes", is_flag=True, help="Remove them (without it: a dry run that lists them).")
@click.option("--json", "as_json", is_flag=True, help="Versioned JSON output.")
def prune(python: str | None, older: float | None, keep: str | None, yes: bool,
          as_json: bool) -> int:
    """Remove entries of other compiler versions (or older than DAYS); dry run unless --yes."""
    python, keep, as_json = _given(python, keep, as_json)
    if older is not None and not (math.isfinite(older) and 0 < older <= 36500):
        raise InputError(f"--older-than {older!r}: a number of days above 0, at most 36500")
    report = _report(python, keep)
    items, notes = plan_prune(report, older)
    outcome = apply_prune(items, notes, yes)
    if as_json or get_app().json_wanted:
        emit_json({"compiler": report.compiler, "applied": outcome.applied,
                   "items": [asdict(i) for i in outcome.items], "removed": list(outcome.removed),
                   "failed": list(outcome.failed), "notes": list(outcome.notes)},
                  failure=f"{len(outcome.failed)} entries not removed" if outcome.failed else None)
    else:
        _print_prune(outcome)
    return 1 if outcome.failed else 0
