"""`neuronctl install`: plan, verify, apply, check; nothing half-done.

Order: resolve the target and the source (a lock or a fresh resolution), preflight (Python,
chip), plan (a pure diff), confirm removals, download and verify every file, apply from those
local files only with the chosen engine, then run the doctor on the target.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from neuronctl.cli.app import App, get_app
from neuronctl.cli.cmd_lock import make_request, request_options
from neuronctl.cli.common import sysroot_option, timeout_value
from neuronctl.errors import InputError, OperationFailed

if TYPE_CHECKING:
    from packaging.pylock import Pylock


@click.command("install")
@request_options
@click.option("--lock", "lock_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Install exactly what this pylock.toml selects for the target.")
@click.option("--python", "python", metavar="PATH", help="Install into this interpreter's environment.")
@click.option("--venv", type=click.Path(path_type=Path, file_okay=False),
              help="Install into this venv, creating it if absent (removed again if anything fails).")
@click.option("--venv-python", metavar="X.Y|PATH", help="Python for a new --venv (default: the lowest "
              "the release supports that this machine has).")
@click.option("--backend", type=click.Choice(["auto", "pip", "uv"]), default=None,
              help="Installer engine (default: config backend, NEURONCTL_BACKEND, else auto).")
@click.option("--dry-run", is_flag=True, help="Print the plan and the engine commands; change nothing.")
@click.option("-y", "--yes", is_flag=True, help="Confirm removals (legacy XLA packages) without asking.")
@click.option("--write-lock", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write the resolution as a pylock.toml.")
@click.option("--no-check", is_flag=True, help="Do not run the doctor on the target afterwards.")
@click.option("--json", "as_json", is_flag=True, help="The plan and the outcome as JSON on stdout.")
@sysroot_option
def install(release: str | None, torch: str | None, with_: tuple[str, ...], indexes: tuple[str, ...],
            routes: tuple[str, ...], latest: bool, offline: bool, timeout: float | None,
            lock_path: Path | None, python: str | None, venv: Path | None, venv_python: str | None,
            backend: str | None, dry_run: bool, yes: bool, write_lock: Path | None, no_check: bool,
            as_json: bool, sysroot: Path | None) -> int:
    """Install a Neuron PyTorch stack into an environment: pinned, verified, all or nothing."""
    from neuronctl.backend.choose import choose_backend
    from neuronctl.ops.install.target import resolve_target
    from neuronctl.probes.pyenv import Inspection

    app = get_app()
    config = app.config()
    show = not app.quiet and not as_json
    seconds = timeout_value(timeout, config.get("timeout"), 30.0)
    if lock_path is not None and (with_ or latest or write_lock):
        raise InputError("--lock installs exactly the lock; --with, --latest and --write-lock need a "
                         "fresh resolution (drop --lock)")

    # The lock is read (once) only when first needed: the target's inspection starts before it,
    # unless a new venv needs the lock's Pythons to pick its base interpreter.
    @functools.cache
    def read_lock() -> Pylock | None:
        from neuronctl.resolvers.pylock_read import load_pylock

        return None if lock_path is None else load_pylock(lock_path)

    @functools.cache
    def preferred() -> tuple[str, ...]:
        lock = read_lock()
        return _preferred_pythons(app, release, torch) if lock is None else _lock_pythons(lock)

    choice = choose_backend(backend, config.get("backend"))
    target = resolve_target(python, venv, venv_python, preferred)
    if not dry_run and _waited_for_turn(target, show):  # what the other install did counts
        target = resolve_target(python, venv, venv_python, preferred)
    seed = target.new_venv and not choice.engine.venv_has_pip
    # The interpreter runs while the rest of neuronctl loads. A new venv starts empty, so only the
    # base interpreter's facts matter there, not what the base has installed.
    inspection = Inspection(target.python, timeout=seconds, packages=not target.new_venv,
                            bundled_pip=seed)
    lock = read_lock()  # a bad lock is exit 2 before anything changes

    from neuronctl.cli.install_report import InstallOutcome, print_plan
    from neuronctl.ops.index_routing import build_routing
    from neuronctl.ops.install.apply import download_all, engine_commands, planned_path
    from neuronctl.resolvers.http_fetch import cached_fetcher
    from neuronctl.resolvers.targets import target_for_interpreter

    hardware = _detect_hardware(sysroot)  # while the interpreter is still being inspected
    env = inspection.result()
    manifest = app.manifest()
    tgt = target_for_interpreter(env.python, env.libc, env.machine)
    if choice.engine.name == "pip" and not target.new_venv and env.get("pip") is None:
        raise InputError(f"{target.final_python} has no pip, and the pip engine is its own pip "
                         f"({choice.reason})", hint="use --backend uv, or install pip there first")
    request = resolved = None
    if lock_path is not None and lock is not None:
        from neuronctl.ops.install.source import from_lock

        source = from_lock(lock_path, lock, env, tgt, manifest, release or config.get("release"))
        _beta_note(manifest, source.release, show)
        _preflight_chip(hardware, source.framework, show)
    else:
        from neuronctl.ops.install.source import InstallSource, wanted_from_resolution
        from neuronctl.ops.lock.resolve import resolve_request

        _check_python(preferred(), env.python)
        request = make_request(app, release=release, torch=torch, pythons=(tgt.python_minor,),
                               platforms=(tgt.platform,), with_=with_, indexes=indexes, routes=routes,
                               latest=latest)
        _beta_note(manifest, request.plan.release.version, show)
        _preflight_chip(hardware, request.plan.framework, show)
        resolved = resolve_request(request, offline=offline, timeout=seconds)
        plan_ = request.plan
        source = InstallSource(wanted_from_resolution(resolved.packages, tgt, resolved.hash_of),
                               plan_.release.version, plan_.framework,
                               f"Neuron {plan_.release.version} with torch {plan_.framework.torch}, "
                               "resolved now")
    plan = _plan(env, source)
    if seed and not any(w.name == "pip" for w in source.wanted):
        if env.bundled_pip:
            target = replace(target, seed_pip=Path(env.bundled_pip))
        elif show:
            click.echo(f"warning: {target.python} ships no bundled pip wheel; the new venv gets no pip",
                       err=True)
    if show:
        from neuronctl.cli.install_report import wants_color

        print_plan(plan, source, target, choice, verbose=app.verbose, color=wants_color(app.color))
    routing = request.routing if request is not None else \
        build_routing(config, indexes, routes, recorded=source.indexes)
    fetcher, cache_root = cached_fetcher(offline=offline, timeout=seconds,
                                         credentials=routing.credentials())
    planned = {w.name: planned_path(cache_root, w) for w in source.wanted}
    commands = tuple(tuple(c) for c in engine_commands(plan, planned, target, choice.engine))

    def outcome(applied: bool, doctor: Any = None) -> InstallOutcome:
        return InstallOutcome(target, source, choice, plan, commands, dry_run, applied, doctor)

    if dry_run:
        return _finish(outcome(False), as_json, show)
    if plan.empty:
        if show:
            click.echo(f"{target.describe()}: already matches {source.describe}; nothing to do")
        return _finish(outcome(False, _after(app, target, source, hardware, no_check, seconds, sysroot,
                                             not as_json)), as_json, show)
    if plan.removals and not yes:
        names = ", ".join(f"{c.name} {c.old}" for c in plan.removals)
        if as_json or not sys.stdin.isatty():
            raise InputError(f"the plan removes {names}; pass --yes to confirm")
        if not click.confirm(f"Remove {names}?", default=False):
            raise OperationFailed("not confirmed; nothing changed")
    wanted = [c.wanted for c in plan.applies if c.wanted]

    def download() -> dict[str, Path]:
        files = download_all(wanted, fetcher, cache_root, show=show,
                             console=lambda: app.console(stderr=True))
        if not no_check:  # not sooner: the download wants both cores of a small host
            _preload("rich.table", "neuronctl.cli.cmd_doctor")
        return files

    _apply(plan, target, choice.engine, env, download, show, routing)
    if write_lock is not None and resolved is not None and request is not None:
        _write_lock(write_lock, resolved, request, show)
    doctor = _after(app, target, source, hardware, no_check, seconds, sysroot, not as_json)
    return _finish(outcome(True, doctor), as_json, show)


def _waited_for_turn(target: Any, show: bool) -> bool:
    """Take the target environment's install lock for the rest of the command (released when
    the command ends, however it ends); True if another install held it first."""
    from neuronctl.ops.install.env_mutex import environment_lock
    from neuronctl.resolvers.http_cache import user_cache_dir

    def on_wait() -> None:
        if show:
            click.echo(f"waiting for another neuronctl install into {target.environment} to finish",
                       err=True)

    lock = environment_lock(target.environment, user_cache_dir(), on_wait)
    return bool(click.get_current_context().with_resource(lock))


def _finish(result: Any, as_json: bool, show: bool) -> int:
    if as_json:
        from neuronctl.cli.output import emit_json

        emit_json(result.to_json())
    elif show and result.dry_run:
        from neuronctl.cli.install_report import print_commands

        print_commands(result.commands)
    return int(result.exit_code)


def _preferred_pythons(app: App, release: str | None, torch: str | None) -> tuple[str, ...]:
    from neuronctl.resolvers.stack_plan import pick_release, plan_stack

    config = app.config()
    rel = pick_release(app.manifest(), release or config.get("release"))
    return tuple(plan_stack(rel, torch or config.get("torch"), False).framework.python)


def _lock_pythons(lock: Pylock) -> tuple[str, ...]:
    """Pythons a lock is for, lowest first: its recorded targets, else those its requires-python
    admits (so a new --venv gets an interpreter the lock can install into)."""
    tool = (lock.tool or {}).get("neuronctl") or {}
    targets = tool.get("targets") if isinstance(tool, dict) else None
    if isinstance(targets, list):
        found = [str(t.get("python")) for t in targets if isinstance(t, dict) and t.get("python")]
        if found:
            return tuple(dict.fromkeys(found))
    spec = lock.requires_python
    if spec is None:
        return ()
    return tuple(v for v in (f"3.{m}" for m in range(10, 16)) if spec.contains(f"{v}.0"))


def _check_python(supported: tuple[str, ...], version: str) -> None:
    minor = ".".join(version.split(".")[:2])
    if supported and minor not in supported:
        raise InputError(f"the target is Python {version}; this stack needs Python "
                         f"{', '.join(supported)}",
                         hint=f"install into a new venv: --venv DIR --venv-python {supported[0]}")


def _detect_hardware(sysroot: Path | None) -> Any:
    from neuronctl.cli.common import check_sysroot
    from neuronctl.probes.hardware import detect_hardware
    from neuronctl.probes.sysroot import SysRoot

    return detect_hardware(SysRoot.from_env(check_sysroot(sysroot)))


def _beta_note(manifest: Any, version: str | None, show: bool) -> None:
    """Once, on stderr, when the release being installed is not a GA one (the default, 2.33.0,
    is a beta)."""
    release = manifest.find(version) if version and show else None
    if release is not None and release.status != "ga":
        click.echo(f"note: Neuron {release.version} is a {release.status} release "
                   "(choose another with --release; `neuronctl releases` lists them)", err=True)


def _preflight_chip(hardware: Any, framework: Any, show: bool) -> None:
    if framework is None:
        return
    if hardware.present and hardware.chip and hardware.chip not in framework.chips:
        raise InputError(f"this host has {hardware.chip}; the {framework.backend} torch-neuronx "
                         f"{framework.torch_neuronx} runs on {', '.join(framework.chips)}",
                         hint="pick a release line for this chip (see `neuronctl releases`)")
    if not hardware.present and show:
        click.echo("warning: no Neuron hardware here; preparing an environment for another host",
                   err=True)


def _plan(env: Any, source: Any) -> Any:
    from neuronctl.backend.plan import diff
    from neuronctl.probes.legacy import detect_legacy
    from neuronctl.torch_neuronx import classify

    installed = {d.name: d.version for d in env.distributions.values()}
    remove: dict[str, str] = {}
    native = any(w.name == "torch-neuronx" and classify(w.version).backend == "native"
                 for w in source.wanted)
    if native:
        legacy = detect_legacy(env, {})
        for name in legacy.legacy_packages:
            remove[name] = "legacy XLA stack, replaced by native TorchNeuron"
        for text in legacy.placeholders:
            remove[text.split(" ", 1)[0]] = "PyPI placeholder (import raises 'WRONG PACKAGE')"
    return diff(installed, source.wanted, remove)


def _write_lock(path: Path, resolved: Any, request: Any, show: bool) -> None:
    from neuronctl.cli.output import write_atomic
    from neuronctl.resolvers.lockfile import build_pylock, render_pylock

    write_atomic(path, render_pylock(build_pylock(resolved.packages, request.inputs(), resolved.hash_of)))
    if show:
        click.echo(f"wrote {path}")


def _apply(plan: Any, target: Any, engine: Any, before: Any, download: Any, show: bool,
           routing: Any) -> None:
    from neuronctl.backend.snapshot import site_dirs, take
    from neuronctl.cli.install_report import failure_error
    from neuronctl.ops.install.apply import ApplyFailure, fetch_and_apply

    def watch() -> Any:
        return take(site_dirs(target.final_python))

    try:
        fetch_and_apply(plan, target, engine, download,
                        watch=None if target.new_venv else watch)
    except ApplyFailure as failure:
        raise failure_error(failure, target, before, routing) from None
    if show:
        click.echo(f"applied: {len(plan.applies)} installed, {len(plan.removals)} removed "
                   f"({target.final_python})")


def _preload(*modules: str) -> None:
    """Import modules on a thread while the main one mostly waits (on the target interpreter, the
    download, the engine), so the step that needs them starts at once."""
    import importlib
    import threading

    def load() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # the real import later reports any failure
                return

    threading.Thread(target=load, name="neuronctl-preload", daemon=True).start()


def _after(app: App, target: Any, source: Any, hardware: Any, no_check: bool, seconds: float,
           sysroot: Path | None, as_text: bool) -> Any:
    """The doctor's report on the target (None with --no-check)."""
    if no_check:
        return None
    from neuronctl.cli.doctor_report import print_text
    from neuronctl.ops.doctor.facts import Facts
    from neuronctl.ops.doctor.run import run_doctor, select_checks
    from neuronctl.probes.sysroot import SysRoot

    ids = select_checks((), (), source.lock, probe=hardware.present)
    facts = Facts(python=target.final_python, sysroot=SysRoot.from_env(sysroot),
                  manifest=app.manifest(), release=source.release, device="auto",
                  timeout=max(seconds, 60.0), lock=source.lock)
    report = run_doctor(facts, ids, False, max(seconds, 60.0))
    if as_text:
        print_text(report, app.console(), verbose=app.verbose, quiet=app.quiet)
    return report
