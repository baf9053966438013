"""`neuronctl install` as one operation: plan, apply in one pass, check; nothing half-done.

Order: the target and its turn (the per-environment mutex), the lock for this host's hardware
(--lock: the Neuron lock or its GPU fallback) or a fresh resolution, preflight (Python, chip,
engine), the plan and its policy, confirmation of removals, then the engine installs the exact
files (each from its recorded URL, verified against its sha256 as it streams, all fetched before
the environment is touched), then the doctor on the target.

Each fact is gathered once and handed on: the hardware to the lock choice and the doctor, the lock
(read and validated once) to the source and to the doctor's lock.drift, the manifest to
everything, one Fetcher (one HTTP session) to the resolution.
"""

from __future__ import annotations

import functools
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from neuronctl.backend.choose import choose_backend
from neuronctl.errors import InputError
from neuronctl.locked_file import LockedFile
from neuronctl.ops.install.target import InstallTarget, resolve_target
from neuronctl.ops.reporter import Event, Reporter
from neuronctl.probes.pyenv import Inspection, PythonEnv
from neuronctl.probes.sysroot import SysRoot

# The rest is imported where it is used: the target interpreter's inspection starts first and
# runs on another core while those modules load (~0.1 s of imports on a small host).
if TYPE_CHECKING:
    from packaging.pylock import Pylock

    from neuronctl.backend.engine import Choice
    from neuronctl.backend.plan import Plan
    from neuronctl.manifest import Manifest
    from neuronctl.ops.doctor.report import DoctorReport
    from neuronctl.ops.install.apply import EarlyVenv
    from neuronctl.ops.install.lock_pick import PickedLock
    from neuronctl.ops.install.outcome import InstallOutcome
    from neuronctl.ops.install.plan_policy import Confirm
    from neuronctl.ops.install.request import InstallRequest
    from neuronctl.ops.install.source import InstallSource
    from neuronctl.ops.install.sourcing import Sourced
    from neuronctl.probes.hardware import HardwareReport
    from neuronctl.probes.held_inspection import HeldInspection


def install(request: InstallRequest, reporter: Reporter, *,
            confirm: Confirm | None = None) -> InstallOutcome:
    """Install what `request` asks for. Events go to `reporter` (the engine's own progress goes to
    the terminal with request.show_engine); `confirm` asks a person to confirm removals (None:
    nobody can, so --yes is needed)."""
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
        self.handed_over = False
        """Whether the engine's apply has started (it removes a new venv on failure itself)."""
        self.doctor_inspection: HeldInspection | None = None
        """The doctor's inspection of the target, started with the engine."""
        self.applying_said = False

    @functools.cached_property
    def manifest(self) -> Manifest:
        return self.request.manifest()

    @functools.cached_property
    def hardware(self) -> HardwareReport:
        from neuronctl.probes.hardware import detect_hardware

        return detect_hardware(self.sysroot)

    @functools.cached_property
    def picked(self) -> PickedLock | None:
        """The lock for this host (--lock and its fallbacks, by the hardware and --device), read
        and validated once (a bad lock is exit 2 before any change)."""
        from neuronctl.ops.install.lock_pick import pick_lock

        if self.request.lock is None:
            return None
        return pick_lock(self.request.lock, self.request.device, self.hardware, self.sysroot)

    @property
    def pylock(self) -> Pylock | None:
        return None if self.picked is None else self.picked.lock

    @functools.cached_property
    def preferred(self) -> tuple[str, ...]:
        """The Pythons the stack supports, lowest first (a new venv's base, the preflight)."""
        from neuronctl.ops.install.source import lock_pythons, stack_pythons

        if self.pylock is not None:
            return lock_pythons(self.pylock)
        r = self.request
        return stack_pythons(self.manifest, r.release or r.config.get("release"),
                             r.torch or r.config.get("torch"))

    def run(self) -> InstallOutcome:
        r = self.request
        from neuronctl.ops.output_path import check_output_file

        check_output_file(r.write_lock, "--write-lock")  # before the install, not after it
        choice = choose_backend(r.backend, r.config.get("backend"))
        target = self._target()
        seed = target.new_venv and not choice.engine.venv_has_pip
        # The interpreter runs while the rest is loaded and prepared. A new venv starts empty, so
        # only the base interpreter's facts matter there, not what the base has installed.
        inspection = Inspection(target.python, timeout=r.timeout, packages=not target.new_venv,
                                bundled_pip=seed, tags="unless-derivable")
        early = None
        if target.new_venv and not r.dry_run:  # made while the install is planned
            from neuronctl.ops.install.apply import EarlyVenv

            early = EarlyVenv(target, choice.engine, timeout=r.timeout)
        try:
            return self._install(choice, target, seed, inspection, early)
        except BaseException:
            if early is not None and not self.handed_over:  # stopped before the engine: undo it
                early.abandon()
            raise
        finally:
            if self.doctor_inspection is not None:
                self.doctor_inspection.cancel()

    def _install(self, choice: Choice, target: InstallTarget, seed: bool, inspection: Inspection,
                 early: EarlyVenv | None) -> InstallOutcome:
        r = self.request
        from neuronctl.ops.install.outcome import InstallOutcome
        from neuronctl.ops.install.plan_policy import confirm_removals, make_plan
        from neuronctl.ops.install.preflight import check_engine
        from neuronctl.ops.install.requirements import shown_lines
        from neuronctl.ops.install.sourcing import source_for

        self._announce_lock()  # the hardware and the lock are read while the interpreter starts
        env = inspection.result()
        check_engine(choice, target, env)
        sourced = source_for(r, env, self.hardware, self.manifest, self.pylock, self.preferred,
                             self.reporter, lock_path=self.picked.choice.path if self.picked else None,
                             fallback=bool(self.picked and self.picked.is_fallback))
        from neuronctl.ops.doctor.checks_rules import install_rule_notes  # exit 2 if forbidden

        for note in install_rule_notes(self.manifest, sourced.source.release,
                                       sourced.source.framework, env.python, self.hardware,
                                       self.sysroot, r.allow_unsupported):
            self.reporter.emit(Event("note", note))
        plan = make_plan(env, sourced.source.wanted)
        if seed:
            target = self._seeded(target, env, sourced.source)
        files = self._engine_files(plan, target, sourced)
        self._check_offline(choice, files)
        self.reporter.emit(Event("step", "plan", {
            "step": "plan", "plan": plan, "target": target, "source": sourced.source,
            "choice": choice, "lock_choice": self.picked.choice if self.picked else None}))
        from neuronctl.ops.install.apply import engine_commands

        commands = tuple(tuple(c) for c in engine_commands(plan, target, choice.engine,
                                                           offline=r.offline, installs=bool(files)))

        def outcome(applied: bool, doctor: DoctorReport | None = None,
                    wrote: Path | None = None) -> InstallOutcome:
            return InstallOutcome(target, sourced.source, choice, plan, commands, r.dry_run, applied,
                                  doctor, wrote, shown_lines(files),
                                  self.picked.choice if self.picked else None)

        if r.dry_run:
            return outcome(False)
        if plan.empty:
            self.reporter.emit(Event("info", f"{target.describe()}: already matches "
                                             f"{sourced.source.describe}; nothing to do"))
            if early is not None:
                early.abandon()  # nothing to install: no venv, as before
            # A new venv's inspection was of its base Python, and nothing made the venv.
            return outcome(False, self._doctor(target, sourced.source,
                                               unchanged=None if target.new_venv else env))
        confirm_removals(plan, r.yes, self.confirm)
        self.handed_over = True  # from here a failure is apply's to clean up (and report)
        self._apply(plan, target, choice, env, sourced, files, early)
        wrote = sourced.write_lock(r.write_lock)
        if wrote is not None:
            self.reporter.emit(Event("info", f"wrote {wrote}"))
        return outcome(True, self._doctor(target, sourced.source), wrote)

    def _announce_lock(self) -> None:
        if self.picked is None or not (self.picked.worth_saying or self.request.device != "auto"):
            return
        choice = self.picked.choice
        self.reporter.emit(Event("note", f"lock: {choice.path} ({choice.reason})"))
        for warning in choice.warnings:
            self.reporter.emit(Event("warning", warning))

    def _target(self) -> InstallTarget:
        """The target, after its turn: another install into it is waited for (a dry run changes
        nothing, so takes no turn), then the target is looked at again, as that one left it."""
        from neuronctl.cache_dir import user_cache_dir
        from neuronctl.ops.install.env_mutex import environment_lock

        r = self.request
        # Not run here to check it is a Python: the inspection right after does that.
        target = resolve_target(r.python, r.venv, r.venv_python, lambda: self.preferred, run_it=False)
        if r.dry_run:
            return target

        def on_wait() -> None:
            self.reporter.emit(Event("waiting", f"waiting for another neuronctl install into "
                                                f"{target.environment} to finish"))

        if self.held.enter_context(environment_lock(target.environment, user_cache_dir(), on_wait)):
            target = resolve_target(r.python, r.venv, r.venv_python, lambda: self.preferred, run_it=False)
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

    def _engine_files(self, plan: Plan, target: InstallTarget, sourced: Sourced) -> list[LockedFile]:
        """What the engine installs: the plan's files from their URLs, and a new venv's pip from
        its base Python's own wheel (hashed here: it is a local file neuronctl trusts)."""
        files = sourced.engine_files([c.wanted for c in plan.applies if c.wanted])
        if target.seed_pip is not None:
            import hashlib

            from packaging.utils import parse_wheel_filename

            wheel = target.seed_pip
            version = str(parse_wheel_filename(wheel.name)[1])
            data = wheel.read_bytes()
            files.append(LockedFile("pip", version, wheel.name, wheel.resolve().as_uri(),
                                    hashlib.sha256(data).hexdigest(), len(data)).checked())
        return files

    def _check_offline(self, choice: Choice, files: list[LockedFile]) -> None:
        """--offline with an engine that keeps no files of its own can install only local files."""
        if not self.request.offline or choice.engine.has_offline_cache:
            return
        remote = [f.name for f in files if not f.url.startswith("file:")]
        if remote:
            raise InputError(f"--offline: the pip engine keeps no downloaded files, and "
                             f"{', '.join(remote[:4])}{' ...' if len(remote) > 4 else ''} "
                             "would come from the network",
                             hint="use --backend uv (it installs from its own cache offline), or "
                                  "install from a wheel directory (neuronctl download)")

    def _apply(self, plan: Plan, target: InstallTarget, choice: Choice, before: PythonEnv,
               sourced: Sourced, files: list[LockedFile], early: EarlyVenv | None) -> None:
        import functools as ft

        from neuronctl.backend.external_tool import run_engine
        from neuronctl.backend.snapshot import Snapshot, existing_dirs, take
        from neuronctl.ops.install.apply import ApplyFailure, apply
        from neuronctl.ops.install.failure import failure_error
        from neuronctl.ops.install.wheelhouse_source import local_label

        def watch() -> Snapshot:  # an existing environment: the one inspected before
            return take(existing_dirs(before.site_dirs))

        show = self.request.show_engine
        if not show and files:  # the engine says nothing until it is done: say what it does
            self.reporter.emit(Event("note", f"{choice.engine.name} fetches {len(files)} file(s), "
                                             "each checked against its sha256, then installs"))
        try:
            apply(plan, target, choice.engine, files, sourced.routing.credentials(),
                  run=ft.partial(run_engine, show=show, started=self._engine_started),
                  offline=self.request.offline, watch=None if target.new_venv else watch,
                  early=early, engine_starting=ft.partial(self._hold_inspection, target, before),
                  timeout=self.request.timeout,
                  local_label=ft.partial(local_label, self.request.find_links))
        except ApplyFailure as failure:
            raise failure_error(failure, target, choice.engine, before, sourced.routing.url_for,
                                wheelhouse=self.request.find_links, files=files) from None
        self.reporter.emit(Event("info", f"applied: {len(plan.applies)} installed, "
                                         f"{len(plan.removals)} removed ({target.final_python})"))

    def _hold_inspection(self, target: InstallTarget, before: PythonEnv) -> None:
        """The doctor's inspection of the target starts as the engine does (see
        probes/held_inspection.py); where it cannot, the doctor inspects it afterwards."""
        if not self.request.check:
            return
        from neuronctl.probes.held_inspection import HeldInspection, venv_site_dirs

        dirs = venv_site_dirs(target.environment) if target.new_venv else before.site_dirs
        self.doctor_inspection = HeldInspection(target.final_python, dirs, self._doctor_timeout)

    def _engine_started(self) -> None:
        """The engine runs: what the doctor needs starts now, not in its way as it starts (the
        target's interpreter; the CLI loading the doctor's modules on a thread)."""
        # Once, for the install's engine: not a venv's creation (which comes before the target
        # is there), not the removal step after it.
        if self.applying_said or self.doctor_inspection is None:  # None: --no-check
            return
        self.applying_said = True
        try:
            self.doctor_inspection.start()
        except (InputError, OSError):  # the doctor inspects it afterwards, and says why
            self.doctor_inspection.cancel()
        self.reporter.emit(Event("step", "applying", {"step": "applying"}))

    @property
    def _doctor_timeout(self) -> float:
        return max(self.request.timeout, 60.0)

    def _doctor(self, target: InstallTarget, source: InstallSource,
                unchanged: PythonEnv | None = None) -> DoctorReport | None:
        """The doctor on the target, over the hardware and the lock already read (None with
        --no-check); the device probe only where its device is present. A fallback lock's
        environment has no Neuron stack: only the Python, the lock and its device are checked.
        `unchanged`: the target's inspection, when nothing was applied since (the install mutex
        is held, so it still describes the environment)."""
        if not self.request.check:
            return None
        from neuronctl.ops.doctor.facts import Facts
        from neuronctl.ops.doctor.run import run_doctor, select_checks

        limit = self._doctor_timeout
        device, hardware = "auto", self.hardware
        if self.picked is not None and self.picked.is_fallback:
            device = self.picked.choice.device
            gpu = self.picked.nvidia is not None and self.picked.nvidia.present
            probe = device == "cpu" or gpu
            ids = ["python.version", *(["device.probe"] if probe else []), "lock.drift"]
        else:
            ids = select_checks((), (), source.lock, probe=hardware.present)
        facts = Facts(python=target.final_python, sysroot=self.sysroot, manifest=self.manifest,
                      release=source.release, device=device, timeout=limit, lock=source.lock,
                      hardware=hardware, pylock=self.pylock, env=unchanged,
                      inspection=self.doctor_inspection)
        return run_doctor(facts, ids, False, limit)
