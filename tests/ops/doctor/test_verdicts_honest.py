"""Issue 25, item 4: verdicts say what was measured and what is there: a CPU throughput priced
on Trainium is flagged, a CPU probe is no pass of a Neuron device, no stack is not healthy."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support.doctor_facts import facts, machine, probe, python_env
from support.sysroots import build_cpu_host

from neuronctl.ops.doctor.checks_hardware import check_device
from neuronctl.ops.doctor.report import DoctorReport
from neuronctl.ops.doctor.runner import CheckResult

pytestmark = pytest.mark.first_hour  # the first_hour campaign (was tests/test_first_hour_honest.py)


def cpu_smoke(cli, path: Path) -> Path:
    r = cli("smoke", "--device", "cpu", "--steps", "1", "--warmup", "1", "-o", str(path))
    assert r.code == 0, r.err
    assert json.loads(path.read_text())["smoke"]["device"] == "cpu"
    return path


def test_a_cpu_throughput_priced_on_trainium_is_flagged(cli, tmp_path):
    report = cpu_smoke(cli, tmp_path / "smoke.json")
    args = ("cost", "--from", str(report), "--instance", "trn2.48xlarge",
            "--price", "trn2.48xlarge=40:16")
    r = cli(*args, "--json")
    assert r.code == 0, r.err  # a warning, not a failure
    doc = json.loads(r.out)["cost"]
    assert doc["measured_on"] == "cpu"
    assert len(doc["warnings"]) == 1 and doc["warnings"][0].startswith(
        "trn2.48xlarge: throughput measured on CPU, not on its Neuron device")
    text = cli(*args)
    assert "warn: trn2.48xlarge: throughput measured on CPU" in " ".join(text.out.split())


def test_a_cpu_throughput_priced_on_a_cpu_or_unknown_instance_is_not_flagged(cli, tmp_path):
    report = cpu_smoke(cli, tmp_path / "smoke.json")
    r = cli("cost", "--from", str(report), "--instance", "c7i.48xlarge",
            "--price", "c7i.48xlarge=8.5", "--json")
    doc = json.loads(r.out)["cost"]
    assert doc["measured_on"] == "cpu" and doc["warnings"] == []


def test_a_throughput_given_by_hand_names_no_device(cli):
    r = cli("cost", "--throughput", "1000", "--instance", "trn2.48xlarge",
            "--price", "trn2.48xlarge=40:16", "--json")
    doc = json.loads(r.out)["cost"]
    assert doc["measured_on"] is None and doc["warnings"] == []


def test_a_gpu_price_with_a_neuron_measurement_is_flagged(cli, tmp_path):
    report = cpu_smoke(cli, tmp_path / "smoke.json")
    data = json.loads(report.read_text())
    data["smoke"]["device"] = "neuron"
    report.write_text(json.dumps(data))
    r = cli("cost", "--from", str(report), "--instance", "p5.48xlarge", "--instance",
            "trn2.48xlarge", "--price", "p5.48xlarge=55:8", "--price", "trn2.48xlarge=40:16",
            "--json")
    warnings = json.loads(r.out)["cost"]["warnings"]
    assert len(warnings) == 1 and "p5.48xlarge" in warnings[0] and "NVIDIA GPU" in warnings[0]


def test_plain_doctor_on_a_machine_without_neuron_says_so(cli, tmp_path):
    root = build_cpu_host(tmp_path / "cpu")
    r = cli("doctor", "--sysroot", str(root), "--python", sys.executable, "--json")
    assert r.code == 0  # the README's first command on a fresh machine
    doc = json.loads(r.out)
    probe_check = next(c for c in doc["checks"] if c["id"] == "device.probe")
    assert probe_check["status"] == "skip"
    assert probe_check["message"].startswith("torch works on cpu; no Neuron device here")
    text = cli("doctor", "--sysroot", str(root), "--python", sys.executable)
    assert text.code == 0
    verdict = text.out.strip().splitlines()[-1]
    assert "healthy" not in verdict and "no Neuron stack installed here" in verdict
    assert "all tiers passed on cpu" not in text.out


def test_a_cpu_probe_when_neuron_is_asked_is_a_skip_saying_why():
    out = check_device(facts(device="neuron", probe=probe(device="cpu")))
    assert out.status == "skip" and out.message.startswith("probe ran on cpu, not a Neuron device")


def test_a_cpu_probe_on_a_neuron_host_is_never_a_pass():
    # Nothing Neuron installed: the CPU-only probe is a skip, saying why.
    out = check_device(facts(probe=probe(device="cpu"), hardware=machine("trn2")))
    assert out.status == "skip" and out.message.startswith("probe ran on cpu, not a Neuron device")
    assert "no Neuron torch backend is installed here" in out.message
    # torch-neuronx installed and still no Neuron device reached: a warning.
    env = python_env(packages={"torch-neuronx": "2.14.3.0", "torch": "2.14.0"})
    out = check_device(facts(probe=probe(device="cpu"), hardware=machine("trn2"), env=env))
    assert out.status == "warn" and out.message.startswith("probe ran on cpu, not a Neuron device")


def _report(torch_neuronx: str | None, status: str) -> DoctorReport:
    check = CheckResult("packages.torch-neuronx", "torch-neuronx", status, "m", None, 1.0)  # type: ignore[arg-type]
    return DoctorReport((check,), False, {"packages": {"torch-neuronx": torch_neuronx}})


def test_healthy_only_with_the_stack_there():
    assert "healthy" in _report("2.14.3.0", "pass").verdict_line()
    missing = _report(None, "warn").verdict_line()
    assert missing.startswith("warn: no Neuron stack installed here") and "healthy" not in missing
