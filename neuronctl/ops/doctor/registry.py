"""How a doctor check is registered: `@check(id, title, level=..., gathers=..., severity=...)`
right above its function, in every group's module alike. The records are collected here; the
doctor's list (checks.py CHECKS, in report order) is read from them, and so is docs/checks.md."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from msgspec import Struct

if TYPE_CHECKING:
    from neuronctl.ops.doctor.facts import Facts
    from neuronctl.ops.doctor.runner import CheckOutcome, Severity

CheckFunction = Callable[["Facts"], "CheckOutcome"]
HARDWARE = frozenset({"hardware"})


class CheckSpec(Struct, frozen=True):
    """One doctor check as listed: its stable id, title, function, level, the facts it reads."""

    id: str
    title: str
    run: CheckFunction
    level: int = 1
    """The lowest doctor level that runs it (levels.py)."""
    gathers: frozenset[str] = frozenset()
    """The Facts it reads besides the interpreter (a fix may use them only when some chosen
    check gathers them anyway: Facts.knows)."""
    severity: Severity = "fix"
    """Its warnings' and failures' severity unless the outcome names one (docs/checks.md)."""


REGISTERED: dict[str, CheckSpec] = {}
"""Every check registered so far, by id (checks.py imports every group's module)."""


def check(check_id: str, title: str, *, level: int = 1, gathers: Iterable[str] = (),
          severity: Severity = "fix") -> Callable[[CheckFunction], CheckFunction]:
    """Register the function below as the doctor check `check_id`; the function is unchanged."""
    def register(run: CheckFunction) -> CheckFunction:
        known = REGISTERED.get(check_id)
        if known is not None and _where(known.run) != _where(run):  # (a reload is the same one)
            raise ValueError(f"doctor check {check_id!r} is registered twice: "
                             f"{_where(known.run)} and {_where(run)}")
        REGISTERED[check_id] = CheckSpec(check_id, title, run, level, frozenset(gathers), severity)
        return run

    return register


def _where(run: CheckFunction) -> str:
    return f"{run.__module__}.{getattr(run, '__qualname__', repr(run))}"
