"""Severity decides the action (issue 27): every outcome carries drain, fix or info; --slurm-drain
drains only for drain by default (--drain-on, config drain_on), against a real Slurm cluster;
JSON, JUnit and Prometheus carry the severity; NPD's config maps it to its own condition."""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.health_sysroots import HW_LINES, add_kernel_log
from support.slurm_cluster import SlurmCluster, slurm_available
from support.sysroots import build_host

from neuronctl.errors import InputError
from neuronctl.ops.doctor.runner import CheckResult
from neuronctl.ops.slurm_node import drain_on_value, drain_triggers, parse_show_node


def _checks() -> list[CheckResult]:
    return [CheckResult("packages.legacy-xla", "t", "fail", "m", "fix", 1.0, severity="fix"),
            CheckResult("hardware.errors", "t", "fail", "m", None, 1.0, severity="drain"),
            CheckResult("hardware.chip", "t", "warn", "m", None, 1.0, severity="fix"),
            CheckResult("python.version", "t", "pass", "m", None, 1.0)]


def test_drain_policies() -> None:
    assert drain_triggers(_checks(), "drain") == ["hardware.errors"]
    assert drain_triggers(_checks(), "fail") == ["packages.legacy-xla", "hardware.errors"]
    assert drain_triggers(_checks(), "fail", strict=True) == [
        "packages.legacy-xla", "hardware.errors", "hardware.chip"]
    assert drain_triggers(_checks(), "warn") == [
        "packages.legacy-xla", "hardware.errors", "hardware.chip"]
    assert drain_triggers(_checks()[2:], "drain") == []
    assert drain_on_value(None, None) == "drain"
    assert drain_on_value(None, "fail") == "fail"
    assert drain_on_value("warn", "fail") == "warn"
    with pytest.raises(InputError, match="config drain_on"):
        drain_on_value(None, "always")


def test_a_bad_drain_on_in_the_config_is_exit_2(cli, tmp_path: Path, monkeypatch) -> None:
    """The user's own config (a project's drain_on is never read: test_trust_roots)."""
    mine = Path(os.environ["XDG_CONFIG_HOME"]) / "neuronctl" / "config.toml"
    mine.parent.mkdir(parents=True)
    mine.write_text('drain_on = "sometimes"\n')
    monkeypatch.chdir(tmp_path)
    r = cli("doctor", "--level", "1", "--only", "python.version")
    assert r.code == 2 and "drain_on" in r.err and "Traceback" not in r.err
    mine.write_text('drain_on = 3\n')
    assert cli("doctor", "--level", "1", "--only", "python.version").code == 2


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    host = build_host(tmp_path / "broken", "trn2")
    add_kernel_log(host, [HW_LINES["HBM_UNCORRECTABLE_ERROR"]])
    return host


def test_json_junit_and_prometheus_carry_the_severity(cli, broken: Path, tmp_path: Path) -> None:
    args = ("doctor", "--level", "1", "--only", "hardware", "--sysroot", str(broken))
    doc = json.loads(cli(*args, "--json").out)
    severity = {c["id"]: c["severity"] for c in doc["checks"]}
    assert severity["hardware.errors"] == "drain" and severity["hardware.chip"] == "info"
    junit = tmp_path / "d.xml"
    assert cli(*args, "--format", "junit", "-o", str(junit)).code == 1
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    prop = cases["hardware.errors"].find("./properties/property[@name='severity']")
    assert prop is not None and prop.get("value") == "drain"
    prom = tmp_path / "n.prom"
    assert cli(*args, "--format", "prometheus", "-o", str(prom)).code == 1
    families = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    samples = {(s.labels["check"], s.labels["status"]): s.labels["severity"]
               for s in families["neuronctl_doctor_check_status"].samples}
    assert samples[("hardware.errors", "fail")] == "drain"
    assert families["neuronctl_doctor_drain"].samples[0].value == 1


def test_exit_on_drain_ignores_a_fix_failure(cli, broken: Path, tmp_path: Path, monkeypatch) -> None:
    healthy = build_host(tmp_path / "ok", "trn2")
    add_kernel_log(healthy, ["neuron: fine"])
    monkeypatch.setenv("PJRT_DEVICE", "NEURON")  # a legacy XLA signal: a fix-severity failure
    base = ("doctor", "--level", "1", "-q", "--no-color")
    assert cli(*base, "--sysroot", str(healthy)).code == 1
    assert cli(*base, "--sysroot", str(healthy), "--exit-on", "drain").code == 0
    assert cli(*base, "--sysroot", str(broken), "--exit-on", "drain").code == 1


def test_npd_config_maps_drain_to_its_own_condition(cli, broken: Path, tmp_path: Path) -> None:
    config = json.loads(cli("fleet", "npd-config", "--timeout", "60").out)
    stack, hardware = config["rules"]
    assert {c["type"] for c in config["conditions"]} == {stack["condition"], hardware["condition"]}
    assert hardware["condition"] == "NeuronHardwareProblem" and hardware["type"] == "permanent"
    assert hardware["args"][-2:] == ["--exit-on", "drain"]
    healthy = build_host(tmp_path / "ok", "trn2")
    add_kernel_log(healthy, ["neuron: fine"])
    env = {**os.environ, "NEURONCTL_SYSROOT": str(healthy), "PJRT_DEVICE": "NEURON"}

    def run(rule: dict, env: dict[str, str]) -> int:
        return subprocess.run([rule["path"], *rule["args"]], env=env, capture_output=True,
                              text=True, check=False, timeout=60).returncode

    assert run(stack, env) == 1 and run(hardware, env) == 0  # a fix problem: stack only
    env["NEURONCTL_SYSROOT"] = str(broken)
    del env["PJRT_DEVICE"]
    assert run(hardware, env) == 1


# ------------------------------------------------------------------- real Slurm (two nodes)

slurm_only = pytest.mark.skipif(not slurm_available(), reason="needs slurm-wlm and munge (.ci/run)")


@slurm_only
def test_slurm_drain_drains_for_hardware_errors_not_for_a_fix(cli, cluster: SlurmCluster,
                                                              broken: Path, tmp_path: Path,
                                                              monkeypatch) -> None:
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    monkeypatch.setenv("SLURMD_NODENAME", "node1")
    healthy = build_host(tmp_path / "ok", "trn2")
    add_kernel_log(healthy, ["neuron: fine"])

    def show() -> tuple[bool, str]:
        state = parse_show_node(cluster.run("scontrol", "show", "node", "node1").stdout)
        return state.drained, state.reason

    try:
        monkeypatch.setenv("NEURONCTL_SYSROOT", str(healthy))
        monkeypatch.setenv("PJRT_DEVICE", "NEURON")  # packages.legacy-xla fails: severity fix
        fix = cli("doctor", "--level", "1", "--slurm-drain", "--json")
        assert fix.code == 1
        assert json.loads(fix.out)["slurm_drain"]["action"] == "none"
        assert show() == (False, "")
        # the old policy on demand: any failure drains
        old = cli("doctor", "--level", "1", "--slurm-drain", "--drain-on", "fail", "--json")
        assert json.loads(old.out)["slurm_drain"]["action"] == "drain"
        assert show() == (True, "neuronctl: packages.legacy-xla")
        # by default that fix failure no longer holds the node: resumed (neuronctl's own drain)
        again = cli("doctor", "--level", "1", "--slurm-drain", "--json")
        assert json.loads(again.out)["slurm_drain"]["action"] == "resume"
        assert show()[0] is False
        monkeypatch.delenv("PJRT_DEVICE")
        monkeypatch.setenv("NEURONCTL_SYSROOT", str(broken))
        hw = cli("doctor", "--level", "1", "--slurm-drain", "--json")
        assert json.loads(hw.out)["slurm_drain"] == {
            "node": "node1", "action": "drain", "why": "neuronctl: hardware.errors"}
        assert show() == (True, "neuronctl: hardware.errors")
        monkeypatch.setenv("NEURONCTL_SYSROOT", str(healthy))
        ok = cli("doctor", "--level", "1", "--slurm-drain")
        assert "resumed" in ok.out and show()[0] is False
    finally:
        cluster.run("scontrol", "update", "NodeName=node1", "State=RESUME")
    cluster.wait_idle()


def test_the_text_report_says_a_drain(cli, broken: Path, tmp_path: Path) -> None:
    r = cli("doctor", "--level", "1", "--only", "hardware", "--sysroot", str(broken))
    assert "severity: drain" in r.out
    plain = tmp_path / "d.txt"
    cli("doctor", "--level", "1", "--only", "hardware", "--sysroot", str(broken), "-o", str(plain))
    text = plain.read_text()
    assert "FAIL  hardware.errors" in text and "severity: drain" in text
    assert text.count("severity: drain") == 1  # hardware.chip's pass says none
