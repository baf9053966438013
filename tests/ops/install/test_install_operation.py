"""The install operation on its own, as another front end would call it: a request in, events
to a reporter, a frozen outcome back; no click, nothing printed."""

from __future__ import annotations

import threading

import pytest
from msgspec.structs import replace
from support.venvs import LEGACY, copied_venv, installed, snapshot
from support.wheels import pip_install

from neuronctl.backend.choose import choose_engine
from neuronctl.cache_dir import user_cache_dir
from neuronctl.errors import OperationFailed
from neuronctl.ops.index_routing import route_indexes
from neuronctl.ops.install.env_mutex import environment_lock
from neuronctl.ops.install.outcome import PlanReady
from neuronctl.ops.install.request import InstallRequest
from neuronctl.ops.install.run import install
from neuronctl.ops.lock.request import StackRequest, StackSettings, plan_request
from neuronctl.ops.reporter import CollectingReporter
from neuronctl.release.manifest import load_bundled_manifest

pytestmark = pytest.mark.slow


def request(backend: str | None = None, **fields) -> InstallRequest:
    """The request the CLI builds, with no config and no flags: the bundled defaults."""
    settings = StackSettings()

    def stack(python: str, platform: str) -> StackRequest:
        return plan_request(load_bundled_manifest(),
                            replace(settings, python_versions=(python,), platforms=(platform,)))

    return InstallRequest(manifest=load_bundled_manifest, engine=choose_engine(backend, None),
                          routing=lambda recorded: route_indexes(settings.indexes, recorded),
                          stack=stack, **fields)


def test_a_dry_run_reports_through_the_reporter_and_prints_nothing(locked, tmp_path, capsys):
    reporter = CollectingReporter()
    outcome = install(request(lock=locked, venv=tmp_path / "v", dry_run=True), reporter)
    assert outcome.dry_run and not outcome.applied and outcome.doctor is None
    assert {c.action for c in outcome.plan.changes} == {"install"} and not (tmp_path / "v").exists()
    assert reporter.messages("warning") == ["no Neuron hardware here; preparing an environment for "
                                            "another host"]
    assert [m for m in reporter.messages("note") if "beta release" in m]
    (plan,) = [e for e in reporter.events if isinstance(e, PlanReady)]
    assert plan.step == "plan" and plan.plan == outcome.plan and plan.target == outcome.target
    assert plan.source == outcome.source and plan.choice == outcome.choice
    assert outcome.to_json()["commands"][0][1:3] == ["venv", "--python"]
    assert capsys.readouterr() == ("", "")


def test_removals_are_asked_through_the_callback_and_a_no_changes_nothing(uni, locked, tmp_path,
                                                                             stack_wheels, pip_venvs):
    venv = tmp_path / "legacy"
    copied_venv(pip_venvs, "3.12", venv)
    pip_install(venv / "bin" / "python", [stack_wheels[p] for p in LEGACY])
    before = snapshot(venv)
    asked: list[str] = []

    def no(question: str) -> bool:
        asked.append(question)
        return False

    with pytest.raises(OperationFailed, match="not confirmed; nothing changed"):
        install(request(lock=locked, python=str(venv / "bin" / "python"), backend="pip"),
                CollectingReporter(), confirm=no)
    assert len(asked) == 1 and asked[0].startswith("Remove ") and "torch-xla 2.9.0" in asked[0]
    assert snapshot(venv) == before


def test_an_install_waits_its_turn_and_says_so(uni, locked, tmp_path):
    """While another install holds the environment, the operation reports that it waits (a
    test waits for that event, not for a guessed time), then goes on once the other is done."""
    venv = tmp_path / "v"
    reporter = CollectingReporter()
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(install(
        request(lock=locked, venv=venv, venv_python="3.12", backend="uv", check=False), reporter)))
    with environment_lock(str(venv.resolve()), user_cache_dir(), lambda: None):
        worker.start()
        waiting = reporter.wait_for("waiting", timeout=60)
        assert waiting is not None and waiting.message == (f"waiting for another neuronctl install "
                                                           f"into {venv.resolve()} to finish")
        assert worker.is_alive() and not venv.exists()
    worker.join(timeout=120)
    assert done and done[0].applied  # type: ignore[attr-defined]
    assert installed(venv / "bin" / "python")["torch-neuronx"] == "2.14.3.0"


def test_the_check_reads_the_host_while_the_engine_runs(uni, locked, tmp_path, monkeypatch):
    """Issue 36: the doctor's checks of the host (nothing of the target) run while the engine
    still installs; the target's own checks run once it is done, each check once."""
    import neuronctl.ops.doctor.run as doctor_run

    early: list[set[str]] = []
    late: list[str] = []
    ready, checks = doctor_run.run_ready, doctor_run.run_checks

    def ready_recorded(given, into):
        ready(given, into)
        early.append(set(into))

    def checks_recorded(given, total=None, progress=None, *, one_by_one=True):
        late.extend(c.id for c in given)
        return checks(given, total, progress, one_by_one=one_by_one)

    monkeypatch.setattr(doctor_run, "run_ready", ready_recorded)
    monkeypatch.setattr(doctor_run, "run_checks", checks_recorded)
    outcome = install(request(lock=locked, venv=tmp_path / "v", venv_python="3.12", backend="uv"),
                      CollectingReporter())
    assert outcome.applied and outcome.doctor is not None
    (host,) = early  # started as the engine started (check.py's Prepared.engine_started)
    assert {"host.os", "packages.system", "device.access"} <= host
    # (a host check still running when the engine ended would be taken over: not here, where
    # the engine installs for far longer than the host's checks take)
    assert "python.version" in late and "python.version" not in host
    assert sorted(c.id for c in outcome.doctor.checks) == sorted(host | set(late))
