"""`neuronctl install` as one operation: plan, verify, apply, check; nothing half-done.

Order: the target and its turn (the per-environment mutex), the source (a lock or a fresh
resolution), preflight (Python, chip, engine), the plan and its policy, confirmation of removals,
download and verify every file, apply from those local files only, then the doctor on the target.

Each fact is gathered once and handed on: the hardware to the doctor, the lock (read and
validated once) to the source and to the doctor's lock.drift, the manifest to everything, one
Fetcher (one HTTP session) to the resolution and the downloads.
"""

from __future__ import annotations

import functools
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from neuronctl.backend.choose import choose_backend
from neuronctl.backend.engine import Choice
from neuronctl.backend.plan import Plan
from neuronctl.ops.install.apply import engine_commands
from neuronctl.ops.install.outcome import InstallOutcome
from neuronctl.ops.install.plan_policy import Confirm, confirm_removals, make_plan
from neuronctl.ops.install.preflight import check_engine
from neuronctl.ops.install.request import InstallRequest
from neuronctl.ops.install.source import InstallSource, lock_pythons, stack_pythons
from neuronctl.ops.install.sourcing import Sourced, source_for
from neuronctl.ops.install.target import InstallTarget, resolve_target
from neuronctl.ops.reporter import Event, Reporter
from neuronctl.probes.hardware import HardwareReport, detect_hardware
from neuronctl.probes.pyenv import Inspection, PythonEnv
from neuronctl.probes.sysroot import SysRoot

if TYPE_CHECKING:
    from packaging.pylock import Pylock

    from neuronctl.manifest import Manifest
    from neuronctl.ops.doctor.report import DoctorReport


def install(request: InstallRequest, reporter: Reporter, *,
            confirm: Confirm | None = None) -> InstallOutcome:
    """Install what `request` asks for. Events and download progress go to `reporter`;
    `confirm` asks a person to confirm removals (None: nobody can, so --yes is needed)."""
    with ExitStack() as held:  # the environment's install mutex, until the operation ends
        return _Install(request, reporter, confirm, held).run()


class _Install:
    def __init__(self, request: InstallRequest, reporter: Reporter, confirm: Confirm | None,
                 held: ExitStack) -> None:
        self.request = request
        self.reporter = reporter
        self.confirm = confirm
        self.held = held
        self.sysroot = SysRoot.from_env(request.sysroot)

    @functools.cached_property
    def manifest(self) -> Manifest:
        return self.request.manifest()

    @functools.cached_property
    def pylock(self) -> Pylock | None:
        """The --lock file, read and validated once (a bad lock is exit 2 before any change)."""
        from neuronctl.resolvers.pylock import load_pylock

        return None if self.request.lock is None else load_pylock(self.request.lock)

    @functools.cached_property
    def preferred(self) -> tuple[str, ...]:
        """The Pythons the stack supports, lowest first (a new venv's base, the preflight)."""
        if self.pylock is not None:
            return lock_pythons(self.pylock)
        r = self.request
        return stack_pythons(self.manifest, r.release or r.config.get("release"),
                             r.torch or r.config.get("torch"))

    def run(self) -> InstallOutcome:
        r = self.request
        choice = choose_backend(r.backend, r.config.get("backend"))
        target = self._target()
        seed = target.new_venv and not choice.engine.venv_has_pip
        # The interpreter runs while the rest is prepared. A new venv starts empty, so only the
        # base interpreter's facts matter there, not what the base has installed.
        inspection = Inspection(target.python, timeout=r.timeout, packages=not target.new_venv,
                                bundled_pip=seed)
        _ = self.pylock  # read (once) while the interpreter starts; only a new venv needs it sooner
        hardware = detect_hardware(self.sysroot)
        env = inspection.result()
        check_engine(choice, target, env)
        sourced = source_for(r, env, hardware, self.manifest, self.pylock, self.preferred,
                             self.reporter)
        plan = make_plan(env, sourced.source.wanted)
        if seed:
            target = self._seeded(target, env, sourced.source)
        self.reporter.emit(Event("step", "plan", {"step": "plan", "plan": plan, "target": target,
                                                  "source": sourced.source, "choice": choice}))
        planned = sourced.planned_paths()
        commands = tuple(tuple(c) for c in engine_commands(plan, planned, target, choice.engine))

        def outcome(applied: bool, doctor: DoctorReport | None = None,
                    wrote: Path | None = None) -> InstallOutcome:
            return InstallOutcome(target, sourced.source, choice, plan, commands, r.dry_run, applied,
                                  doctor, wrote)

        if r.dry_run:
            return outcome(False)
        if plan.empty:
            self.reporter.emit(Event("info", f"{target.describe()}: already matches "
                                             f"{sourced.source.describe}; nothing to do"))
            return outcome(False, self._doctor(target, sourced.source, hardware))
        confirm_removals(plan, r.yes, self.confirm)
        self._apply(plan, target, choice, env, sourced)
        wrote = sourced.write_lock(r.write_lock)
        if wrote is not None:
            self.reporter.emit(Event("info", f"wrote {wrote}"))
        return outcome(True, self._doctor(target, sourced.source, hardware), wrote)

    def _target(self) -> InstallTarget:
        """The target, after its turn: another install into it is waited for (a dry run changes
        nothing, so takes no turn), then the target is looked at again, as that one left it."""
        from neuronctl.ops.install.env_mutex import environment_lock
        from neuronctl.resolvers.http_cache import user_cache_dir

        r = self.request
        target = resolve_target(r.python, r.venv, r.venv_python, lambda: self.preferred)
        if r.dry_run:
            return target

        def on_wait() -> None:
            self.reporter.emit(Event("waiting", f"waiting for another neuronctl install into "
                                                f"{target.environment} to finish"))

        if self.held.enter_context(environment_lock(target.environment, user_cache_dir(), on_wait)):
            target = resolve_target(r.python, r.venv, r.venv_python, lambda: self.preferred)
        return target

    def _seeded(self, target: InstallTarget, env: PythonEnv, source: InstallSource) -> InstallTarget:
        """A new venv whose engine puts no pip in it gets the base Python's bundled pip wheel,
        unless the source brings a pip of its own."""
        if any(w.name == "pip" for w in source.wanted):
            return target
        if env.bundled_pip:
            return replace(target, seed_pip=Path(env.bundled_pip))
        self.reporter.emit(Event("warning", f"{target.python} ships no bundled pip wheel; the new "
                                            "venv gets no pip"))
        return target

    def _apply(self, plan: Plan, target: InstallTarget, choice: Choice, before: PythonEnv,
               sourced: Sourced) -> None:
        from neuronctl.backend.snapshot import Snapshot, site_dirs, take
        from neuronctl.ops.install.apply import ApplyFailure, fetch_and_apply
        from neuronctl.ops.install.failure import failure_error

        def watch() -> Snapshot:
            return take(site_dirs(target.final_python))

        def download() -> dict[str, Path]:
            files = sourced.download([c.wanted for c in plan.applies if c.wanted], self.reporter)
            self.reporter.emit(Event("step", "downloaded", {"step": "downloaded",
                                                            "files": len(files)}))
            return files

        try:
            fetch_and_apply(plan, target, choice.engine, download,
                            watch=None if target.new_venv else watch)
        except ApplyFailure as failure:
            raise failure_error(failure, target, before, sourced.routing.url_for) from None
        self.reporter.emit(Event("info", f"applied: {len(plan.applies)} installed, "
                                         f"{len(plan.removals)} removed ({target.final_python})"))

    def _doctor(self, target: InstallTarget, source: InstallSource,
                hardware: HardwareReport) -> DoctorReport | None:
        """The doctor on the target, over the hardware and the lock already read (None with
        --no-check); the device probe only where Neuron hardware is present."""
        if not self.request.check:
            return None
        from neuronctl.ops.doctor.facts import Facts
        from neuronctl.ops.doctor.run import run_doctor, select_checks

        limit = max(self.request.timeout, 60.0)
        ids = select_checks((), (), source.lock, probe=hardware.present)
        facts = Facts(python=target.final_python, sysroot=self.sysroot, manifest=self.manifest,
                      release=source.release, device="auto", timeout=limit, lock=source.lock,
                      hardware=hardware, pylock=self.pylock)
        return run_doctor(facts, ids, False, limit)
