"""Step 9 of an install, the check: the doctor on the target, through the doctor's own entry
point (`doctor(DoctorRequest)`, at its default level), handed what the install already holds (the
hardware, the lock, the target's inspection) so that nothing is gathered twice. Its checks are
bounded as the doctor's are: install's --check-timeout (config `check_timeout`), else the level's
budget. What it can do is done while the engine runs: the target's inspection is held open (it
starts as the engine does; probes/held_inspection.py), and on a thread the doctor's modules load
and its checks that read nothing of the target (the host's OS, driver, system packages, devices)
run (DoctorRun.start_ready); the rest run when the engine is done."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from msgspec import Struct

from neuronctl.errors import InputError
from neuronctl.ops.install.background import OnThread
from neuronctl.ops.reporter import Reporter, StepStarted
from neuronctl.probes.held_inspection import HeldInspection, venv_site_dirs

if TYPE_CHECKING:  # types only: install.run imports Prepared before its heavier steps load
    from neuronctl.ops.doctor.report import DoctorReport
    from neuronctl.ops.doctor.run import DoctorRequest, DoctorRun
    from neuronctl.ops.install.source_types import InstallSource
    from neuronctl.ops.install.target import InstallTarget
    from neuronctl.ops.lock.choice import PickedLock
    from neuronctl.probes.hardware import HardwareReport
    from neuronctl.probes.pyenv import PythonEnv
    from neuronctl.probes.sysroot import SysRoot
    from neuronctl.release.model import Manifest

FALLBACK_CHECKS = ("python.version", "device.probe", "lock.drift")
"""What a fallback lock's environment (no Neuron stack) is checked for."""


def inspection_timeout(check_timeout: float | None) -> float:
    """The held inspection's limit: what the doctor would give its own inspection."""
    from neuronctl.ops.doctor.levels import DEFAULT_LEVEL, Budget, budget_for  # not with --no-check

    return Budget.inner(budget_for(DEFAULT_LEVEL, check_timeout).check_s)


class Prepared:
    """What the check needs, prepared while the engine runs (nothing with --no-check)."""

    def __init__(self, enabled: bool, check_timeout: float | None, reporter: Reporter) -> None:
        self._enabled = enabled
        self._check_timeout = check_timeout
        self._reporter = reporter
        self._doctor: OnThread[DoctorRun | None] | None = None
        self.inspection: HeldInspection | None = None
        """The target's inspection, held from just before the engine ran (None: not held)."""

    def engine_starting(self, target: InstallTarget, before: PythonEnv) -> None:
        """The target exists: list what its interpreter's start-up reads, before the engine."""
        if self._enabled:
            dirs = venv_site_dirs(target.environment) if target.new_venv else before.site_dirs
            self.inspection = HeldInspection(target.final_python, dirs,
                                             inspection_timeout(self._check_timeout))

    def engine_started(self, given: CheckInput) -> None:
        """The engine runs: what the doctor needs starts now, not in its way as it starts."""
        if self.inspection is None:
            return
        try:
            self.inspection.start()
        except (InputError, OSError):  # the doctor inspects it afterwards, and says why
            self.inspection.cancel()
        self._doctor = OnThread(functools.partial(_start_doctor, given, self.inspection),
                                name="neuronctl-doctor", patience=5.0)
        self._doctor.start()
        self._reporter.emit(StepStarted("applying", "applying"))

    def doctor(self) -> DoctorRun | None:
        """The doctor run started while the engine ran (None: none was)."""
        return None if self._doctor is None else self._doctor.result()

    def cancel(self) -> None:
        if self.inspection is not None:
            self.inspection.cancel()
        if self._doctor is not None:
            self._doctor.cancel()


def _start_doctor(given: CheckInput, inspection: HeldInspection) -> DoctorRun | None:
    """The doctor's modules loaded and its checks of the host started, beside the engine."""
    from neuronctl.ops.doctor.run import DoctorRun

    try:
        run = DoctorRun(doctor_request(given, inspection))
        run.start_ready()
    except Exception:  # check() makes it again and reports what is wrong, as it always did
        return None
    return run


class CheckInput(Struct, frozen=True):
    """What the check reads: the installed target, the stack it should hold and the facts
    already gathered."""

    target: InstallTarget
    found: InstallSource
    picked: PickedLock | None
    hardware: HardwareReport
    manifest: Manifest
    sysroot: SysRoot
    check_timeout: float | None
    """install's --check-timeout (config `check_timeout`); None: the doctor level's budget."""


def check(given: CheckInput, *, prepared: Prepared | None = None,
          unchanged: PythonEnv | None = None) -> DoctorReport:
    """The doctor on the target; the device probe only where its device is present. A fallback
    lock's environment has no Neuron stack: only the Python, the lock and its device are checked.
    `unchanged`: the target's inspection, when nothing was applied since (the install mutex is
    held, so it still describes the environment)."""
    # The doctor loads here (or on a thread while the engine ran): an install with --no-check,
    # or one that stops before, never loads it.
    from neuronctl.ops.doctor.run import DoctorRun

    run = prepared.doctor() if prepared is not None else None
    if run is None:
        run = DoctorRun(doctor_request(given, prepared.inspection if prepared else None, unchanged))
    return run.finish()


def doctor_request(given: CheckInput, inspection: HeldInspection | None,
                   unchanged: PythonEnv | None = None) -> DoctorRequest:
    """The doctor's request for the installed target, with what the install already holds."""
    from neuronctl.ops.doctor.levels import DEFAULT_LEVEL
    from neuronctl.ops.doctor.run import DoctorRequest, Known

    picked, found = given.picked, given.found
    device, probe = "auto", given.hardware.present
    only: tuple[str, ...] = ()
    if picked is not None and picked.is_fallback:
        device, only = picked.choice.device, FALLBACK_CHECKS
        gpu = picked.nvidia is not None and picked.nvidia.present
        probe = device == "cpu" or gpu
    known = Known(python=given.target.final_python, hardware=given.hardware,
                  pylock=picked.lock if picked else None, env=unchanged, inspection=inspection)
    return DoctorRequest(
        given.manifest, release=found.release,
        lock=found.lock, device=device, level=DEFAULT_LEVEL, device_probe=probe, only=only,
        check_timeout=given.check_timeout, sysroot=given.sysroot.root, known=known)
