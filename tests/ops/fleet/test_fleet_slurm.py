"""`neuronctl fleet doctor` and `--slurm-drain` against a real two-node Slurm cluster on this machine.

Nodes differ only through Slurm: the cluster's TaskProlog exports NEURONCTL_SYSROOT (another
driver) or PYTHONPATH (a leftover legacy package) per SLURMD_NODENAME.
"""

from __future__ import annotations

import json
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.slurm_cluster import SlurmCluster, slurm_available
from support.sysroots import build_host

from neuronctl.ops.slurm_node import apply_slurm_drain, parse_show_node, scontrol

pytestmark = pytest.mark.skipif(not slurm_available(), reason="needs slurm-wlm and munge (.ci/run)")


@pytest.fixture(scope="module")
def node_hosts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fleet-hosts")
    legacy = root / "legacy-site"
    (legacy / "torch_xla-2.9.0.dist-info").mkdir(parents=True)
    (legacy / "torch_xla-2.9.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch-xla\nVersion: 2.9.0\n")
    (legacy / "torch_xla").mkdir()
    (legacy / "torch_xla" / "__init__.py").write_text("")
    return {"trn2": build_host(root / "trn2", "trn2"),
            "old-driver": build_host(root / "old-driver", "trn2", driver="2.30.1.0"),
            "legacy-site": legacy}


@pytest.fixture
def slurm(cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> SlurmCluster:
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    for node in ("node1", "node2"):
        cluster.set_node_env(node)
    return cluster


def fleet_json(cli, *extra: str) -> tuple[int, dict]:
    result = cli("fleet", "doctor", "--level", "1", "--timeout", "60", "--json", *extra)
    return result.code, json.loads(result.out)


def test_two_identical_nodes_pass(cli, slurm: SlurmCluster, node_hosts: dict[str, Path], tmp_path: Path) -> None:
    for node in ("node1", "node2"):
        slurm.set_node_env(node, NEURONCTL_SYSROOT=str(node_hosts["trn2"]))
    code, doc = fleet_json(cli)
    assert code == 0, doc
    assert doc["summary"]["verdict"] == "pass" and doc["summary"]["groups"] == 1
    assert [n["node"] for n in doc["nodes"]] == ["node1", "node2"]
    assert all(n["doctor"]["environment"]["sysroot"] == str(node_hosts["trn2"]) for n in doc["nodes"])
    assert doc["drift"]["differences"] == {} and doc["drift"]["not_answering"] == {}
    # the doctor reports the whole stack fingerprint: nothing left "(not reported)"
    baseline = doc["drift"]["baseline"]["fingerprint"]
    assert baseline["tools"] == "2.33.38.0" and baseline["torch"].startswith("2.13.0")
    assert baseline["torch-neuronx"] == "(not reported)"  # not installed here: None, not a version
    assert doc["nodes"][0]["doctor"]["summary"]["level"] == 1
    junit = tmp_path / "fleet.xml"
    assert cli("fleet", "doctor", "--level", "1", "--format", "junit", "-o", str(junit)).code == 0
    cases = ET.parse(junit).getroot().findall(".//testcase")
    assert sorted(c.get("name") for c in cases) == ["node1", "node2"]
    assert not ET.parse(junit).getroot().findall(".//failure")


def test_another_driver_is_drift_with_exactly_that_difference(cli, slurm: SlurmCluster,
                                                                node_hosts: dict[str, Path],
                                                                tmp_path: Path) -> None:
    # Three-way majority needs three nodes; with two the baseline is the first node's group.
    slurm.set_node_env("node1", NEURONCTL_SYSROOT=str(node_hosts["trn2"]))
    slurm.set_node_env("node2", NEURONCTL_SYSROOT=str(node_hosts["old-driver"]))
    code, doc = fleet_json(cli)
    assert code == 1
    assert doc["drift"]["baseline"]["nodes"] == ["node1"]
    # the driver, and the checks that warn about it (any difference is drift)
    differences = doc["drift"]["differences"]
    assert list(differences) == ["node2"] and set(differences["node2"]) == {"driver", "warned_checks"}
    assert differences["node2"]["driver"] == {"baseline": "2.31.8.0", "node": "2.30.1.0"}
    text = cli("fleet", "doctor", "--level", "1")
    assert text.code == 1 and "node2: differs: driver: 2.31.8.0 -> 2.30.1.0" in text.out
    markdown = cli("fleet", "doctor", "--level", "1", "--format", "markdown")
    assert "| :warning: drift | `node2` | `differs: driver: 2.31.8.0 -> 2.30.1.0;" in markdown.out

    # --json -o FILE: the document goes to the file; stdout gets the text report alone, and no
    # JSON error document is owed there, though the fleet fails (the doctor's -o rule).
    saved = tmp_path / "fleet.json"
    to_file = cli("fleet", "doctor", "--level", "1", "--json", "-o", str(saved))
    assert to_file.code == 1 and "node2: differs: driver" in to_file.out
    assert "{" not in to_file.out, to_file.out
    assert json.loads(saved.read_text())["drift"]["differences"]["node2"]["driver"]["node"] == "2.30.1.0"


def test_a_leftover_legacy_package_is_drift_and_a_failing_node(cli, slurm: SlurmCluster,
                                                                 node_hosts: dict[str, Path]) -> None:
    for node in ("node1", "node2"):
        slurm.set_node_env(node, NEURONCTL_SYSROOT=str(node_hosts["trn2"]))
    slurm.set_node_env("node2", NEURONCTL_SYSROOT=str(node_hosts["trn2"]),
                       PYTHONPATH=str(node_hosts["legacy-site"]))
    code, doc = fleet_json(cli, "--nodelist", "node[1-2]", "--python", sys.executable,
                           "--remote-command", f"{sys.executable} -m neuronctl")
    assert code == 1
    assert doc["drift"]["differences"]["node2"]["failed_checks"] == {
        "baseline": "none", "node": "packages.legacy-xla"}
    assert doc["drift"]["packages"] == {
        "node2": {"torch-xla": {"baseline": "(not installed)", "node": "2.9.0"}}}
    assert doc["drift"]["failing"] == ["node2"]
    node2 = next(n for n in doc["nodes"] if n["node"] == "node2")
    legacy = next(c for c in node2["doctor"]["checks"] if c["id"] == "packages.legacy-xla")
    assert "torch-xla" in legacy["message"] and node2["status"] == "fail"


def _show(slurm: SlurmCluster, node: str):
    return parse_show_node(slurm.run("scontrol", "show", "node", node).stdout)


def test_slurm_drain_drains_and_resumes_only_its_own(slurm: SlurmCluster) -> None:
    try:
        outcome = apply_slurm_drain(["hardware.driver", "runtime.compat"], True, "node1", scontrol)
        assert outcome.action == "drain"
        state = _show(slurm, "node1")
        assert state.drained and state.reason == "neuronctl: hardware.driver,runtime.compat"
        assert apply_slurm_drain(["hardware.driver", "runtime.compat"], True, "node1").action == "none"
        assert apply_slurm_drain([], False, "node1").action == "resume"
        assert not _show(slurm, "node1").drained
        # Drained by someone else: neither a pass nor a failure touches it.
        assert slurm.run("scontrol", "update", "NodeName=node1", "State=DRAIN",
                         "Reason=disk replacement").returncode == 0
        assert apply_slurm_drain([], False, "node1").action == "none"
        assert apply_slurm_drain(["hardware.driver"], True, "node1").action == "none"
        state = _show(slurm, "node1")
        assert state.drained and state.reason == "disk replacement"
    finally:
        slurm.run("scontrol", "update", "NodeName=node1", "State=RESUME")
    slurm.wait_idle()


def test_doctor_slurm_drain_drains_this_node_and_resumes_it(cli, slurm: SlurmCluster,
                                                            node_hosts: dict[str, Path],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`doctor --level 1 --slurm-drain` as HealthCheckProgram runs it on node1 (SLURMD_NODENAME)."""
    monkeypatch.setenv("SLURMD_NODENAME", "node1")
    monkeypatch.setenv("NEURONCTL_SYSROOT", str(node_hosts["trn2"]))
    try:
        monkeypatch.setenv("PJRT_DEVICE", "NEURON")  # a legacy XLA signal: the doctor fails
        # a fix-severity failure drains only under --drain-on fail (the default is drain:
        # test_health_severity.py)
        failed = cli("doctor", "--level", "1", "--slurm-drain", "--drain-on", "fail", "--json")
        assert failed.code == 1
        doc = json.loads(failed.out)
        assert doc["slurm_drain"] == {"node": "node1", "action": "drain",
                                      "why": "neuronctl: packages.legacy-xla"}
        state = _show(slurm, "node1")
        assert state.drained and state.reason == "neuronctl: packages.legacy-xla"
        monkeypatch.delenv("PJRT_DEVICE")
        healthy = cli("doctor", "--level", "1", "--slurm-drain", "--drain-on", "fail")
        assert healthy.code == 0, healthy.out + healthy.err
        assert "slurm: node node1 resumed: passes again (was: neuronctl: packages.legacy-xla)" \
            in healthy.out
        assert not _show(slurm, "node1").drained
    finally:
        slurm.run("scontrol", "update", "NodeName=node1", "State=RESUME")
    slurm.wait_idle()


def _recording_remote(tmp_path: Path) -> Path:
    """A remote command that notes the job's Slurm account, reservation and nodes on each node,
    then runs neuronctl: what srun was given, as the task saw it."""
    script = tmp_path / "remote.sh"
    script.write_text(f"#!/bin/sh\nenv | grep -E '^SLURM_JOB_(ACCOUNT|RESERVATION|NODELIST)=' "
                      f"> {tmp_path}/seen.$SLURMD_NODENAME\nexec {sys.executable} -m neuronctl \"$@\"\n")
    script.chmod(0o755)
    return script


def _seen_by_nodes(tmp_path: Path) -> dict[str, dict[str, str]]:
    return {p.name.split(".", 1)[1]: dict(line.split("=", 1) for line in p.read_text().split())
            for p in tmp_path.glob("seen.*")}


def test_exclude_account_and_qos_reach_srun(cli, slurm: SlurmCluster, node_hosts: dict[str, Path],
                                             tmp_path: Path) -> None:
    for node in ("node1", "node2"):
        slurm.set_node_env(node, NEURONCTL_SYSROOT=str(node_hosts["trn2"]))
    remote = _recording_remote(tmp_path)
    code, doc = fleet_json(cli, "--all", "--exclude", "node2", "--account", "acct1", "--qos", "normal",
                           "--remote-command", str(remote))
    assert code == 0, doc
    assert [n["node"] for n in doc["nodes"]] == ["node1"]
    assert _seen_by_nodes(tmp_path) == {"node1": {"SLURM_JOB_ACCOUNT": "acct1", "SLURM_JOB_NODELIST": "node1"}}


def test_constraint_picks_nodes_by_their_slurm_features(cli, slurm: SlurmCluster, node_hosts: dict[str, Path],
                                                        tmp_path: Path) -> None:
    for node in ("node1", "node2"):
        slurm.set_node_env(node, NEURONCTL_SYSROOT=str(node_hosts["trn2"]))
    remote = str(_recording_remote(tmp_path))
    for constraint, expected in (("trn1", ["node2"]), ("trn2&efa", ["node1"]), ("trn1|efa", ["node1", "node2"])):
        code, doc = fleet_json(cli, "--all", "--constraint", constraint, "--remote-command", remote)
        assert code == 0 and [n["node"] for n in doc["nodes"]] == expected, (constraint, doc)
    # --nodes N: Slurm applies the constraint itself.
    for seen in tmp_path.glob("seen.*"):
        seen.unlink()
    code, doc = fleet_json(cli, "--nodes", "1", "--constraint", "trn1", "--remote-command", remote)
    assert code == 0 and [n["node"] for n in doc["nodes"]] == ["node2"]
    assert list(_seen_by_nodes(tmp_path)) == ["node2"]
    # A feature no node has: no node matches, said at once (exit 2), nothing run.
    missing = cli("fleet", "doctor", "--level", "1", "--all", "--constraint", "trn3")
    assert missing.code == 2 and "no Slurm nodes match the request with --constraint=trn3" in missing.err


def test_a_reservation_runs_on_its_own_nodes(cli, slurm: SlurmCluster, node_hosts: dict[str, Path],
                                             tmp_path: Path) -> None:
    for node in ("node1", "node2"):
        slurm.set_node_env(node, NEURONCTL_SYSROOT=str(node_hosts["trn2"]))
    made = slurm.run("scontrol", "create", "reservation", "ReservationName=maint1", "Nodes=node1",
                     "StartTime=now", "Duration=10", "Users=root")
    assert made.returncode == 0, made.stderr
    try:
        code, doc = fleet_json(cli, "--all", "--reservation", "maint1",
                               "--remote-command", str(_recording_remote(tmp_path)))
        assert code == 0, doc
        assert [n["node"] for n in doc["nodes"]] == ["node1"]
        assert _seen_by_nodes(tmp_path)["node1"]["SLURM_JOB_RESERVATION"] == "maint1"
        unknown = cli("fleet", "doctor", "--level", "1", "--all", "--reservation", "nosuch")
        assert unknown.code == 2 and "--reservation 'nosuch': no such Slurm reservation" in unknown.err
    finally:
        slurm.run("scontrol", "delete", "ReservationName=maint1")


def test_selection_values_are_checked_before_slurm_is_asked(cli) -> None:
    for flag, value in (("--account", "a b"), ("--qos", "-x"), ("--reservation", "r;id"),
                        ("--exclude", "n1 n2"), ("--exclude", "--json"), ("--exclude", "-Mother"),
                        ("--constraint", "-a"), ("--constraint", "a$(id)")):
        result = cli("fleet", "doctor", "--all", flag, value)
        assert result.code == 2, (flag, value, result)
        assert result.err.count("\n") == 1 and flag in result.err and "Traceback" not in result.err


def test_a_node_whose_slurmd_is_stopped_is_reported_within_the_timeout(
        cli, slurm: SlurmCluster, node_hosts: dict[str, Path]) -> None:
    for node in ("node1", "node2"):
        slurm.set_node_env(node, NEURONCTL_SYSROOT=str(node_hosts["trn2"]))
    slurm.stop_slurmd("node2")  # last test of the module: the cluster keeps one node from here on
    started = time.monotonic()
    result = cli("fleet", "doctor", "--level", "1", "--timeout", "20", "--json")
    elapsed = time.monotonic() - started
    doc = json.loads(result.out)
    assert result.code == 1 and elapsed < 20 + 10
    assert list(doc["drift"]["not_answering"]) == ["node2"], doc["drift"]["not_answering"]
    assert doc["drift"]["not_answering"]["node2"]  # the reason: srun's error or Slurm's state
    assert doc["drift"]["baseline"]["nodes"] == ["node1"]
    assert doc["error"]["kind"] == "failed"
