"""The doctor and env operations called as functions, without the CLI: bad input is refused
before any fact is gathered, the reporter hears which checks run, and the env report is built
from given facts with its secrets redacted."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.doctor_facts import MANIFEST, machine, python_env

import neuronctl.probes.hardware
from neuronctl.errors import InputError
from neuronctl.ops.doctor.levels import DEFAULT_LEVEL
from neuronctl.ops.doctor.run import DoctorRequest, DoctorStarted, doctor
from neuronctl.ops.env import REDACTED, build_env_report
from neuronctl.ops.reporter import CollectingReporter
from neuronctl.probes.sysroot import SysRoot


@pytest.fixture
def no_hardware_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the machine was read")

    monkeypatch.setattr(neuronctl.probes.hardware, "gather_evidence", refuse)


@pytest.mark.parametrize(("change", "message"), [
    ({"release": "9.9"}, "9.9"),
    ({"device": "tpu"}, "device must be auto, neuron, cuda or cpu, got 'tpu'"),
    ({"only": ("hardwre",)}, "did you mean 'hardware'?"),
    ({"sysroot": Path("/nonexistent-sysroot")}, "--sysroot /nonexistent-sysroot: no such directory"),
    ({"lock": Path("/nonexistent/pylock.toml")}, "/nonexistent/pylock.toml"),
])
def test_bad_requests_are_refused_before_anything_is_gathered(
        no_hardware_reads: None, change: dict[str, object], message: str) -> None:
    request = DoctorRequest(manifest=MANIFEST, **change)  # type: ignore[arg-type]
    with pytest.raises(InputError) as caught:
        doctor(request)
    assert message in caught.value.message


def test_the_reporter_hears_the_chosen_checks(no_hardware_reads: None, tmp_path: Path) -> None:
    reporter = CollectingReporter()
    (tmp_path / "sys").mkdir()  # an empty machine is still a root: sys/ (issue 22, item 11)
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    release = next(r.version for r in MANIFEST.releases if minor in r.python and r.frameworks)
    report = doctor(DoctorRequest(manifest=MANIFEST, only=("python",), release=release,
                                  sysroot=tmp_path), reporter)
    assert [(c.id, c.status) for c in report.checks] == [("python.version", "pass")]
    step = reporter.wait_for(DoctorStarted, 0)
    assert isinstance(step, DoctorStarted) and step.checks == ("python.version",) and step.level == DEFAULT_LEVEL
    assert "hardware" not in report.environment


def test_env_report_from_given_facts_redacts_secrets(tmp_path: Path) -> None:
    env = python_env("3.12.3", {"torch": "2.14.0+cu124", "torch-neuronx": "2.14.3.0",
                                "requests": "2.32.0"})
    environ = {"NEURON_RT_VISIBLE_CORES": "0-3", "NEURONCTL_INDEX_TOKEN": "hush",
               "PIP_INDEX_URL": "https://user:hush@example.invalid/simple", "HOME": "/root"}
    report = build_env_report(env, machine("trn2"), SysRoot(tmp_path), environ).to_json()
    assert report["packages"] == {"torch": "2.14.0+cu124", "torch-neuronx": "2.14.3.0"}
    assert report["torch"] == {"version": "2.14.0+cu124", "build": "CUDA"}
    assert report["hardware"]["chip"] == "trn2" and report["hardware"]["devices"] == 2
    assert report["environment"]["NEURONCTL_INDEX_TOKEN"] == REDACTED
    assert report["environment"]["NEURON_RT_VISIBLE_CORES"] == "0-3"
    assert "hush" not in str(report) and "HOME" not in report["environment"]
