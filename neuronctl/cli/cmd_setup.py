"""`neuronctl setup`: plan (default), script, apply (--yes) the Neuron system layer for a
release; or write a Dockerfile for its user space (--dockerfile)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click
from msgspec import Struct

from neuronctl.cli.app import get_app
from neuronctl.cli.host_settings_types import SetupSettings
from neuronctl.cli.options import json_option
from neuronctl.cli.setting_options import with_settings
from neuronctl.ops.setup.repos import KEY_FINGERPRINT, OS_IDS

if TYPE_CHECKING:
    from neuronctl.ops.setup.dockerfile import ToolSource
    from neuronctl.ops.setup.model import SetupPlan
    from neuronctl.release.model import Release


@click.command()
@with_settings("setup", SetupSettings)
@click.option("--os", "os_name", type=click.Choice(OS_IDS), default=None,
              help="Plan for another host with this OS (nothing of this host is read).")
@click.option("--key-fingerprint", metavar="FPR", default=None,
              help="The repository key's fingerprint (a mirror signed with its own key) "
                   f"[default: {KEY_FINGERPRINT}].")
@click.option("--chip", metavar="CHIP", help="The Neuron chip (inf1, trn2, ...) when the root "
              "shows none (--os plans).")
@click.option("--with-python", is_flag=True, help="Also install the Python stack into --venv.")
@click.option("--venv", metavar="DIR", help="The venv --with-python installs into "
              "[/opt/neuronctl/venv-RELEASE].")
@click.option("--yes", is_flag=True, help="Apply the plan now, step by step (root).")
@click.option("--format", "fmt", type=click.Choice(["text", "sh", "json"]),
              help="How to write the plan [text].")
@json_option
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the plan (or the Dockerfile) to this file, atomically.")
@click.option("--allow-unsupported", is_flag=True,
              help="Plan what the release rules forbid (you know better).")
@click.option("--dockerfile", is_flag=True, help="Write a Dockerfile for the release's user "
              "space and the Python stack from a lock, instead of a host plan.")
@click.option("--base", metavar="IMAGE", default="ubuntu:26.04", show_default=True,
              help="The Dockerfile's base image.")
@click.option("--lock", "lock_name", metavar="PATH",
              help="The lock the Dockerfile copies (inside the build context, the working "
              "directory; it must exist: `neuronctl lock` writes it) [config lock, else "
              "pylock.toml].")
@click.option("--neuronctl-wheel", "tool_wheel", metavar="PATH",
              help="neuronctl's wheel the image installs, inside the build context (its sha256 "
              "is checked in the Dockerfile) [built from this neuronctl's own files into dist/].")
@click.option("--neuronctl-spec", "tool_spec", metavar="SPEC",
              help="Install neuronctl in the image by this requirement instead (neuronctl==V "
              "from your own index, neuronctl @ URL).")
def setup(settings: SetupSettings, os_name: str | None, key_fingerprint: str | None,
          chip: str | None, with_python: bool, venv: str | None, yes: bool, fmt: str | None,
          output: Path | None, allow_unsupported: bool, dockerfile: bool,
          base: str, lock_name: str | None, tool_wheel: str | None, tool_spec: str | None) -> int:
    """Plan the Neuron system layer for a release: repository and key, kernel headers, driver,
    runtime, collectives, tools, hold, reload, then doctor. Nothing changes without --yes."""
    from neuronctl.chips import get_chip
    from neuronctl.errors import InputError
    from neuronctl.ops.output_path import check_output_file

    release, sysroot = settings.release, settings.sysroot
    key_from = "--key-fingerprint" if key_fingerprint is not None else "default"
    key_fingerprint = key_fingerprint or KEY_FINGERPRINT
    check_output_file(output, "-o")
    app = get_app()
    fmt = app.printer.format_of(fmt)
    manifest = app.manifest()
    chosen = manifest.get(release) if release else manifest.default
    repo_setting = settings.system_repo  # a trust root: never a project file's
    repo = repo_setting.value
    if chip:
        chip = get_chip(chip).id
    if dockerfile:
        if yes or with_python:
            raise InputError("--dockerfile writes a file: it takes neither --yes nor --with-python")
        lock, lock_from = _lock(lock_name, settings)
        return _dockerfile(chosen, DockerfileArgs(base, lock, lock_from, repo, key_fingerprint,
                                                  allow_unsupported, tool_wheel, tool_spec),
                           output)
    if tool_wheel or tool_spec:
        raise InputError("--neuronctl-wheel and --neuronctl-spec are for --dockerfile")
    from neuronctl.ops.setup.facts import read_target
    from neuronctl.ops.setup.model import SetupRequest
    from neuronctl.ops.setup.plan import make_plan

    target, facts = read_target(sysroot, os_name)
    neuronctl, python = own_paths()
    request = SetupRequest(chosen, target, facts, repo, key_fingerprint, with_python,
                           venv or f"/opt/neuronctl/venv-{chosen.version}", allow_unsupported, chip,
                           repo_from=repo_setting.source.label if repo_setting.source.kind
                           != "config" else f"`system_repo` in {repo_setting.source.label}",
                           key_from=key_from,
                           release_data=f"release data {manifest.source}",
                           value_sources=manifest.sources, neuronctl=neuronctl, python=python)
    plan = make_plan(request)
    if yes:
        return _apply(plan, fmt, sysroot is not None or os_name is not None)
    return _write_plan(plan, fmt, output)


def own_paths() -> tuple[str, str]:
    """This neuronctl's command and interpreter by absolute path, for the steps to run (never a
    name looked up later, from a directory or a PATH entry nobody checked): the command beside
    the interpreter (a venv's bin/), else the one on PATH where PATH names it absolutely."""
    import shutil
    import sys

    python = os.path.abspath(sys.executable)  # not resolved: a venv's python is a link
    beside = Path(python).parent / "neuronctl"
    found = shutil.which("neuronctl")
    if not beside.is_file() and found and os.path.isabs(found):
        return found, python
    return str(beside), python


def _write_plan(plan: SetupPlan, fmt: str, output: Path | None) -> int:
    from neuronctl.cli.setup_report import PlanView

    app = get_app()
    if output is None:
        app.printer.emit(PlanView(plan), fmt)
        return 0
    app.printer.write_file(PlanView(plan), fmt, output)
    if fmt != "json":
        app.console(stderr=True).print(f"wrote {output}", markup=False)
    return 0


def _apply(plan: SetupPlan, fmt: str, elsewhere: bool) -> int:
    from neuronctl.cli.progress import MessageLines
    from neuronctl.cli.setup_report import ApplyView
    from neuronctl.errors import InputError
    from neuronctl.ops.setup.apply import apply_plan

    if elsewhere:
        raise InputError("--yes applies to this host: it takes neither --sysroot nor --os",
                         hint="write a script for the other host with --format sh")
    app = get_app()
    steps = MessageLines(lambda: app.console(stderr=True), shown=app.printer.chatty)
    outcome = apply_plan(plan, steps, is_root=os.geteuid() == 0)
    app.printer.emit(ApplyView(plan, outcome), "json" if fmt == "json" else "text")
    return 0 if outcome.ok else 1


class DockerfileArgs(Struct, frozen=True):
    """The options `setup --dockerfile` reads, as given (each is checked in _dockerfile)."""

    base: str
    lock: str
    lock_from: str
    """How an error names the lock: --lock, or config `lock` (its default)."""
    repo: str | None
    fingerprint: str
    allow_unsupported: bool
    wheel: str | None
    spec: str | None


def _dockerfile(release: Release, args: DockerfileArgs, output: Path | None) -> int:
    """Every check first (base and its OS rules, lock, repository, key, wheel or spec), then
    neuronctl's own wheel built when none is given, then the file: bad input changes nothing."""
    from neuronctl.cli.setup_report import DockerfileView
    from neuronctl.errors import InputError
    from neuronctl.ops.setup import dockerfile as df
    from neuronctl.ops.setup.plan import check_fingerprint, check_repo_url

    if args.wheel and args.spec:
        raise InputError("--neuronctl-wheel and --neuronctl-spec: give one")
    context = _context()
    df.check_base(args.base)
    notes = df.check_base_rules(release, args.base, args.allow_unsupported)
    df.check_lock_present(args.lock, context, args.lock_from)
    repo = check_repo_url(args.repo, "--repo") if args.repo else None
    fingerprint = check_fingerprint(args.fingerprint, "--key-fingerprint")
    tool = df.spec_source(args.spec) if args.spec else \
        df.wheel_source(args.wheel, context) if args.wheel else None
    app = get_app()
    say = app.console(stderr=True)
    if tool is None:
        tool = _own_wheel(context)
        say.print(f"wrote {tool.wheel} (neuronctl from {tool.note}; sha256 {tool.sha256}); the "
                  "Dockerfile copies it from the build context", markup=False)
    for note in notes:
        say.print(f"note: {note}", markup=False)
    text = df.render_dockerfile(release, base=args.base, lock=args.lock, repo=repo,
                                fingerprint=fingerprint, tool=tool)
    view = DockerfileView(release.version, text, output)
    if output is not None:
        app.printer.write_file(view, "text", output)
    app.printer.emit(view)
    return 0


def _lock(given: str | None, settings: SetupSettings) -> tuple[str, str]:
    """The lock the Dockerfile copies, and how an error names it: --lock, else config `lock` (the
    lock `neuronctl lock` writes: from its file's folder, spelled from the working directory, the
    build context), else pylock.toml. Either is a PEP 751 lock's name inside the context: a
    project's config names the file, so it must not name any other file (a .env) for the image."""
    from packaging.pylock import is_valid_pylock_path

    from neuronctl.errors import InputError
    from neuronctl.ops.setup.dockerfile import check_lock_name

    lock, where = given or "pylock.toml", "--lock"
    configured = None if given is not None else settings.config_lock
    if configured is not None:
        lock, where = configured, f"config `lock` ({settings.config_lock_file})"
        path, context = Path(configured), _context()
        if path.is_absolute() and path.is_relative_to(context):
            lock = str(path.relative_to(context))  # else refused below: outside the context
    hint = "give --lock NAME, a lock inside the build context (the working directory)"
    try:
        check_lock_name(lock, where)
    except InputError as refused:
        raise InputError(refused.message, hint=hint) from None
    if not is_valid_pylock_path(Path(lock)):
        raise InputError(f"{where} names {lock}, not a lock the Dockerfile can install (a PEP 751 "
                         "lock, pylock.toml or pylock.NAME.toml)", hint=hint)
    return lock, where


def _context() -> Path:
    """The build context: the working directory."""
    from neuronctl.config import working_directory

    return working_directory()


def _own_wheel(context: Path) -> ToolSource:
    from neuronctl.ops.setup.dockerfile import ToolSource
    from neuronctl.ops.setup.wheel import build_self_wheel

    built = build_self_wheel(context / "dist")
    return ToolSource(wheel=f"dist/{built.path.name}", sha256=built.sha256, note=built.source)
