"""`neuronctl cache [show|prune]`: the Neuron compile caches an environment uses, by compiler
version, and pruning the stale ones (dry run unless --yes)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.common import target_python
from neuronctl.cli.options import json_option, python_option
from neuronctl.errors import InputError

if TYPE_CHECKING:  # the operation and its views load when a subcommand runs, not for --help
    from neuronctl.ops.cache import CacheReport

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

    from neuronctl.ops.cache import show_caches

    compiler, source, _target = _compiler(python, keep)
    return show_caches(os.environ, compiler, source)


@click.group(invoke_without_command=True)
@python_option
@click.option("--keep-compiler", "keep", metavar="V", default=None,
              help="The compiler version that is current [the target's neuronx-cc].")
@json_option
@click.pass_context
def cache(ctx: click.Context, python: str | None, keep: str | None) -> None:
    """Show or prune the Neuron compile caches (legacy XLA, TorchNeuron, vLLM) in use.

    Without a subcommand: show. Options given before the subcommand apply to it."""
    ctx.meta["neuronctl.cache"] = {"python": python, "keep": keep}
    if ctx.invoked_subcommand is None:
        ctx.invoke(show, python=python, keep=keep)


def _given(python: str | None, keep: str | None) -> tuple[str | None, str | None]:
    """A subcommand's options, else those given before it (`cache --python X prune`)."""
    ctx = click.get_current_context()
    outer = ctx.meta.get("neuronctl.cache", {})
    return (python if python is not None else outer.get("python"),
            keep if keep is not None else outer.get("keep"))


@cache.command("show")
@python_option
@click.option("--keep-compiler", "keep", metavar="V", default=None,
              help="The compiler version that is current [the target's neuronx-cc].")
@json_option
def show(python: str | None = None, keep: str | None = None) -> int:
    """Each cache with its size and entries by compiler version (stale: another neuronx-cc)."""
    from neuronctl.cli.cache_report import CacheView

    python, keep = _given(python, keep)
    get_app().printer.emit(CacheView(_report(python, keep)))
    return 0


@cache.command("prune")
@python_option
@click.option("--older-than", "older", type=float, metavar="DAYS", default=None,
              help="Also remove entries with nothing newer than DAYS days.")
@click.option("--keep-compiler", "keep", metavar="V", default=None,
              help="Keep this compiler version's entries [the target's neuronx-cc].")
@click.option("--yes", is_flag=True, help="Remove them (without it: a dry run that lists them).")
@json_option
def prune(python: str | None, older: float | None, keep: str | None, yes: bool) -> int:
    """Remove entries of other compiler versions (or older than DAYS); dry run unless --yes."""
    python, keep = _given(python, keep)
    if older is not None and not (math.isfinite(older) and 0 < older <= 36500):
        raise InputError(f"--older-than {older!r}: a number of days above 0, at most 36500")
    from neuronctl.cli.cache_report import PruneView
    from neuronctl.ops.cache import apply_prune, plan_prune

    report = _report(python, keep)
    items, notes = plan_prune(report, older)
    outcome = apply_prune(items, notes, yes)
    get_app().printer.emit(PruneView(report.compiler, outcome))
    return 1 if outcome.failed else 0
