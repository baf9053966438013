"""Run checks concurrently, each with its own timeout; a check that raises is a `fail`, not a crash."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from msgspec import Struct, field

from neuronctl.errors import NeuronctlError

Status = Literal["pass", "warn", "fail", "skip"]
STATUSES: tuple[Status, ...] = ("pass", "warn", "fail", "skip")
Severity = Literal["drain", "fix", "info"]
"""What an outcome asks of a scheduler (as DCGM's per-error severities do): `drain` the node
(hardware errors, no driver, devices missing), `fix` the stack (the fix command says how),
`info` (nothing to act on). A pass or a skip is always `info`."""
SEVERITIES: tuple[Severity, ...] = ("drain", "fix", "info")


class CheckOutcome(Struct, frozen=True):
    """What a check function returns: its status, message and fix (the check outcome; the runner
    adds the id and the time taken to make its CheckResult). An operation's "outcome" is another
    thing: the frozen result an ops function returns."""

    status: Status
    message: str
    fix: str | None = None
    details: tuple[str, ...] = ()
    severity: Severity | None = None
    """None: the check's own (CheckSpec.severity) when it warns or fails."""


class CheckResult(Struct, frozen=True):
    """One check's result as reported: status, message, fix, details, time taken."""

    id: str
    title: str
    status: Status
    message: str
    fix: str | None
    duration_ms: float
    details: tuple[str, ...] = field(default=())
    severity: Severity = "info"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "status": self.status,
                "severity": self.severity, "message": self.message, "fix": self.fix,
                "duration_ms": self.duration_ms, "details": list(self.details)}


class Check(Struct, frozen=True):
    """One check ready to run: its function bound to the facts, and its own timeout."""

    id: str
    title: str
    run: Callable[[], CheckOutcome]
    timeout: float
    severity: Severity = "fix"
    """The severity of this check's warnings and failures unless its outcome names one."""


def severity_of(outcome: CheckOutcome, default: Severity) -> Severity:
    if outcome.status in ("pass", "skip"):
        return "info"
    return outcome.severity or default


class NotYet(BaseException):
    """Raised inside a check that reads what is not ready yet (the target, while an install's
    engine still changes it): the check is run again once it is (`run_ready`). A BaseException,
    so that no check's own `except Exception` can take it for a fact that failed."""


def _run_one(check: Check, slot: list[CheckResult | None],
             into: dict[str, CheckResult] | None = None) -> None:
    start = time.perf_counter()
    try:
        outcome = check.run()
    except NotYet:
        slot.append(None)  # run_ready leaves it out; run_checks, where all is ready, fails it
        return
    except NeuronctlError as exc:
        outcome = CheckOutcome("fail", exc.message, exc.hint)
    except Exception as exc:  # a broken check must not take the doctor down
        outcome = CheckOutcome("fail", f"check raised {type(exc).__name__}: {exc}")
    ms = round((time.perf_counter() - start) * 1000, 1)
    result = CheckResult(check.id, check.title, outcome.status, outcome.message, outcome.fix, ms,
                         outcome.details, severity_of(outcome, check.severity))
    slot.append(result)
    if into is not None:
        into[check.id] = result


Progress = Callable[[int, int, tuple[str, ...]], None]
"""(checks done, checks in all, ids of those still running), while the doctor waits."""


def _wait(thread: threading.Thread, until: float, progress: Progress | None,
          slots: list[list[CheckResult | None]], checks: Sequence[Check]) -> None:
    """Join `thread` by `until` (perf_counter), telling `progress` which checks still run about
    every quarter second (a level-3 doctor runs for 20 s and more)."""
    while True:
        if progress is not None:
            running = tuple(c.id for c, slot in zip(checks, slots, strict=True) if not slot)
            progress(len(checks) - len(running), len(checks), running)
        left = until - time.perf_counter()
        if left <= 0 or not thread.is_alive():
            return
        thread.join(min(left, 0.25) if progress is not None else left)


def run_checks(checks: Sequence[Check], total: float | None = None,
               progress: Progress | None = None) -> list[CheckResult]:
    """Run all checks in parallel; results come back in the order the checks were given. Each
    check gets its own timeout, and none runs past `total` seconds from the start: a check past
    either is a fail that says "timed out", and what it left running in a target interpreter is
    killed (never a hang, never a stray process)."""
    results = []
    for check, result in zip(checks, _run_all(checks, total, progress), strict=True):
        results.append(result or CheckResult(check.id, check.title, "fail", "internal: it read "
                                             "the target before it was ready", None, 0.0,
                                             severity=check.severity))
    return results


def run_ready(checks: Sequence[Check], into: dict[str, CheckResult],
              total: float | None = None) -> None:
    """Run the checks in parallel as run_checks does, while what some of them read is not ready
    yet, putting each result into `into` as its check ends: a caller that will not wait takes
    what is there. A check that raised NotYet, or is still running, is not there: run it (again)
    once all is ready."""
    # What a check that timed out left running is not killed here: the work these run beside
    # (an install's engine) is neuronctl's child too, and neuronctl kills every child at exit.
    _run_all(checks, total, None, stop=False, into=into)


def _run_all(checks: Sequence[Check], total: float | None, progress: Progress | None, *,
             stop: bool = True, into: dict[str, CheckResult] | None = None
             ) -> list[CheckResult | None]:
    """Each check's result in order (None: it raised NotYet)."""
    slots: list[list[CheckResult | None]] = [[] for _ in checks]
    threads = []
    start = time.perf_counter()
    for check, slot in zip(checks, slots, strict=True):
        # Daemon threads: a check stuck past its timeout must not keep neuronctl alive.
        t = threading.Thread(target=_run_one, args=(check, slot, into), daemon=True,
                             name=f"check-{check.id}")
        t.start()
        threads.append(t)
    results: list[CheckResult | None] = []
    late = False
    for check, slot, thread in zip(checks, slots, threads, strict=True):
        limit = check.timeout if total is None else min(check.timeout, total)
        _wait(thread, start + limit, progress, slots, checks)
        if slot:
            results.append(slot[0])
        else:
            why = (f"timed out after {check.timeout:g}s" if limit == check.timeout else
                   f"timed out: the run's budget of {limit:g}s ran out")
            results.append(CheckResult(check.id, check.title, "fail", why, None,
                                       round(limit * 1000, 1), severity=check.severity))
            late = True
    if late and stop:
        _stop_leftovers()
    return results


def _stop_leftovers() -> None:
    """A check that timed out may still wait on a script in a target interpreter (an import that
    hangs): kill those, as the CLI's Ctrl-C path does (every child is neuronctl.proc's)."""
    from neuronctl import proc

    proc.kill_all()
