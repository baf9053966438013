"""Step 7 of an install, the check: the doctor on the target, through the doctor's own entry
point (run_doctor over select_checks), over the hardware and the lock already read. What it
needs is prepared while the engine runs: the target's inspection is held open (it starts as the
engine does; probes/held_inspection.py) and the doctor's modules load on a thread."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from neuronctl.errors import InputError
from neuronctl.ops.install.background import OnThread
from neuronctl.ops.install.source import InstallSource
from neuronctl.ops.install.target import InstallTarget
from neuronctl.ops.lock.choice import PickedLock
from neuronctl.ops.reporter import Reporter, StepStarted
from neuronctl.probes.hardware import HardwareReport
from neuronctl.probes.held_inspection import HeldInspection, venv_site_dirs
from neuronctl.probes.pyenv import PythonEnv
from neuronctl.probes.sysroot import SysRoot

if TYPE_CHECKING:
    from neuronctl.manifest import Manifest
    from neuronctl.ops.doctor.report import DoctorReport

DOCTOR = ("neuronctl.ops.doctor.run", "neuronctl.ops.doctor.facts")


def _load_doctor() -> None:
    for name in DOCTOR:
        try:
            importlib.import_module(name)
        except Exception:  # the real import in check() reports any failure
            return


def doctor_timeout(timeout: float) -> float:
    return max(timeout, 60.0)


class Prepared:
    """What the check needs, prepared while the engine runs (nothing with --no-check)."""

    def __init__(self, enabled: bool, timeout: float, reporter: Reporter) -> None:
        self._enabled = enabled
        self._timeout = doctor_timeout(timeout)
        self._reporter = reporter
        self._preload = OnThread(_load_doctor, name="neuronctl-preload")
        self.inspection: HeldInspection | None = None
        """The target's inspection, held from just before the engine ran (None: not held)."""

    def engine_starting(self, target: InstallTarget, before: PythonEnv) -> None:
        """The target exists: list what its interpreter's start-up reads, before the engine."""
        if self._enabled:
            dirs = venv_site_dirs(target.environment) if target.new_venv else before.site_dirs
            self.inspection = HeldInspection(target.final_python, dirs, self._timeout)

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


def check(enabled: bool, target: InstallTarget, found: InstallSource, picked: PickedLock | None,
          hardware: HardwareReport, manifest: Manifest, sysroot: SysRoot, timeout: float, *,
          prepared: Prepared | None = None, unchanged: PythonEnv | None = None
          ) -> DoctorReport | None:
    """The doctor on the target (None with --no-check); the device probe only where its device
    is present. A fallback lock's environment has no Neuron stack: only the Python, the lock and
    its device are checked. `unchanged`: the target's inspection, when nothing was applied since
    (the install mutex is held, so it still describes the environment)."""
    if not enabled:
        return None
    # The doctor loads here (or on the preload's thread while the engine ran): an install with
    # --no-check, or one that stops before, never loads it.
    from neuronctl.ops.doctor.facts import Facts
    from neuronctl.ops.doctor.run import run_doctor, select_checks

    limit = doctor_timeout(timeout)
    device = "auto"
    if picked is not None and picked.is_fallback:
        device = picked.choice.device
        gpu = picked.nvidia is not None and picked.nvidia.present
        probe = device == "cpu" or gpu
        ids = ["python.version", *(["device.probe"] if probe else []), "lock.drift"]
    else:
        ids = select_checks((), (), found.lock, probe=hardware.present)
    facts = Facts(python=target.final_python, sysroot=sysroot, manifest=manifest,
                  release=found.release, device=device, timeout=limit, lock=found.lock,
                  hardware=hardware, pylock=picked.lock if picked else None, env=unchanged,
                  inspection=prepared.inspection if prepared else None)
    return run_doctor(facts, ids, False, limit)
