"""`neuronctl install`: the flags become an InstallRequest, the install operation
(neuronctl.ops.install.run) does the work, and its outcome is rendered here as text or JSON."""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from msgspec.structs import replace

from neuronctl.cli.app import App, get_app, note
from neuronctl.cli.common import check_sysroot
from neuronctl.cli.options import (
    interpreter_option,
    json_option,
    request_options,
)
from neuronctl.cli.setting_options import with_settings
from neuronctl.cli.stack_settings_types import InstallSettings

if TYPE_CHECKING:
    from neuronctl.backend.engine import Choice
    from neuronctl.ops.install.request import InstallRequest
    from neuronctl.ops.lock.request import StackRequest
    from neuronctl.ops.reporter import AnyEvent, Reporter
    from neuronctl.routing import IndexRouting
    from neuronctl.settings import Setting


@click.command("install")
@with_settings("install", InstallSettings)
@request_options
@click.option("--find-links", "find_links", metavar="DIR", type=click.Path(path_type=Path, file_okay=False),
              help="With --lock: take the lock's files from this wheelhouse (neuronctl download); "
                   "the engine checks each against the lock's sha256 as it reads it, and a mismatch "
                   "names the file; a missing one comes from its URL, or is an error with --offline.")
@interpreter_option("to install into", "never neuronctl's own")
@click.option("--venv", type=click.Path(path_type=Path, file_okay=False),
              help="Install into this venv, creating it if absent (removed again if anything fails).")
@click.option("--venv-python", metavar="X.Y|PATH", help="Python for a new --venv (default: the lowest "
              "the release supports that this machine has).")
@click.option("--dry-run", is_flag=True, help="Print the plan, the engine commands and the files "
              "they install; change nothing.")
@click.option("-y", "--yes", is_flag=True, help="Confirm removals (legacy XLA packages) without asking.")
@click.option("--write-lock", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write the resolution as a pylock.toml.")
@click.option("--no-check", is_flag=True, help="Do not run the doctor on the target afterwards.")
@json_option
def install(settings: InstallSettings, latest: bool, offline: bool, allow_unsupported: bool,
            find_links: Path | None, python: str | None, venv: Path | None,
            venv_python: str | None, dry_run: bool, yes: bool, write_lock: Path | None,
            no_check: bool) -> int:
    """Install a Neuron PyTorch stack into an environment: pinned, verified, all or nothing.

    The engine (uv or the target's pip) is handed exactly the planned files, each with the URL
    the lock (or the resolution) recorded and its sha256, and no index: it fetches each file once,
    verifies it as it streams and fetches them all before it changes the environment (a failure,
    Ctrl-C or SIGTERM before then leaves it as it was; a new venv is removed). On a terminal its
    own progress is shown. With --lock pylock.toml the lock for this host is installed: the
    Neuron lock where there are Neuron devices, pylock.cuda.toml beside it where there is an
    NVIDIA GPU instead (--device overrides); the choice and why are printed. With --find-links
    DIR (a wheelhouse from neuronctl download) the engine reads the lock's files from DIR,
    checking each against its sha256. Then the doctor checks the target and prints in brief
    (-v: its full table; --no-check skips it)."""
    from neuronctl.ops.install.run import install as install_stack

    app = get_app()
    request = _request(app, settings, latest=latest, offline=offline,
                       allow_unsupported=allow_unsupported, lock=settings.lock,
                       find_links=find_links, python=python, venv=venv, venv_python=venv_python,
                       dry_run=dry_run, yes=yes, write_lock=write_lock,
                       check=not no_check, sysroot=check_sysroot(settings.sysroot),
                       show_engine=app.printer.chatty and sys.stderr.isatty())
    # Removals are confirmed by a person at a terminal; a script or --json needs --yes.
    confirm = _ask if not app.printer.json_wanted and sys.stdin.isatty() else None
    with _reporter(app, request, app.printer.chatty) as reporter:
        outcome = install_stack(request, reporter, confirm=confirm)
    app.printer.emit(outcome)
    return outcome.exit_code


def _request(app: App, command: InstallSettings, *, latest: bool, **flags: Any) -> InstallRequest:
    """The install's settings, resolved here by neuronctl.settings' one rule (a typed flag >
    environment > config > default): the operation gets typed values and never the config. The
    resolution's target (Python, platform) is the target interpreter's, known only once it is
    inspected: `stack` takes it."""
    from neuronctl.ops.index_routing import route_indexes
    from neuronctl.ops.install.request import InstallRequest

    settings = command.stack(latest=latest)
    manifest = functools.cache(app.manifest)

    def routing(recorded: Mapping[str, str]) -> IndexRouting:
        return route_indexes(settings.indexes, recorded)

    def stack(python: str, platform: str) -> StackRequest:
        from neuronctl.ops.lock.request import plan_request  # only a resolution needs it

        return plan_request(manifest(), replace(settings, python_versions=(python,),
                                                python_source="--python", platforms=(platform,)))

    return InstallRequest(manifest=manifest,
                          engine=_engine(command.engine),
                          routing=routing, stack=stack, timeout=command.timeout,
                          check_timeout=command.check_timeout,
                          release=settings.release.value, torch=settings.torch,
                          with_=command.typed.requirements, latest=latest,
                          device=_device(command, flags.get("lock")), **flags)


def _device(command: InstallSettings, lock: Path | None) -> str:
    """--device, else config `device` where there is a lock to pick from (the config's device is
    also what doctor and smoke probe, so without --lock it asks nothing of install), else auto."""
    setting = command.device
    if lock is None and setting.source.kind != "flag":
        return "auto"
    if setting.source.kind in ("config", "env") and setting.value != "auto":  # the lock's reason
        where = (f"config device, {setting.source.label}" if setting.source.kind == "config"
                 else setting.source.name)  # says --device
        note(f"device {setting.value} ({where}) picks the lock, as --device {setting.value} would")
    return str(setting.value)


def _engine(setting: Setting[str]) -> Choice:
    """The engine as the one precedence resolved it, its source named as the reason shows it
    (the config key as written: `engine`, or its old name `backend`)."""
    from neuronctl.backend.choose import choose_engine

    where = f"config {setting.source.key}" if setting.source.kind == "config" else \
        setting.source.label
    return choose_engine(setting.value if setting.given else None, where)


def _ask(question: str) -> bool:
    return bool(click.confirm(question, default=False))


@contextmanager
def _reporter(app: App, request: InstallRequest, show: bool) -> Iterator[Reporter]:
    """The operation's reporter for this run: silent with -q or --json, else the CLI's."""
    from neuronctl.cli.progress import CliReporter, preload
    from neuronctl.ops.reporter import NullReporter

    if not show:
        yield NullReporter()
        return

    def plan(event: AnyEvent) -> None:
        from neuronctl.cli.install_report import print_plan
        from neuronctl.ops.install.outcome import PlanReady

        if isinstance(event, PlanReady):
            print_plan(event.plan, event.source, event.target, event.choice,
                       verbose=app.printer.verbose, color=app.printer.colour())

    def applying(event: AnyEvent) -> None:  # the operation loads the doctor itself meanwhile
        if app.printer.verbose:
            preload("rich.table", "neuronctl.cli.doctor_report")

    with CliReporter(lambda: app.console(stderr=True),
                     steps={"plan": plan, "applying": applying}) as reporter:
        yield reporter
