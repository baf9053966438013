"""Step 9 of an install, the check: the doctor on the target, through the doctor's own entry
point (`doctor(DoctorRequest)`, at its default level), handed what the install already holds (the
hardware, the lock, the target's inspection) so that nothing is gathered twice. Its checks are
bounded as the doctor's are: install's --check-timeout (config `check_timeout`), else the level's
budget. What it needs is prepared while the engine runs: the target's inspection is held open (it
starts as the engine does; probes/held_inspection.py) and the doctor's modules load on a thread."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from msgspec import Struct

from neuronctl.errors import InputError
from neuronctl.ops.install.background import OnThread
from neuronctl.ops.reporter import Reporter, StepStarted
from neuronctl.probes.held_inspection import HeldInspection, venv_site_dirs

if TYPE_CHECKING:  # types only: install.run imports Prepared before its heavier steps load
    from neuronctl.ops.doctor.report import DoctorReport
    from neuronctl.ops.install.source_types import InstallSource
    from neuronctl.ops.install.target import InstallTarget
    from neuronctl.ops.lock.choice import PickedLock
    from neuronctl.probes.hardware import HardwareReport
    from neuronctl.probes.pyenv import PythonEnv
    from neuronctl.probes.sysroot import SysRoot
    from neuronctl.release.model import Manifest

DOCTOR = ("neuronctl.ops.doctor.run", "neuronctl.ops.doctor.facts")
FALLBACK_CHECKS = ("python.version", "device.probe", "lock.drift")
"""What a fallback lock's environment (no Neuron stack) is checked for."""


def _load_doctor() -> None:
    for name in DOCTOR:
        try:
            importlib.import_module(name)
        except Exception:  # the real import in check() reports any failure
            return


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
        self._preload = OnThread(_load_doctor, name="neuronctl-preload")
        self.inspection: HeldInspection | None = None
        """The target's inspection, held from just before the engine ran (None: not held)."""

    def engine_starting(self, target: InstallTarget, before: PythonEnv) -> None:
        """The target exists: list what its interpreter's start-up reads, before the engine."""
        if self._enabled:
            dirs = venv_site_dirs(target.environment) if target.new_venv else before.site_dirs
            self.inspection = HeldInspection(target.final_python, dirs,
                                             inspection_timeout(self._check_timeout))

    def engine_started(self) -> None:
        """The engine runs: what the doctor needs starts now, not in its way as it starts."""
        if self.inspection is None:
            return
        try:
            self.inspection.start()
        except (InputError, OSError):  # the doctor inspects it afterwards, and says why
            self.inspection.cancel()
        self._preload.start()
        self._reporter.emit(StepStarted("applying", "applying"))

    def cancel(self) -> None:
        if self.inspection is not None:
            self.inspection.cancel()


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
    # The doctor loads here (or on the preload's thread while the engine ran): an install with
    # --no-check, or one that stops before, never loads it.
    from neuronctl.ops.doctor.levels import DEFAULT_LEVEL
    from neuronctl.ops.doctor.run import DoctorRequest, Known, doctor

    picked, found = given.picked, given.found
    device, probe = "auto", given.hardware.present
    only: tuple[str, ...] = ()
    if picked is not None and picked.is_fallback:
        device, only = picked.choice.device, FALLBACK_CHECKS
        gpu = picked.nvidia is not None and picked.nvidia.present
        probe = device == "cpu" or gpu
    known = Known(python=given.target.final_python, hardware=given.hardware,
                  pylock=picked.lock if picked else None, env=unchanged,
                  inspection=prepared.inspection if prepared else None)
    return doctor(DoctorRequest(
        given.manifest, release=found.release,
        lock=found.lock, device=device, level=DEFAULT_LEVEL, device_probe=probe, only=only,
        check_timeout=given.check_timeout, sysroot=given.sysroot.root, known=known))
