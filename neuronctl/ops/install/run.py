"""`neuronctl install` as one operation, a pipeline of named steps; nothing half-done.

1. settings: resolved by the CLI into one typed InstallRequest (request.py; no config here);
2. target: the environment, after its turn (target.py; env_mutex.py: one install per environment
   at a time), inspected beside the next steps;
3. lock: the one for this host's hardware (--lock: the Neuron lock or its GPU fallback;
   ops/lock/choice.py), or none for a fresh resolution;
4. stack: what the install is for, known before anything is fetched: the lock's selection for
   the target, or a fresh resolution's request (source.stack_for);
5. preflight: the engine, the chip and the documented rules, before any fetch (preflight.py);
6. source: the wheels, from the lock (--find-links: a wheelhouse) or a resolution, the network
   (source.source, find_links.py, resolution.py);
7. plan: its policy, the engine's files and commands, --offline's feasibility (plan.py);
8. apply: the engine installs the exact files (each from its recorded URL, verified against its
   sha256 as it streams, all fetched before the environment is touched) after removals are
   confirmed (apply.py; failure.py reports what a failed one changed);
9. check: the doctor on the target, through its own entry point (check.py).

Each step is a function with a typed input and output; each fact is gathered once and handed on:
the hardware to the lock choice and the doctor, the lock (read and validated once) to the stack
and to the doctor's lock.drift, the manifest to everything. What runs beside the main line (the
target's inspection, a new venv made while the install is planned, the doctor's inspection and
modules while the engine runs) is `Beside`, over background.py's start/result/cancel.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct

from neuronctl.cache_dir import user_cache_dir
from neuronctl.ops.install.check import CheckInput, Prepared, check
from neuronctl.ops.install.env_mutex import environment_lock
from neuronctl.ops.install.outcome import InstallOutcome, PlanReady
from neuronctl.ops.install.target import InstallTarget, resolve_target
from neuronctl.ops.output_path import check_output_file
from neuronctl.ops.reporter import Info, Note, Reporter, Waiting, Warn
from neuronctl.probes.pyenv import Inspection, PythonEnv
from neuronctl.probes.sysroot import SysRoot

# Only what takes the target's turn and starts its inspection is imported above. The steps after
# it (the lock, the stack, the preflight, the source, the plan, the engine, the doctor) are
# imported in install() once the target's interpreter runs, so their import time overlaps its
# start, and what an install does not reach (apply with nothing to do, the doctor with
# --no-check) it never imports (issue 36).
if TYPE_CHECKING:
    from neuronctl.backend.snapshot import Snapshot
    from neuronctl.ops.doctor.report import DoctorReport
    from neuronctl.ops.install.background import Background
    from neuronctl.ops.install.plan import Confirm, Planned
    from neuronctl.ops.install.request import InstallRequest
    from neuronctl.ops.install.source_types import Sourced
    from neuronctl.ops.lock.choice import PickedLock
    from neuronctl.probes.hardware import HardwareReport
    from neuronctl.release.model import Manifest


def install(request: InstallRequest, reporter: Reporter, *,
            confirm: Confirm | None = None) -> InstallOutcome:
    """Install what `request` asks for. Events go to `reporter` (the engine's own progress goes to
    the terminal with request.show_engine); `confirm` asks a person to confirm removals (None:
    nobody can, so --yes is needed)."""
    check_output_file(request.write_lock, "--write-lock")  # before the install, not after it
    host = Host(request, reporter)
    with ExitStack() as held:  # the environment's install mutex, until the operation ends
        target = take_target(host, held)
        with beside(host, target) as work:
            from neuronctl.ops.install.plan import plan
            from neuronctl.ops.install.preflight import PreflightInput, preflight
            from neuronctl.ops.install.source import source, stack_for
            from neuronctl.resolvers.stack_plan import decided

            picked = choose_lock(host)
            manifest = host.manifest  # read while the interpreter still runs, as the lock was
            env = work.inspection.result()
            stack = stack_for(request, env, picked, manifest)
            preflight(PreflightInput(stack, target, env, request.engine, manifest,
                                     host.hardware, host.sysroot, request.allow_unsupported),
                      reporter)
            if request.dry_run and stack.wanted is not None:  # before anything needs the network
                reporter.emit(Info(decided(stack.wanted.plan)))
            sourced = source(request, stack, reporter)
            planned = plan(env, target, sourced, request.engine.engine, offline=request.offline,
                           seed=work.seed, reporter=reporter)
            reporter.emit(PlanReady("plan", "plan", plan=planned.plan, target=planned.target,
                                    source=sourced.source, choice=request.engine,
                                    lock_choice=picked.choice if picked else None))
            done = Done(env, sourced, planned, picked)
            if request.dry_run:
                return outcome(host, done, applied=False)
            if planned.plan.empty:
                return unchanged(host, done, work)
            wrote = apply_planned(host, done, work, confirm)
            report = check_target(host, done, prepared=work.prepared)
            return outcome(host, done, applied=True, doctor=report, wrote_lock=wrote)


class Host:
    """The request, this host and its reporter, each fact read once, when first needed (the lock
    is read while the target's interpreter starts, unless a new venv's base Python needs it)."""

    def __init__(self, request: InstallRequest, reporter: Reporter) -> None:
        self.request = request
        self.reporter = reporter
        self.sysroot = SysRoot.from_env(request.sysroot)

    @functools.cached_property
    def manifest(self) -> Manifest:
        return self.request.manifest()

    @functools.cached_property
    def hardware(self) -> HardwareReport:
        from neuronctl.probes.hardware import detect_hardware

        return detect_hardware(self.sysroot)

    @functools.cached_property
    def picked(self) -> PickedLock | None:
        """The lock for this host (--lock and its fallbacks, by the hardware and --device),
        read and validated once (a bad lock is exit 2 before any change)."""
        from neuronctl.ops.lock.choice import pick_lock

        r = self.request
        return None if r.lock is None else pick_lock(r.lock, r.device, self.hardware, self.sysroot)

    @functools.cached_property
    def pythons(self) -> tuple[str, ...]:
        from neuronctl.ops.install.source import pythons

        return pythons(self.request, self.picked, self.manifest)


class Done(Struct, frozen=True):
    """What the steps up to the plan found: the target as inspected, the source, the plan, and
    the lock chosen (None: a fresh resolution)."""

    env: PythonEnv
    sourced: Sourced
    planned: Planned
    picked: PickedLock | None


def take_target(host: Host, held: ExitStack) -> InstallTarget:
    """Step 2: the target, after its turn: another install into it is waited for (a dry run
    changes nothing, so takes no turn), then the target is looked at again, as that one left
    it."""
    request = host.request

    def resolve() -> InstallTarget:  # not run here to check it is a Python: the inspection does
        return resolve_target(request.python, request.venv, request.venv_python,
                              lambda: host.pythons, run_it=False)

    target = resolve()
    if request.dry_run:
        return target

    def on_wait() -> None:
        host.reporter.emit(Waiting(f"waiting for another neuronctl install into "
                                   f"{target.environment} to finish"))

    if held.enter_context(environment_lock(target.environment, user_cache_dir(), on_wait)):
        target = resolve()
    return target


class Beside(Struct, frozen=True):
    """The work beside the main line: the target's inspection (started at once: the interpreter
    runs while the lock is read), the new venv being made (None: none, or a dry run), and what the
    check prepares while the engine runs."""

    inspection: Inspection
    early: Background[None] | None
    prepared: Prepared
    seed: bool
    """A new venv whose engine puts no pip in it: seeded with the base Python's bundled pip."""


@contextmanager
def beside(host: Host, target: InstallTarget) -> Iterator[Beside]:
    """Starts the work beside the main line; whatever ends the install early cancels it (a new
    venv the engine never took is removed again)."""
    request = host.request
    seed = target.new_venv and not request.engine.engine.venv_has_pip
    # A new venv starts empty, so only the base interpreter's facts matter there, not what the
    # base has installed.
    inspection = Inspection(target.python, timeout=request.timeout, packages=not target.new_venv,
                            bundled_pip=seed, tags="unless-derivable")
    early = None
    if target.new_venv and not request.dry_run:
        from neuronctl.ops.install.apply import early_venv  # only a new venv is made beside

        early = early_venv(target, request.engine.engine, timeout=request.timeout)
    work = Beside(inspection, early, Prepared(request.check, request.check_timeout, host.reporter),
                  seed)
    try:
        yield work
    except BaseException:
        if early is not None:  # stopped before the engine took it: undo it
            early.cancel()
        raise
    finally:
        work.prepared.cancel()


def choose_lock(host: Host) -> PickedLock | None:
    """Step 3: the lock for this host (None: a fresh resolution), said when it is worth saying
    (a fallback, a warning, or --device naming one)."""
    picked = host.picked  # the hardware and the lock are read while the interpreter starts
    if picked is None or not (picked.worth_saying or host.request.device != "auto"):
        return picked
    host.reporter.emit(Note(f"lock: {picked.choice.path} ({picked.choice.reason})"))
    for warning in picked.choice.warnings:
        host.reporter.emit(Warn(warning))
    return picked


def outcome(host: Host, done: Done, *, applied: bool, doctor: DoctorReport | None = None,
            wrote_lock: Path | None = None) -> InstallOutcome:
    from neuronctl.ops.install.requirements import shown_lines

    r, planned = host.request, done.planned
    return InstallOutcome(planned.target, done.sourced.source, r.engine, planned.plan,
                          planned.commands, r.dry_run, applied=applied, doctor=doctor,
                          wrote_lock=wrote_lock, requirements=shown_lines(planned.files),
                          lock_choice=done.picked.choice if done.picked else None)


def unchanged(host: Host, done: Done, work: Beside) -> InstallOutcome:
    """An empty plan: nothing to install, nothing made; the check still runs."""
    target = done.planned.target
    host.reporter.emit(Info(f"{target.describe()}: already matches "
                            f"{done.sourced.source.describe}; nothing to do"))
    if work.early is not None:
        work.early.cancel()  # nothing to install: no venv, as before
    # A new venv's inspection was of its base Python, and nothing made the venv.
    report = check_target(host, done, unchanged=None if target.new_venv else done.env)
    return outcome(host, done, applied=False, doctor=report)


def apply_planned(host: Host, done: Done, work: Beside, confirm: Confirm | None) -> Path | None:
    """Step 8: removals confirmed, the engine applies the plan (a failure is reported with what
    it changed), then --write-lock's lock is written; returns where (None: not asked)."""
    from neuronctl.backend.external_tool import run_engine
    from neuronctl.ops.install.apply import ApplyFailure, apply
    from neuronctl.ops.install.find_links import local_label
    from neuronctl.ops.install.plan import confirm_removals

    request, planned, sourced, before = host.request, done.planned, done.sourced, done.env
    target, files, engine = planned.target, planned.files, request.engine.engine
    confirm_removals(planned.plan, request.yes, confirm)

    def watch() -> Snapshot:  # an existing environment: the one inspected before
        from neuronctl.backend.snapshot import existing_dirs, take  # only an existing one's apply

        return take(existing_dirs(before.site_dirs))

    show = request.show_engine
    if not show and files:  # the engine says nothing until it is done: say what it does
        host.reporter.emit(Note(f"{engine.name} fetches {len(files)} file(s), "
                                "each checked against its sha256, then installs"))
    prepared = work.prepared
    try:
        apply(planned.plan, target, engine, files, sourced.routing.credentials(),
              run=functools.partial(run_engine, show=show), offline=request.offline,
              watch=None if target.new_venv else watch, early=work.early,
              engine_starting=functools.partial(prepared.engine_starting, target, before),
              started=functools.partial(prepared.engine_started, check_input(host, done)),
              timeout=request.timeout,
              local_label=functools.partial(local_label, request.find_links))
    except ApplyFailure as failure:
        from neuronctl.ops.install.failure import failure_error  # only a failure loads it

        raise failure_error(failure, target, engine, before, sourced.routing.url_for,
                            wheelhouse=request.find_links, files=files) from None
    host.reporter.emit(Info(f"applied: {len(planned.plan.applies)} installed, "
                            f"{len(planned.plan.removals)} removed ({target.final_python})"))
    wrote = sourced.write_lock(request.write_lock)
    if wrote is not None:
        host.reporter.emit(Info(f"wrote {wrote}"))
    return wrote


def check_target(host: Host, done: Done, *, prepared: Prepared | None = None,
                 unchanged: PythonEnv | None = None) -> DoctorReport | None:
    """Step 9: the doctor on the target (None with --no-check)."""
    if not host.request.check:
        return None
    return check(check_input(host, done), prepared=prepared, unchanged=unchanged)


def check_input(host: Host, done: Done) -> CheckInput:
    """What the check reads: the target as planned, the source, and the facts already read."""
    return CheckInput(done.planned.target, done.sourced.source, done.picked, host.hardware,
                      host.manifest, host.sysroot, host.request.check_timeout)
