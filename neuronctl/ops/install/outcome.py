"""What `neuronctl install` did (or would do), as one value the CLI renders as text or JSON."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from neuronctl.ops.reporter import StepStarted

if TYPE_CHECKING:  # only its fields' types: an install with --no-check never loads the doctor
    from neuronctl.backend.engine import Choice
    from neuronctl.backend.plan import Plan
    from neuronctl.ops.doctor.report import DoctorReport
    from neuronctl.ops.install.source_types import InstallSource
    from neuronctl.ops.install.target import InstallTarget
    from neuronctl.ops.lock.choice import LockChoice


class PlanReady(StepStarted, frozen=True, kw_only=True):
    """The plan is made and nothing has changed yet: what the CLI shows before it applies."""

    plan: Plan
    target: InstallTarget
    source: InstallSource
    choice: Choice
    lock_choice: LockChoice | None = None


class InstallOutcome(Struct, frozen=True):
    """What an install did (or, in a dry run, would do): its target, files, commands, doctor."""

    target: InstallTarget
    source: InstallSource
    choice: Choice
    plan: Plan
    commands: tuple[tuple[str, ...], ...]
    """Every command the apply runs (or, in a dry run, would run), venv creation included."""
    dry_run: bool
    applied: bool
    doctor: DoctorReport | None = None
    """The doctor's report on the target afterwards (None: --no-check, or a dry run)."""
    wrote_lock: Path | None = None
    requirements: tuple[str, ...] = ()
    """The requirements file the engine installs from (one `name @ URL --hash=sha256:...` line
    per file), as it may be shown: without credentials."""
    lock_choice: LockChoice | None = None
    """Which lock --lock installed on this host (the Neuron lock or a fallback), and why."""

    @property
    def exit_code(self) -> int:
        return int(self.doctor.exit_code) if self.doctor is not None else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "install",
            "target": {"python": self.target.final_python,
                       "venv": str(self.target.venv) if self.target.venv else None,
                       "new_venv": self.target.new_venv,
                       "seed_pip": str(self.target.seed_pip) if self.target.seed_pip else None,
                       "reason": self.target.reason},
            "source": {"describe": self.source.describe, "release": self.source.release,
                       "lock": str(self.source.lock) if self.source.lock else None},
            "engine": {"name": self.choice.engine.name, "reason": self.choice.reason},
            "plan": [c.to_json() for c in self.plan.changes],
            "commands": [list(c) for c in self.commands],
            "requirements": list(self.requirements),
            "lock_choice": self.lock_choice.to_json() if self.lock_choice is not None else None,
            "dry_run": self.dry_run,
            "applied": self.applied,
            "doctor": self.doctor.summary() if self.doctor is not None else None,
            "exit_code": self.exit_code,
        }
