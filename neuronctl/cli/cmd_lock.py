"""`neuronctl lock`: exact, hashed, per-index pins written as a PEP 751 pylock.toml (or a hashed
requirements file). This module parses the flags, runs neuronctl.ops.lock.run.lock and renders
its outcome."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from dataclasses import replace

import click

from neuronctl.cli.app import App, get_app
from neuronctl.cli.options import (
    given_values,
    request_options,
    resolve,
    resolver,
    stack_settings,
    target_options,
)
from neuronctl.cli.output import emit_json
from neuronctl.ops.lock.outcome import LockOutcome
from neuronctl.ops.reporter import Event, NullReporter, Reporter
from neuronctl.redact import redact
from neuronctl.routing import redact_url


class _StderrNotes:
    """Events as `kind: message` lines on stderr; `status` events (the index fetches) only to
    the live status line, which is drawn on a terminal alone (progress.status_reporter)."""

    def __init__(self, line: Reporter | None = None) -> None:
        self._line = line

    def emit(self, event: Event) -> None:
        if event.kind == "status":
            if self._line is not None:
                self._line.emit(event)
            return
        click.echo(f"{event.kind}: {event.message}", err=True)

    def progress(self, key: str, label: str, done: int, total: int | None) -> None:
        pass

    def finished(self, key: str, message: str) -> None:
        pass


@click.command("lock")
@request_options
@target_options("default: config python, else the release's lowest")
@click.option("-o", "--output", metavar="FILE", help="Lock file (default: config `lock`, else pylock.toml; "
              "- for stdout). With --fallback it names the Neuron lock, and the fallback lock goes "
              "beside it as pylock.DEVICE.toml, never over it.")
@click.option("--format", "fmt", type=click.Choice(["pylock", "requirements"]),
              help="pylock (PEP 751) or a pip requirements file with --hash (default: by file name).")
@click.option("--check", is_flag=True, help="Exit 1 if the lock no longer matches the request.")
@click.option("--fallback", metavar="cuda[=VARIANT]|cpu",
              help="A fallback lock beside the Neuron one (pylock.cuda.toml, pylock.cpu.toml): the "
                   "same torch, --with and targets for a GPU (default variant: the newest CUDA "
                   "build of that torch) or the CPU, with no Neuron package.")
@click.option("--json", "as_json", is_flag=True, help="A JSON summary on stdout.")
def lock(release: str | None, torch: str | None, with_: tuple[str, ...], indexes: tuple[str, ...],
         routes: tuple[str, ...], latest: bool, offline: bool, timeout: float | None,
         allow_unsupported: bool, pythons: tuple[str, ...], platforms: tuple[str, ...],
         output: str | None, fmt: str | None, check: bool, fallback: str | None,
         as_json: bool) -> int:
    """Resolve a Neuron release into exact, hashed pins, each package from its own index."""
    from neuronctl.ops.lock.request import build_lock_request, plan_request
    from neuronctl.ops.lock.run import lock as run_lock

    app = get_app()
    rules = resolver()
    settings = stack_settings(rules, latest=latest, fallback=fallback)
    stack = plan_request(app.manifest(), settings)
    seconds = 30.0 if check else float(resolve("timeout", rules=rules).value)
    lock_key = rules.config_text("lock")  # as written: -o's errors quote it so
    request = replace(build_lock_request(stack, output=output, fmt=fmt, check=check,
                                         offline=offline, timeout=seconds, config_lock=lock_key),
                      allow_unsupported=allow_unsupported)
    pythons = given_values("pythons")  # --python-version, or the old --python
    from neuronctl.cli.progress import status_reporter

    quiet = as_json or app.quiet
    with status_reporter(lambda: app.console(stderr=True), shown=not quiet) as line:
        reporter: Reporter = NullReporter() if quiet else _StderrNotes(line)
        outcome = run_lock(request, reporter)
    if outcome.checked:
        flags = _flags(release, torch, with_, indexes, routes, latest, pythons, platforms, output, fmt)
        flags += [f"--fallback={fallback}"] if fallback else []
        return _render_check(outcome, _refresh_command(app, flags), as_json)
    if outcome.text is not None:
        sys.stdout.write(outcome.text)
    _render(app, outcome, as_json)
    return outcome.exit_code


def _flags(release: str | None, torch: str | None, with_: Sequence[str], indexes: Sequence[str],
           routes: Sequence[str], latest: bool, pythons: Sequence[str], platforms: Sequence[str],
           output: str | None, fmt: str | None) -> list[str]:
    """The lock flags as given (index URLs without credentials: those come from ~/.netrc)."""
    flags = [f"--release={release}"] if release else []
    flags += [f"--torch={torch}"] if torch else []
    flags += [f"--with={w}" for w in with_] + [f"--index={_public(i)}" for i in indexes]
    flags += [f"--route={r}" for r in routes] + (["--latest"] if latest else [])
    flags += [f"--python-version={p}" for p in pythons] + [f"--platform={p}" for p in platforms]
    flags += [f"--output={output}"] if output else []
    return flags + ([f"--format={fmt}"] if fmt else [])


def _public(assignment: str) -> str:
    name, _, url = assignment.partition("=")
    return f"{name}={redact_url(url)}"


def _refresh_command(app: App, flags: Sequence[str]) -> str:
    """The `neuronctl lock` command, with the flags this check used, that rewrites the lock."""
    top = [f"--{k}={v}" for k, v in (("config", app.config_path), ("manifest", app.manifest_path))
           if v is not None]
    return shlex.join(["neuronctl", *top, "lock", *flags])


def _render_check(outcome: LockOutcome, refresh: str, as_json: bool) -> int:
    if outcome.missing:
        click.echo(f"{outcome.path}: no lock file; run `{refresh}`", err=True)
    for problem in outcome.problems:
        click.echo(redact(f"{outcome.path}: out of date: {problem}"), err=True)
    if outcome.problems:
        click.echo(f"hint: refresh it with: {redact(refresh)}", err=True)
    if as_json:
        failure = None if outcome.up_to_date else f"{outcome.path}: the lock no longer matches the request"
        emit_json(outcome.to_json(), failure=failure, hint=f"refresh it with: {redact(refresh)}")
    elif outcome.up_to_date:
        click.echo(f"{outcome.path}: up to date ({outcome.stack_label}, "
                   f"{len(outcome.targets)} target(s))")
    return outcome.exit_code


def _render(app: App, outcome: LockOutcome, as_json: bool) -> None:
    if as_json:
        if outcome.text is None:  # with -o -, stdout holds the lock itself
            emit_json(outcome.to_json())
        return
    if app.quiet:
        return
    stream_err = outcome.text is not None
    labels = ", ".join(t.label for t in outcome.targets)
    click.echo(f"locked {len(outcome.packages)} packages for {labels} ({outcome.stack_label}) "
               f"-> {outcome.path}", err=stream_err)
    if app.verbose or not stream_err:
        for p in outcome.packages:
            click.echo(f"  {p.name} {p.version}  [{p.index_name}]", err=stream_err)
    net, methods = outcome.network, outcome.metadata
    click.echo(f"network: {net.get('requests')} requests, {net.get('bytes', 0):,} bytes, "
               f"{net.get('cache_hits')} from cache; "
               f"metadata: {', '.join(f'{k} {v}' for k, v in methods.items()) or 'none'}", err=stream_err)
    for note in outcome.full_downloads:
        click.echo(f"note: downloaded whole {note}", err=True)
