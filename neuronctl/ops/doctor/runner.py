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
    began: Callable[[], float] | None = None
    """When its run began (perf_counter), asked once it ends: a check taken over (`Begun`) began
    elsewhere, and its time taken counts from there. None: from when it is run here."""


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
    began = start if check.began is None else min(start, check.began())
    ms = round((time.perf_counter() - began) * 1000, 1)
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


STALL_S = 0.02
"""How long one check may run before the checks after it stop waiting their turn (run_checks)."""
IN_TURN_SHARE = 0.1
"""The share of the shortest time limit the checks may spend waiting their turn at all: every
check keeps at least the rest of its own limit, and the run ends within its budget."""


def run_checks(checks: Sequence[Check], total: float | None = None,
               progress: Progress | None = None, *, one_by_one: bool = True
               ) -> list[CheckResult]:
    """Run all checks; results come back in the order the checks were given. Each check gets its
    own timeout, and none runs past `total` seconds from the start: a check past either is a fail
    that says "timed out", and what it left running in a target interpreter is killed (never a
    hang, never a stray process). They run one after another on one thread while each ends within
    STALL_S (most read a file or two, and a thread each costs more CPU than they do); once one
    runs longer (a process, the network, a hang), it is taken over and every check left runs on
    a thread of its own, in parallel (at once, without `one_by_one`: where the first would wait
    for a process the others need not); so too once the checks have waited their turn for
    IN_TURN_SHARE of the shortest limit. Every limit counts from the start, as if all had begun
    then."""
    start = time.perf_counter()
    limits = [c.timeout if total is None else min(c.timeout, total) for c in checks]
    in_turn = start + IN_TURN_SHARE * min(limits, default=0.0)
    done, rest = _one_by_one(checks, in_turn) if one_by_one else ({}, list(checks))
    if progress is not None and not rest:  # all ended one after another: say so once
        progress(len(checks), len(checks), ())
    ran = iter(_run_all(rest, total, _after(progress, len(done)), start))
    results = []
    for check in checks:
        result = done[check.id] if check.id in done else next(ran)
        results.append(result or CheckResult(check.id, check.title, "fail", "internal: it read "
                                             "the target before it was ready", None, 0.0,
                                             severity=check.severity))
    return results


def _one_by_one(checks: Sequence[Check], until_latest: float
                ) -> tuple[dict[str, CheckResult], list[Check]]:
    """Run the checks in order on one thread until they end, one runs past STALL_S, or it is
    `until_latest` (perf_counter): (the results made, the checks left, taken over, the one still
    running included)."""
    begun, queue = begin(checks)
    into: dict[str, CheckResult] = {}
    worker = threading.Thread(target=run_ready, args=(queue, into), daemon=True, name="checks")
    worker.start()
    while True:
        current = next((b for b in begun.values() if b.running), None)
        until = (current.began if current is not None else time.perf_counter()) + STALL_S
        worker.join(max(0.0, min(until, until_latest) - time.perf_counter()))
        now = time.perf_counter()
        if not worker.is_alive() or now >= until_latest or (
                current is not None and current.running and now >= until):
            break
    done = dict(into)  # one snapshot: a check that ends after it is taken over, as one running
    return done, [begun[c.id].taken_over(c, again=False) for c in checks if c.id not in done]


def _after(progress: Progress | None, done: int) -> Progress | None:
    """`progress` for the checks left, counting the `done` ones already."""
    if progress is None or not done:
        return progress
    return lambda ended, total, running: progress(ended + done, total + done, running)


def run_ready(checks: Sequence[Check], into: dict[str, CheckResult]) -> None:
    """Run the checks one after another on this thread, while what some of them read is not
    ready yet, putting each result into `into` as its check ends: a caller that will not wait
    takes what is there. A check that raised NotYet is not there: run it again once all is ready.
    One still running, or not yet begun, is taken over by that run (`Begun`), which bounds it,
    so no limit is kept here; and one thread is enough (the host's checks take a few ms each: a
    thread each costs more CPU than they do, taken from what they run beside)."""
    for check in checks:
        _run_one(check, [], into)


def _run_all(checks: Sequence[Check], total: float | None, progress: Progress | None,
             start: float) -> list[CheckResult | None]:
    """Each check's result in order (None: it raised NotYet), each on a thread of its own, its
    time limit counted from `start` (perf_counter)."""
    slots: list[list[CheckResult | None]] = [[] for _ in checks]
    threads = []
    for check, slot in zip(checks, slots, strict=True):
        # Daemon threads: a check stuck past its timeout must not keep neuronctl alive.
        t = threading.Thread(target=_run_one, args=(check, slot), daemon=True,
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
    if late:
        _stop_leftovers()
    return results


def _stop_leftovers() -> None:
    """A check that timed out may still wait on a script in a target interpreter (an import that
    hangs): kill those, as the CLI's Ctrl-C path does (every child is neuronctl.proc's)."""
    from neuronctl import proc

    proc.kill_all()


class Begun:
    """A check's run given to run_ready, which the run that follows (once all is ready, or once
    one check runs long) takes over instead of running the check again: a check slowed by what
    runs beside it keeps its work, and nothing is done twice."""

    def __init__(self, run: Callable[[], CheckOutcome]) -> None:
        self._run = run
        self._lock = threading.Lock()
        self._state: Literal["waiting", "running", "taken"] = "waiting"
        self._ended = threading.Event()
        self._outcome: CheckOutcome | None = None
        self._error: Exception | None = None
        self._not_yet = False
        self.began: float = 0.0
        """When it began here (perf_counter; 0.0: not yet)."""

    @property
    def running(self) -> bool:
        return self.began > 0 and not self._ended.is_set()

    def __call__(self) -> CheckOutcome:
        with self._lock:
            if self._state == "taken":  # the run that follows runs it, from its own start
                raise NotYet("taken over")
            self._state = "running"
            self.began = time.perf_counter()
        try:
            self._outcome = self._run()
            return self._outcome
        except NotYet:
            self._not_yet = True
            raise
        except Exception as exc:  # the taker reports it as its own
            self._error = exc
            raise
        finally:
            self._ended.set()

    def taken_over(self, check: Check, *, again: bool = True) -> Check:
        """`check` for the run that follows: one that began here is waited for, under that
        run's limit for it (one that hangs times out there as one begun there would), its time
        taken counted from when it began here; one that raised raises the same there, and one
        that stopped at NotYet runs again there where `again` (what it read is ready now) and
        stops at NotYet there too where not (all was ready: running it twice changes nothing).
        One that had not begun never will here, and runs there."""
        with self._lock:
            if self._state == "waiting":
                self._state = "taken"
                return check
        fresh, earlier = check.run, check.began
        when = [self.began]

        def run() -> CheckOutcome:
            self._ended.wait()
            if self._error is not None:
                raise self._error
            if self._outcome is not None:
                return self._outcome
            if self._not_yet and not again:
                raise NotYet("not ready when all was")
            when[0] = time.perf_counter()  # run again: its time is this run's
            return fresh()

        def began() -> float:  # where it was taken over before, from there
            return when[0] if earlier is None else earlier()

        return _running(check, run, began)


def begin(checks: Sequence[Check]) -> tuple[dict[str, Begun], list[Check]]:
    """Each check's Begun, by id, and the checks to give run_ready: each run through its Begun."""
    begun = {c.id: Begun(c.run) for c in checks}
    return begun, [_running(c, begun[c.id]) for c in checks]


def _running(check: Check, run: Callable[[], CheckOutcome],
             began: Callable[[], float] | None = None) -> Check:
    return Check(check.id, check.title, run, check.timeout, check.severity,
                 check.began if began is None else began)
