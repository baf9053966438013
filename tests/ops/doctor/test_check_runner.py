"""Issue 36: the doctor's checks run one after another on one thread while each ends quickly (a
thread each cost more CPU than the checks: most read a file or two); once one runs long, it is
taken over and the checks left run in parallel, each on a thread of its own, with every time limit
counted from the start as before."""

from __future__ import annotations

import itertools
import sys
import threading
import time
from pathlib import Path

import pytest
from support.doctor_facts import MANIFEST, NO_HARDWARE, python_env

import neuronctl.ops.doctor.run
import neuronctl.ops.doctor.runner
from neuronctl.ops.doctor.run import DoctorRequest, DoctorRun, Known
from neuronctl.ops.doctor.runner import Check, CheckOutcome, NotYet, run_checks


def _recording_check(check_id: str, seen: dict[str, tuple[str, float, float]],
              sleep: float = 0.0) -> Check:
    """A check that records the thread it ran on and when it began and ended."""
    def run() -> CheckOutcome:
        began = time.perf_counter()
        if sleep:
            threading.Event().wait(sleep)
        seen[check_id] = (threading.current_thread().name, began, time.perf_counter())
        return CheckOutcome("pass", check_id)

    return Check(check_id, check_id, run, 10.0)


@pytest.fixture
def stall(monkeypatch: pytest.MonkeyPatch) -> float:
    """A longer wait before the checks stop taking turns than the runner's own 20 ms, so that a
    test host that pauses a thread for a while does not take over a quick check."""
    monkeypatch.setattr(neuronctl.ops.doctor.runner, "STALL_S", 0.25)
    return 0.25


def test_quick_checks_run_one_after_another_on_one_thread(stall: float) -> None:
    seen: dict[str, tuple[str, float, float]] = {}
    ids = [f"a.quick{i}" for i in range(12)]
    told: list[tuple[int, int, tuple[str, ...]]] = []
    results = run_checks([_recording_check(i, seen) for i in ids], total=30.0,
                         progress=lambda d, t, r: told.append((d, t, r)))
    assert [(r.id, r.status, r.message) for r in results] == [(i, "pass", i) for i in ids]
    assert {name for name, _, _ in seen.values()} == {"checks"}
    assert all(seen[b][1] >= seen[a][2] for a, b in itertools.pairwise(ids))  # in order
    assert told == [(12, 12, ())]  # all done, said once


def test_a_check_that_runs_long_sends_the_rest_to_threads_of_their_own(stall: float) -> None:
    """The slow one keeps its thread and is waited for; the ones after it do not wait their turn
    behind it: they begin while it still runs."""
    seen: dict[str, tuple[str, float, float]] = {}
    checks = [_recording_check("a.first", seen), _recording_check("b.slow", seen, 4 * stall),
              _recording_check("c.after", seen, 2 * stall), _recording_check("d.after", seen)]
    results = run_checks(checks, total=30.0)
    assert [r.status for r in results] == ["pass"] * 4
    assert seen["a.first"][0] == seen["b.slow"][0] == "checks"  # run once, not again
    assert seen["c.after"][0] == "check-c.after" and seen["d.after"][0] == "check-d.after"
    assert seen["c.after"][1] < seen["b.slow"][2] and seen["d.after"][1] < seen["b.slow"][2]


def test_a_check_that_hangs_after_quick_ones_times_out_and_the_rest_still_run() -> None:
    hang = threading.Event()
    seen: dict[str, tuple[str, float, float]] = {}

    def hangs() -> CheckOutcome:
        hang.wait(30)
        return CheckOutcome("pass", "never")

    checks = [_recording_check("a.quick", seen), Check("b.hangs", "hangs", hangs, 0.5),
              _recording_check("c.quick", seen)]
    results = run_checks(checks, total=30.0)
    hang.set()
    assert [(r.id, r.status) for r in results] == [("a.quick", "pass"), ("b.hangs", "fail"),
                                                   ("c.quick", "pass")]
    assert results[1].message == "timed out after 0.5s"


def test_a_check_that_raises_once_taken_over_is_run_once_and_reported_as_raised() -> None:
    calls: list[str] = []

    def breaks() -> CheckOutcome:
        calls.append(threading.current_thread().name)
        threading.Event().wait(0.2)  # long enough to be taken over
        raise RuntimeError("probe broke")

    results = run_checks([Check("a.quick", "quick", lambda: CheckOutcome("pass", "ok"), 5.0),
                          Check("b.breaks", "breaks", breaks, 5.0)], total=30.0)
    assert calls == ["checks"]
    assert (results[1].status, results[1].message) == ("fail",
                                                       "check raised RuntimeError: probe broke")


def test_a_check_that_reads_the_target_too_early_where_all_is_ready_runs_once() -> None:
    """NotYet where everything is ready is a check's bug: it is reported once as such, and the
    check is not run a second time to find the same."""
    calls: list[str] = []

    def too_early() -> CheckOutcome:
        calls.append(threading.current_thread().name)
        raise NotYet("env")

    results = run_checks([Check("a.early", "early", too_early, 5.0)], total=30.0)
    assert calls == ["checks"]
    assert (results[0].status, results[0].message) == (
        "fail", "internal: it read the target before it was ready")


def test_a_check_taken_over_is_timed_from_when_it_began(stall: float) -> None:
    """Its time taken is its whole run, the part before the takeover included."""
    seen: dict[str, tuple[str, float, float]] = {}
    results = run_checks([_recording_check("a.slow", seen, 3 * stall), _recording_check("b.after", seen)],
                         total=30.0)
    name, began, ended = seen["a.slow"]
    assert name == "checks" and results[0].status == "pass"
    assert results[0].duration_ms >= round((ended - began) * 1000, 1) >= 3 * stall * 1000


def test_waiting_turns_never_eats_a_checks_own_limit() -> None:
    """Checks that each end within the stall wait do not queue past their limits: after a tenth
    of the shortest limit those left run at once, so every check ends within the run's budget
    (here 40 checks of 15 ms one after another would take 0.6 s, three times the budget)."""
    seen: dict[str, tuple[str, float, float]] = {}
    ids = [f"a.check{i:02}" for i in range(40)]
    start = time.perf_counter()
    results = run_checks([_recording_check(i, seen, 0.015) for i in ids], total=0.2)
    assert [r.status for r in results] == ["pass"] * 40
    assert max(end for _, _, end in seen.values()) - start < 0.2
    assert {name for name, _, _ in seen.values()} != {"checks"}


def test_progress_counts_the_checks_that_ended_one_after_another(stall: float) -> None:
    """A long doctor run says how many of all its checks are done, those that ran before the
    slow one included."""
    told: list[tuple[int, int, tuple[str, ...]]] = []
    seen: dict[str, tuple[str, float, float]] = {}
    checks = [_recording_check("a.quick", seen), _recording_check("b.slow", seen, 3 * stall)]
    run_checks(checks, total=30.0, progress=lambda d, t, r: told.append((d, t, r)))
    assert told and all(total == 2 for _, total, _ in told)
    assert told[0] == (1, 2, ("b.slow",)) and told[-1][0] == 2


def test_without_one_by_one_every_check_has_a_thread_at_once() -> None:
    seen: dict[str, tuple[str, float, float]] = {}
    ids = ["a.one", "b.two", "c.three"]
    run_checks([_recording_check(i, seen) for i in ids], total=30.0, one_by_one=False)
    assert {i: seen[i][0] for i in ids} == {i: f"check-{i}" for i in ids}


def _modes_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, known: Known) -> set[str]:
    """How a doctor's checks ran: one by one, or at once (its run_checks calls, recorded)."""
    calls: list[bool] = []
    real = neuronctl.ops.doctor.run.run_checks

    def recorded(checks: list[Check], total: float | None = None, progress: object = None, *,
                 one_by_one: bool = True) -> list[object]:
        calls.append(one_by_one)
        return real(checks, total, progress, one_by_one=one_by_one)  # type: ignore[arg-type]

    monkeypatch.setattr(neuronctl.ops.doctor.run, "run_checks", recorded)
    (tmp_path / "sys").mkdir(exist_ok=True)
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    release = next(r.version for r in MANIFEST.releases if minor in r.python and r.frameworks)
    DoctorRun(DoctorRequest(MANIFEST, release=release, device_probe=False, sysroot=tmp_path,
                            known=known)).finish()
    return {"one by one" if c else "at once" for c in calls}


def test_a_doctor_runs_one_by_one_only_where_the_target_is_at_hand(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """An install's doctor holds the target's inspection: one after another. `neuronctl doctor`
    starts the target's interpreter first: every check at once, so that the host's checks run
    while it starts."""
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    env = python_env(f"{minor}.0", {"torch": "2.14.0", "torch-neuronx": "2.14.3.0"})
    assert _modes_of(tmp_path, monkeypatch, Known(python=sys.executable, hardware=NO_HARDWARE,
                                                   env=env)) == {"one by one"}
    assert _modes_of(tmp_path, monkeypatch, Known(python=sys.executable,
                                                   hardware=NO_HARDWARE)) == {"at once"}
