"""The doctor's verdict over its check results (rendered by the CLI into text, JSON, JUnit, GitHub)."""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from neuronctl.ops.doctor.runner import CheckResult


class DoctorReport(Struct, frozen=True):
    """Every check's result from one doctor run, with the verdict and the environment seen."""

    checks: tuple[CheckResult, ...]
    strict: bool
    environment: dict[str, Any]
    level: int | None = None
    """The doctor level that ran (None: a report not made by a doctor run)."""
    budget_s: float | None = None
    """The whole run's time budget."""

    def failed_ids(self) -> list[str]:
        """The checks that fail the run (warnings too, with --strict)."""
        return [c.id for c in self.checks
                if c.status == "fail" or (self.strict and c.status == "warn")]

    def count(self, status: str) -> int:
        return sum(1 for c in self.checks if c.status == status)

    @property
    def failed(self) -> bool:
        return self.count("fail") > 0 or (self.strict and self.count("warn") > 0)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    @property
    def verdict(self) -> str:
        if self.failed:
            return "fail"
        return "warn" if self.count("warn") else "pass"

    def summary(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "exit_code": self.exit_code, "strict": self.strict,
                "total": len(self.checks), "passed": self.count("pass"),
                "warnings": self.count("warn"), "failed": self.count("fail"),
                "skipped": self.count("skip"),
                "duration_ms": round(max((c.duration_ms for c in self.checks), default=0.0), 1),
                **({"level": self.level, "budget_s": self.budget_s} if self.level else {})}

    @property
    def stack_missing(self) -> bool:
        """The Neuron stack the doctor checks for is not in the target (torch-neuronx looked
        for and absent): nothing there can be called healthy."""
        packages = self.environment.get("packages")
        looked = any(c.id == "packages.torch-neuronx" and c.status != "pass" for c in self.checks)
        return looked and isinstance(packages, dict) and packages.get("torch-neuronx") is None

    def verdict_line(self) -> str:
        s = self.summary()
        word = {"pass": "healthy", "warn": "healthy, with warnings", "fail": "problems found"}
        if self.stack_missing:
            word = {**word, "pass": "no Neuron stack installed here (torch-neuronx is not in the "
                                    "target)", "warn": "no Neuron stack installed here "
                                                       "(torch-neuronx is not in the target)"}
        warnings = f"{s['warnings']} warning" + ("" if s["warnings"] == 1 else "s")
        return (f"{s['verdict']}: {word[s['verdict']]}: {s['failed']} failed, "
                f"{warnings}, {s['passed']} passed, {s['skipped']} skipped")
