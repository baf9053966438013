"""Issue 36: an install's doctor checks the host while its engine still changes the target.
DoctorRun.start_ready runs every chosen check that reads nothing of the target, one after another
on one thread; one that reads it (the interpreter, the device probe, the model) stops at once with
NotYet, gathers nothing, and runs in finish(), once the target is ready. finish() takes over a
check still running (waited for under its own limit, never run twice) and runs one not begun. The
report is the one doctor() makes of the same request."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
from support.doctor_facts import MANIFEST, NO_HARDWARE, python_env

import neuronctl.ops.doctor.facts
import neuronctl.ops.doctor.run
from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.run import DoctorRequest, DoctorRun, Known, doctor
from neuronctl.ops.doctor.runner import (
    Check,
    CheckOutcome,
    CheckResult,
    NotYet,
    begin,
    run_checks,
    run_ready,
)
from neuronctl.probes.pyenv import PythonEnv
from neuronctl.probes.sysroot import SysRoot

HOST_CHECKS = {"packages.system", "host.os", "hardware.chip", "hardware.driver", "hardware.errors",
               "runtime.compat", "runtime.cores", "device.access", "device.holders", "network.efa"}
"""The default level's checks that read nothing of the target interpreter."""


def _release_for_this_python() -> str:
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    return next(r.version for r in MANIFEST.releases if minor in r.python and r.frameworks)


@pytest.fixture
def inspections(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each inspection of the target, by the thread that made it; the target is an interpreter
    with torch and torch-neuronx installed."""
    seen: list[str] = []
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"

    def inspect(python: str, **_: object) -> PythonEnv:
        seen.append(threading.current_thread().name)
        return python_env(f"{minor}.0", {"torch": "2.14.0", "torch-neuronx": "2.14.3.0"})

    monkeypatch.setattr(neuronctl.ops.doctor.facts, "inspect_python", inspect)
    return seen


def test_a_target_fact_before_the_target_is_ready_gathers_nothing(
        tmp_path: Path, inspections: list[str]) -> None:
    ready = threading.Event()
    facts = Facts(python=sys.executable, sysroot=SysRoot(tmp_path), manifest=MANIFEST, release=None,
                  device="auto", timeout=30.0, target_ready=ready)
    for read in (lambda: facts.env, lambda: facts.legacy, lambda: facts.selection):
        with pytest.raises(NotYet):  # directly, and inside the facts made from it
            read()
    assert inspections == []
    assert not any(facts.gathered(k) for k in ("env", "legacy", "selection"))
    ready.set()
    assert facts.selection.reason.startswith("the newest release listing the installed torch-neuronx")
    assert facts.legacy.verdict and facts.env.get("torch-neuronx") is not None
    assert len(inspections) == 1  # once, now that it is ready


def test_a_check_cannot_take_not_yet_for_a_failure() -> None:
    def careless() -> CheckOutcome:
        try:
            raise NotYet("env")
        except Exception:  # what a check may do around a fact: NotYet is not an Exception
            return CheckOutcome("pass", "swallowed")

    def host() -> CheckOutcome:
        return CheckOutcome("pass", "the host is fine")

    checks = [Check("a.target", "target", careless, 5.0), Check("b.host", "host", host, 5.0)]
    into: dict[str, CheckResult] = {}
    run_ready(checks, into)
    assert list(into) == ["b.host"]
    # run_checks runs when all is ready: a check that still raised it is a failure, never a hang
    target, _ = run_checks(checks, 10.0)
    assert (target.status, target.message) == ("fail", "internal: it read the target before it "
                                                       "was ready")


def _doctor_request(tmp_path: Path) -> DoctorRequest:
    (tmp_path / "sys").mkdir(exist_ok=True)
    return DoctorRequest(MANIFEST, release=_release_for_this_python(), device_probe=False, sysroot=tmp_path,
                         known=Known(python=sys.executable, hardware=NO_HARDWARE))


def test_start_ready_checks_the_host_before_the_target_is_ready(
        tmp_path: Path, inspections: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    early: list[set[str]] = []
    real = neuronctl.ops.doctor.run.run_ready

    def recorded(checks: list[Check], into: dict[str, CheckResult]) -> None:
        real(checks, into)
        early.append(set(into))

    monkeypatch.setattr(neuronctl.ops.doctor.run, "run_ready", recorded)
    run = DoctorRun(_doctor_request(tmp_path))
    run.start_ready()
    for _ in range(200):  # the host's checks end without the target
        if early:
            break
        threading.Event().wait(0.05)
    assert early and early[0] == HOST_CHECKS and inspections == []
    report = run.finish()
    # in finish's checks (one after another on "checks", or each on "check-ID"), not the early's
    assert len(inspections) == 1 and inspections[0] != "doctor-ready"
    assert inspections[0] == "checks" or inspections[0].startswith("check-")
    plain = doctor(_doctor_request(tmp_path))
    assert [(c.id, c.status, c.message) for c in report.checks] == \
        [(c.id, c.status, c.message) for c in plain.checks]
    assert report.environment.keys() == plain.environment.keys()


def test_finish_alone_is_the_doctor(tmp_path: Path, inspections: list[str]) -> None:
    """Never started early (a nothing-to-do install, `neuronctl doctor`): every check in finish."""
    report = DoctorRun(_doctor_request(tmp_path)).finish()
    assert {c.id for c in report.checks} >= HOST_CHECKS | {"python.version", "packages.coherence"}
    assert len(inspections) == 1


def _counted(outcome: str, calls: list[str], gate: threading.Event | None = None,
             entered: threading.Event | None = None) -> Check:
    def run() -> CheckOutcome:
        calls.append(outcome)
        if entered is not None:
            entered.set()
        if gate is not None:
            gate.wait(30)
        return CheckOutcome("pass", outcome)

    return Check(f"a.{outcome}", outcome, run, 0.5 if gate is not None else 5.0)


def test_each_result_is_there_as_its_check_ends() -> None:
    """One after another on one thread: a caller that will not wait (finish(), once the engine
    is done) takes what has ended; a check still running, or not begun, is not there."""
    calls: list[str] = []
    release, entered = threading.Event(), threading.Event()
    checks = [_counted("quick", calls), _counted("slow", calls, release, entered),
              _counted("after", calls)]
    into: dict[str, CheckResult] = {}
    worker = threading.Thread(target=run_ready, args=(checks, into), daemon=True)
    worker.start()
    assert entered.wait(10)
    assert list(into) == ["a.quick"] and calls == ["quick", "slow"]  # "after" waits its turn
    release.set()
    worker.join(10)
    assert list(into) == ["a.quick", "a.slow", "a.after"]


def test_a_check_still_running_is_taken_over_not_run_again() -> None:
    """finish() waits for a check begun early (a host slowed by the engine beside it) instead of
    running it a second time, and runs the one not begun yet, which the early thread then skips."""
    calls: list[str] = []
    release, entered = threading.Event(), threading.Event()
    checks = [_counted("slow", calls, release, entered), _counted("after", calls)]
    begun, early = begin(checks)
    threading.Thread(target=run_ready, args=(early, {}), daemon=True).start()
    assert entered.wait(10)
    late = [begun[c.id].taken_over(c) for c in checks]
    threading.Timer(0.1, release.set).start()  # within the slow check's limit of 0.5 s
    results = run_checks(late, 10.0)
    assert [(r.id, r.status, r.message) for r in results] == [("a.slow", "pass", "slow"),
                                                              ("a.after", "pass", "after")]
    threading.Event().wait(0.2)  # the early thread, free again, must not run "after" as well
    assert sorted(calls) == ["after", "slow"]


def _target_check(calls: list[str], ready: threading.Event) -> Check:
    """A check that reads the target: NotYet until `ready` is set."""
    def target() -> CheckOutcome:
        calls.append("target")
        if not ready.is_set():
            raise NotYet("env")
        return CheckOutcome("pass", "target ready")

    return Check("a.target", "target", target, 5.0)


def test_a_check_begun_early_is_timed_from_its_early_start() -> None:
    """finish() reports the time a check took from where it began beside the engine, not from
    the takeover; one that stopped at NotYet and runs again is timed by that run alone."""
    calls: list[str] = []
    release, entered = threading.Event(), threading.Event()
    ready = threading.Event()

    checks = [_target_check(calls, ready), _counted("slow", calls, release, entered)]
    begun, early = begin(checks)
    threading.Thread(target=run_ready, args=(early, {}), daemon=True).start()
    assert entered.wait(10)
    threading.Event().wait(0.3)  # the engine's time: the slow check runs on through it
    ready.set()
    threading.Timer(0.05, release.set).start()
    results = run_checks([begun[c.id].taken_over(c) for c in checks], 10.0)
    assert [(r.id, r.status) for r in results] == [("a.target", "pass"), ("a.slow", "pass")]
    assert results[1].duration_ms >= 300
    assert results[0].duration_ms < 300
    assert calls.count("slow") == 1 and calls.count("target") == 2


def test_a_check_that_hangs_early_times_out_under_its_own_limit() -> None:
    """A check hung since the early run is waited for only as long as its limit from finish()'s
    start (as if begun there), then reported as timed out; the checks queued behind it on the early
    thread run in finish() instead, and one that stopped at NotYet runs again, now ready."""
    calls: list[str] = []
    hang, entered = threading.Event(), threading.Event()
    ready = threading.Event()

    checks = [_target_check(calls, ready), _counted("hung", calls, hang, entered),
              _counted("behind", calls)]
    begun, early = begin(checks)
    threading.Thread(target=run_ready, args=(early, {}), daemon=True).start()
    assert entered.wait(10)
    ready.set()
    results = run_checks([begun[c.id].taken_over(c) for c in checks], 10.0)
    hang.set()
    assert [(r.id, r.status, r.message) for r in results] == [
        ("a.target", "pass", "target ready"), ("a.hung", "fail", "timed out after 0.5s"),
        ("a.behind", "pass", "behind")]
    assert calls.count("hung") == 1 and calls.count("target") == 2


def test_finish_does_not_wait_for_the_checks_started_early(
        tmp_path: Path, inspections: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Early checks that have not begun by finish() (the early thread held up) run in finish(),
    within the doctor's one budget: finish() never waits for them."""
    hung = threading.Event()

    def hangs(checks: list[Check], into: dict[str, CheckResult]) -> None:
        hung.wait(60)

    monkeypatch.setattr(neuronctl.ops.doctor.run, "run_ready", hangs)
    run = DoctorRun(_doctor_request(tmp_path))
    run.start_ready()
    report = run.finish()
    hung.set()
    plain = doctor(_doctor_request(tmp_path))
    assert [(c.id, c.status) for c in report.checks] == [(c.id, c.status) for c in plain.checks]
