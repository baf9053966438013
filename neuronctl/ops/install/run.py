"""`neuronctl install` as one operation, a pipeline of named steps; nothing half-done.

1. settings: resolved by the CLI (request.py); here the --write-lock path is checked and the
   target taken after its turn (target.py; env_mutex.py: one install per environment at a time);
2. the lock for this host's hardware (--lock: the Neuron lock or its GPU fallback;
   ops/lock/choice.py), or none for a fresh resolution;
3. the source: the lock's selection, from a wheelhouse with --find-links, or a resolution
   (source.py, find_links.py, resolution.py);
4. the plan and its policy, the engine's files and commands (plan.py);
5. the preflight: Python, chip, rules, engine, --offline (preflight.py);
6. apply: the engine installs the exact files (each from its recorded URL, verified against its
   sha256 as it streams, all fetched before the environment is touched) after removals are
   confirmed (apply.py; failure.py reports what a failed one changed);
7. the check: the doctor on the target (check.py).

Each fact is gathered once and handed on: the hardware to the lock choice and the doctor, the lock
(read and validated once) to the source and to the doctor's lock.drift, the manifest to
everything. What runs beside the main line (the target's inspection, a new venv made while the
install is planned, the doctor's inspection and modules while the engine runs) is behind
background.py's start/result/cancel.
"""

from __future__ import annotations

import functools
from contextlib import ExitStack
from typing import TYPE_CHECKING

from neuronctl.backend.external_tool import run_engine
from neuronctl.cache_dir import user_cache_dir
from neuronctl.ops.install.apply import ApplyFailure, apply, early_venv
from neuronctl.ops.install.background import Background
from neuronctl.ops.install.check import Prepared, check
from neuronctl.ops.install.env_mutex import environment_lock
from neuronctl.ops.install.find_links import local_label
from neuronctl.ops.install.outcome import InstallOutcome, PlanReady
from neuronctl.ops.install.plan import Confirm, Planned, confirm_removals, plan
from neuronctl.ops.install.preflight import check_engine, check_offline, rule_notes
from neuronctl.ops.install.request import InstallRequest
from neuronctl.ops.install.requirements import shown_lines
from neuronctl.ops.install.source import Sourced, pythons, source
from neuronctl.ops.install.target import InstallTarget, resolve_target
from neuronctl.ops.lock.choice import PickedLock, pick_lock
from neuronctl.ops.output_path import check_output_file
from neuronctl.ops.reporter import Info, Note, Reporter, Waiting, Warn
from neuronctl.probes.hardware import HardwareReport, detect_hardware
from neuronctl.probes.pyenv import Inspection, PythonEnv
from neuronctl.probes.sysroot import SysRoot

if TYPE_CHECKING:
    from neuronctl.backend.snapshot import Snapshot
    from neuronctl.manifest import Manifest


def install(request: InstallRequest, reporter: Reporter, *,
            confirm: Confirm | None = None) -> InstallOutcome:
    """Install what `request` asks for. Events go to `reporter` (the engine's own progress goes to
    the terminal with request.show_engine); `confirm` asks a person to confirm removals (None:
    nobody can, so --yes is needed)."""
    check_output_file(request.write_lock, "--write-lock")  # before the install, not after it
    host = Host(request)
    with ExitStack() as held:  # the environment's install mutex, until the operation ends
        target = take_target(request, host, reporter, held)
        seed = target.new_venv and not request.engine.engine.venv_has_pip
        # The interpreter runs while the rest is loaded and prepared. A new venv starts empty, so
        # only the base interpreter's facts matter there, not what the base has installed.
        inspection = Inspection(target.python, timeout=request.timeout, packages=not target.new_venv,
                                bundled_pip=seed, tags="unless-derivable")
        early = None  # a new venv is made while the install is planned
        if target.new_venv and not request.dry_run:
            early = early_venv(target, request.engine.engine, timeout=request.timeout)
        prepared = Prepared(request.check, request.timeout, reporter)
        try:
            env, sourced, planned = _prepare(request, host, target, inspection, seed, reporter)
            return _finish(request, host, env, sourced, planned, early, prepared, reporter, confirm)
        except BaseException:
            if early is not None:  # stopped before the engine took it: undo it
                early.cancel()
            raise
        finally:
            prepared.cancel()


class Host:
    """What this host and the request come to, each read once, when first needed (the lock is
    read while the target's interpreter starts, unless a new venv's base Python needs it)."""

    def __init__(self, request: InstallRequest) -> None:
        self.request = request
        self.sysroot = SysRoot.from_env(request.sysroot)

    @functools.cached_property
    def manifest(self) -> Manifest:
        return self.request.manifest()

    @functools.cached_property
    def hardware(self) -> HardwareReport:
        return detect_hardware(self.sysroot)

    @functools.cached_property
    def picked(self) -> PickedLock | None:
        """Step 2: the lock for this host (--lock and its fallbacks, by the hardware and
        --device), read and validated once (a bad lock is exit 2 before any change)."""
        r = self.request
        return None if r.lock is None else pick_lock(r.lock, r.device, self.hardware, self.sysroot)

    @functools.cached_property
    def pythons(self) -> tuple[str, ...]:
        return pythons(self.request, self.picked, self.manifest)


def take_target(request: InstallRequest, host: Host, reporter: Reporter,
                held: ExitStack) -> InstallTarget:
    """The target, after its turn: another install into it is waited for (a dry run changes
    nothing, so takes no turn), then the target is looked at again, as that one left it."""
    def resolve() -> InstallTarget:  # not run here to check it is a Python: the inspection does
        return resolve_target(request.python, request.venv, request.venv_python,
                              lambda: host.pythons, run_it=False)

    target = resolve()
    if request.dry_run:
        return target

    def on_wait() -> None:
        reporter.emit(Waiting(f"waiting for another neuronctl install into "
                              f"{target.environment} to finish"))

    if held.enter_context(environment_lock(target.environment, user_cache_dir(), on_wait)):
        target = resolve()
    return target


def _prepare(request: InstallRequest, host: Host, target: InstallTarget, inspection: Inspection,
             seed: bool, reporter: Reporter) -> tuple[PythonEnv, Sourced, Planned]:
    """Steps 2 to 5: the lock, the source, the plan, the preflight; nothing changed yet."""
    picked = host.picked  # the hardware and the lock are read while the interpreter starts
    announce_lock(picked, request.device, reporter)
    env = inspection.result()
    check_engine(request.engine, target, env)
    sourced = source(request, env, picked, host.hardware, host.manifest, reporter)
    found = sourced.source
    rule_notes(host.manifest, found.release, found.framework, env.python, host.hardware,
               host.sysroot, request.allow_unsupported, reporter)  # exit 2 if forbidden
    planned = plan(env, target, sourced, request.engine.engine, offline=request.offline,
                   seed=seed, reporter=reporter)
    if request.offline:
        check_offline(request.engine.engine, planned.files)
    reporter.emit(PlanReady("plan", "plan", plan=planned.plan, target=planned.target, source=found,
                            choice=request.engine, lock_choice=picked.choice if picked else None))
    return env, sourced, planned


def announce_lock(picked: PickedLock | None, device: str, reporter: Reporter) -> None:
    if picked is None or not (picked.worth_saying or device != "auto"):
        return
    reporter.emit(Note(f"lock: {picked.choice.path} ({picked.choice.reason})"))
    for warning in picked.choice.warnings:
        reporter.emit(Warn(warning))


def _finish(request: InstallRequest, host: Host, env: PythonEnv, sourced: Sourced,
            planned: Planned, early: Background[None] | None, prepared: Prepared,
            reporter: Reporter, confirm: Confirm | None) -> InstallOutcome:
    """Steps 6 and 7 (none in a dry run): apply, then check."""
    target, picked = planned.target, host.picked
    outcome = functools.partial(
        InstallOutcome, target, sourced.source, request.engine, planned.plan, planned.commands,
        request.dry_run, requirements=shown_lines(planned.files),
        lock_choice=picked.choice if picked else None)
    doctor = functools.partial(check, request.check, target, sourced.source, picked,
                               host.hardware, host.manifest, host.sysroot, request.timeout)
    if request.dry_run:
        return outcome(applied=False)
    if planned.plan.empty:
        reporter.emit(Info(f"{target.describe()}: already matches "
                           f"{sourced.source.describe}; nothing to do"))
        if early is not None:
            early.cancel()  # nothing to install: no venv, as before
        # A new venv's inspection was of its base Python, and nothing made the venv.
        return outcome(applied=False, doctor=doctor(unchanged=None if target.new_venv else env))
    confirm_removals(planned.plan, request.yes, confirm)
    apply_planned(request, planned, sourced, env, early, prepared, reporter)
    wrote = sourced.write_lock(request.write_lock)
    if wrote is not None:
        reporter.emit(Info(f"wrote {wrote}"))
    return outcome(applied=True, doctor=doctor(prepared=prepared), wrote_lock=wrote)


def apply_planned(request: InstallRequest, planned: Planned, sourced: Sourced, before: PythonEnv,
                  early: Background[None] | None, prepared: Prepared, reporter: Reporter) -> None:
    """Step 6: the engine applies the plan; a failure is reported with what it changed."""
    target, files, engine = planned.target, planned.files, request.engine.engine

    def watch() -> Snapshot:  # an existing environment: the one inspected before
        from neuronctl.backend.snapshot import existing_dirs, take  # only an existing one's apply

        return take(existing_dirs(before.site_dirs))

    show = request.show_engine
    if not show and files:  # the engine says nothing until it is done: say what it does
        reporter.emit(Note(f"{engine.name} fetches {len(files)} file(s), "
                           "each checked against its sha256, then installs"))
    try:
        apply(planned.plan, target, engine, files, sourced.routing.credentials(),
              run=functools.partial(run_engine, show=show), offline=request.offline,
              watch=None if target.new_venv else watch, early=early,
              engine_starting=functools.partial(prepared.engine_starting, target, before),
              started=prepared.engine_started, timeout=request.timeout,
              local_label=functools.partial(local_label, request.find_links))
    except ApplyFailure as failure:
        from neuronctl.ops.install.failure import failure_error  # only a failure loads it

        raise failure_error(failure, target, engine, before, sourced.routing.url_for,
                            wheelhouse=request.find_links, files=files) from None
    reporter.emit(Info(f"applied: {len(planned.plan.applies)} installed, "
                       f"{len(planned.plan.removals)} removed ({target.final_python})"))
