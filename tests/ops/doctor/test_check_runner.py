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
from neuronctl.ops.doctor.run import DoctorRequest, DoctorRun, Known
from neuronctl.ops.doctor.runner import STALL_S, Check, CheckOutcome, run_checks


def _recorded(check_id: str, seen: dict[str, tuple[str, float, float]],
              sleep: float = 0.0) -> Check:
    """A check that records the thread it ran on and when it began and ended."""
    def run() -> CheckOutcome:
        began = time.perf_counter()
        if sleep:
            threading.Event().wait(sleep)
        seen[check_id] = (threading.current_thread().name, began, time.perf_counter())
        return CheckOutcome("pass", check_id)

    return Check(check_id, check_id, run, 10.0)


def test_quick_checks_run_one_after_another_on_one_thread() -> None:
    seen: dict[str, tuple[str, float, float]] = {}
    ids = [f"a.quick{i}" for i in range(12)]
    results = run_checks([_recorded(i, seen) for i in ids], total=30.0)
    assert [(r.id, r.status, r.message) for r in results] == [(i, "pass", i) for i in ids]
    assert {name for name, _, _ in seen.values()} == {"checks"}
    ends = [seen[i][2] for i in ids]
    assert ends == sorted(ends)  # in order: each began after the one before ended
    assert all(seen[b][1] >= seen[a][2] for a, b in itertools.pairwise(ids))


def test_a_check_that_runs_long_sends_the_rest_to_modes_of_their_own() -> None:
    """The slow one keeps its thread and is waited for; the ones after it do not wait their turn
    behind it: they begin while it still runs."""
    seen: dict[str, tuple[str, float, float]] = {}
    slow = STALL_S * 15
    checks = [_recorded("a.first", seen), _recorded("b.slow", seen, slow),
              _recorded("c.after", seen, slow), _recorded("d.after", seen)]
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

    checks = [_recorded("a.quick", seen), Check("b.hangs", "hangs", hangs, 0.5),
              _recorded("c.quick", seen)]
    results = run_checks(checks, total=30.0)
    hang.set()
    assert [(r.id, r.status) for r in results] == [("a.quick", "pass"), ("b.hangs", "fail"),
                                                   ("c.quick", "pass")]
    assert results[1].message == "timed out after 0.5s"


def test_progress_counts_the_checks_that_ended_one_after_another() -> None:
    """A long doctor run says how many of all its checks are done, those that ran before the
    slow one included."""
    told: list[tuple[int, int, tuple[str, ...]]] = []
    seen: dict[str, tuple[str, float, float]] = {}
    checks = [_recorded("a.quick", seen), _recorded("b.slow", seen, 0.6)]
    run_checks(checks, total=30.0, progress=lambda d, t, r: told.append((d, t, r)))
    assert told and all(total == 2 for _, total, _ in told)
    assert told[0] == (1, 2, ("b.slow",)) and told[-1][0] == 2


def test_without_one_by_one_every_check_has_a_thread_at_once() -> None:
    seen: dict[str, tuple[str, float, float]] = {}
    ids = ["a.one", "b.two", "c.three"]
    run_checks([_recorded(i, seen) for i in ids], total=30.0, one_by_one=False)
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
