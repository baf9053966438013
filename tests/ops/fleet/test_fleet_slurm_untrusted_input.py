"""Hostile input, second pass, on `fleet doctor` and `--slurm-drain` against a real two-node Slurm
cluster on this machine (tests/support/slurm_cluster.py): an impostor neuronctl in the directory srun
runs the tasks in, one node flooding its output, a leftover package on one node, and a feature
string or Comment that imitates neuronctl's drain reason."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from support.slurm_cluster import SlurmCluster, slurm_available
from support.sysroots import build_host

from neuronctl.errors import FaultError
from neuronctl.ops.slurm_node import apply_slurm_drain, parse_show_node, scontrol

pytestmark = [pytest.mark.hostile,  # the hostile campaign (was tests/test_hostile2_fleet_slurm.py)
              pytest.mark.skipif(not slurm_available(), reason="needs slurm-wlm and munge (.ci/run)")]


@pytest.fixture(scope="module")
def node_host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_host(tmp_path_factory.mktemp("fleet-host") / "trn2", "trn2")


@pytest.fixture
def slurm_on_host(cluster: SlurmCluster, node_host: Path, monkeypatch: pytest.MonkeyPatch) -> SlurmCluster:
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    for node in ("node1", "node2"):
        cluster.set_node_env(node, NEURONCTL_SYSROOT=str(node_host))
    return cluster


def test_an_impostor_neuronctl_in_the_working_directory_never_runs_on_the_nodes(
        cli, slurm_on_host: SlurmCluster) -> None:
    flag = Path.cwd() / "impostor-ran"
    fake = Path.cwd() / "neuronctl" / "__main__.py"
    fake.parent.mkdir()
    (fake.parent / "__init__.py").write_text("")
    fake.write_text(f"open({str(flag)!r}, 'a').write('ran\\n')\n"
                    "print('{\"schema\": 1, \"summary\": {\"verdict\": \"pass\"}, \"checks\": []}')\n")
    result = cli("fleet", "doctor", "--level", "1", "--timeout", "60", "--json")
    assert not flag.exists()
    doc = json.loads(result.out)
    assert result.code == 0, doc
    assert all(n["doctor"]["environment"]["sysroot"] for n in doc["nodes"])  # the real doctor


def test_a_node_flooding_its_output_is_that_nodes_error_and_the_other_is_reported(
        cli, slurm_on_host: SlurmCluster, tmp_path: Path) -> None:
    flood = tmp_path / "flood.sh"
    # node2 prints 300 MiB and then a document; node1 runs the real doctor.
    flood.write_text(f"""#!/bin/sh
if [ "$SLURMD_NODENAME" = node2 ]; then
  head -c 314572800 /dev/zero | tr '\\0' x | fold -w 60000
  echo '{{"schema": 1, "summary": {{"verdict": "pass"}}, "checks": []}}'
  exit 0
fi
exec {sys.executable} -m neuronctl "$@"
""")
    flood.chmod(0o755)
    result = cli("fleet", "doctor", "--level", "1", "--timeout", "120", "--json",
                 "--remote-command", str(flood))
    doc = json.loads(result.out)
    assert result.code == 1
    assert doc["drift"]["not_answering"] == {"node2": "output over 4 MiB"}
    assert doc["drift"]["baseline"]["nodes"] == ["node1"]
    assert "output over" not in json.dumps(doc["nodes"][0])


def test_a_leftover_package_on_one_node_is_listed_as_drift(cli, slurm_on_host: SlurmCluster, node_host: Path,
                                                          tmp_path: Path) -> None:
    extra = tmp_path / "site"
    (extra / "leftover_pkg-1.2.3.dist-info").mkdir(parents=True)
    (extra / "leftover_pkg-1.2.3.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: leftover-pkg\nVersion: 1.2.3\n")
    slurm_on_host.set_node_env("node2", NEURONCTL_SYSROOT=str(node_host), PYTHONPATH=str(extra))
    result = cli("fleet", "doctor", "--level", "1", "--timeout", "60", "--json",
                 "--nodelist", "node[1-2]", "--python", sys.executable)
    doc = json.loads(result.out)
    assert result.code == 1, doc["drift"]
    assert doc["drift"]["packages"] == {
        "node2": {"leftover-pkg": {"baseline": "(not installed)", "node": "1.2.3"}}}
    assert set(doc["drift"]["differences"]["node2"]) == {"distributions"}
    text = cli("fleet", "doctor", "--level", "1", "--timeout", "60", "--python", sys.executable)
    assert "packages: leftover-pkg (not installed) -> 1.2.3" in text.out


def _update(slurm_on_host: SlurmCluster, *fields: str) -> None:
    done = slurm_on_host.run("scontrol", "update", "NodeName=node1", *fields)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("fields", [
    ("AvailableFeatures=f1,Reason=neuronctl:z", "ActiveFeatures=f1,Reason=neuronctl:z"),
    ("AvailableFeatures=State=IDLE,Reason=neuronctl:z", "ActiveFeatures=State=IDLE"),
    ("Comment=x\n   Reason=neuronctl: hardware.driver",),
    ("Extra=x\nNodeName=node1 State=IDLE Reason=neuronctl: y",),
])
def test_another_admins_drain_stays_whatever_features_or_comment_say(
        slurm_on_host: SlurmCluster, fields: tuple[str, ...]) -> None:
    try:
        _update(slurm_on_host, "State=DRAIN", "Reason=disk replacement")
        _update(slurm_on_host, *fields)
        for failed in (False, True):
            try:
                outcome = apply_slurm_drain(["hardware.driver"] if failed else [], failed,
                                            "node1", scontrol)
            except FaultError as exc:
                assert "scontrol show node" in exc.message
            else:
                assert outcome.action == "none", outcome
            shown = slurm_on_host.run("scontrol", "show", "node", "node1").stdout
            # Still drained, for the other admin's reason. The base state is Slurm's: under load
            # (two test workers) slurmd can miss SlurmdTimeout and the node reads DOWN+DRAIN.
            assert "Reason=disk replacement [" in shown and re.search(r"State=[A-Z]+\+DRAIN", shown)
    finally:
        _update(slurm_on_host, "ActiveFeatures=", "AvailableFeatures=", "Comment=", "Extra=")
        _update(slurm_on_host, "State=RESUME")
    slurm_on_host.wait_idle()


def test_the_real_record_parses_with_its_reason_and_state(slurm_on_host: SlurmCluster) -> None:
    try:
        _update(slurm_on_host, "State=DRAIN", "Reason=neuronctl: hardware.driver")
        state = parse_show_node(slurm_on_host.run("scontrol", "show", "node", "node1").stdout, "node1")
        assert state.drained and state.reason == "neuronctl: hardware.driver"
        assert apply_slurm_drain([], False, "node1", scontrol).action == "resume"
    finally:
        slurm_on_host.run("scontrol", "update", "NodeName=node1", "State=RESUME")  # if not resumed
    slurm_on_host.wait_idle()
