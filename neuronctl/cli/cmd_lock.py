"""`neuronctl lock`: exact, hashed, per-index pins written as a PEP 751 pylock.toml (or a hashed
requirements file). This module parses the flags, runs neuronctl.ops.lock.run.lock and renders
its outcome."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

import click
from msgspec.structs import replace

from neuronctl.cli.app import App, get_app
from neuronctl.cli.options import (
    json_option,
    request_options,
)
from neuronctl.cli.progress import MessageLines
from neuronctl.cli.setting_options import with_settings
from neuronctl.cli.stack_settings_types import LockSettings
from neuronctl.errors import InputError
from neuronctl.routing import redact_url


@click.command("lock")
@with_settings("lock", LockSettings)
@request_options
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
@json_option
def lock(settings: LockSettings, latest: bool, offline: bool, allow_unsupported: bool,
         output: str | None, fmt: str | None, check: bool, fallback: str | None) -> int:
    """Resolve a Neuron release into exact, hashed pins, each package from its own index."""
    from neuronctl.ops.lock.request import build_lock_request, plan_request
    from neuronctl.ops.lock.run import lock as run_lock

    app = get_app()
    if output == "-" and app.printer.json_wanted:  # two documents on one stdout: neither usable
        raise InputError("-o - writes the lock to stdout, where --json writes its document: "
                         "give one", hint="write the lock to a file (-o FILE) with --json")
    seconds = 30.0 if check else settings.timeout
    stack = plan_request(app.manifest(), settings.stack(latest=latest, fallback=fallback))
    lock_key = None if output else settings.config_lock  # as written: its errors quote it so
    request = replace(build_lock_request(stack, output=output, fmt=fmt, check=check,
                                         offline=offline, timeout=seconds, config_lock=lock_key),
                      allow_unsupported=allow_unsupported)
    from neuronctl.cli.progress import status_reporter

    shown = app.printer.chatty
    with status_reporter(lambda: app.console(stderr=True), shown=shown) as line:
        reporter = MessageLines(lambda: app.console(stderr=True), shown=shown, kinds=True,
                                line=line)
        outcome = run_lock(request, reporter)
    if outcome.checked:
        from neuronctl.cli.lock_report import CheckView  # its outcome type: not for --help

        typed = settings.typed
        flags = _flags(typed.release, typed.torch, typed.requirements, typed.indexes,
                       typed.routes, latest, typed.python_versions, typed.platforms, output, fmt)
        flags += [f"--fallback={fallback}"] if fallback else []
        app.printer.emit(CheckView(outcome, _refresh_command(app, flags)))
    else:
        app.printer.emit(outcome)
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
