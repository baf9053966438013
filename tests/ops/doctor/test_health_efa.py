"""EFA (issue 27): network.efa at level 2 (devices, collectives, libfabric), and fleet doctor's
drift report over two real Slurm nodes with different aws-neuronx-collectives."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support.doctor_facts import sysroot_facts
from support.health_sysroots import add_efa
from support.slurm_cluster import SlurmCluster, slurm_available
from support.sysroots import build_host

from neuronctl.ops.doctor.checks_network import check_efa
from neuronctl.ops.doctor.run import select_checks
from neuronctl.probes.efa import read_efa
from neuronctl.probes.sysroot import SysRoot


def test_efa_devices_by_their_driver_and_libfabric_from_dpkg(tmp_path: Path) -> None:
    root = build_host(tmp_path / "h", "trn1")
    add_efa(root, 2, other=1)
    efa = read_efa(SysRoot(root))
    assert efa.devices == ("rdmap0s16", "rdmap1s17") and efa.other_rdma == ("rdmap2s18",)
    assert efa.libfabric == {"libfabric-aws": "1.22.0amzn4.0"}


def test_fewer_efa_devices_than_the_instance_has_warn(tmp_path: Path) -> None:
    root = build_host(tmp_path / "h", "trn1")  # DMI: trn1.32xlarge, 8 EFA devices documented
    add_efa(root, 2)
    outcome = check_efa(sysroot_facts(root, release=None))
    assert outcome.status == "warn" and "2 EFA device(s) on a trn1.32xlarge, which has 8" in \
        outcome.message and outcome.severity == "fix"
    full = build_host(tmp_path / "full", "trn1")
    add_efa(full, 8)
    assert check_efa(sysroot_facts(full, release=None)).status == "pass"


def test_no_efa_is_single_node_and_efa_without_collectives_warns(tmp_path: Path) -> None:
    single = build_host(tmp_path / "s", "trn2")
    assert check_efa(sysroot_facts(single, release=None)).status == "pass"
    assert "single-node" in check_efa(sysroot_facts(single, release=None)).message
    bare = build_host(tmp_path / "b", "trn2")
    add_efa(bare, 4, collectives=None)
    assert "no aws-neuronx-collectives" in check_efa(sysroot_facts(bare, release=None)).message


def test_efa_is_level_2() -> None:
    assert "network.efa" not in select_checks((), (), None, level=1)
    assert "network.efa" in select_checks((), (), None, level=2)


def test_efa_runs_at_level_1_in_a_step_over_several_nodes(cli, tmp_path: Path,
                                                          monkeypatch) -> None:
    assert "network.efa" in select_checks((), (), None, level=1, multi_node=True)
    assert select_checks(("network",), (), None, level=1, multi_node=True) == ["network.efa"]
    root = build_host(tmp_path / "h", "trn2")
    add_efa(root, 4, libfabric="1.21.0amzn1.0")
    args = ("doctor", "--json", "--level", "1", "--sysroot", str(root), "--python", sys.executable)
    monkeypatch.setenv("SLURM_STEP_NUM_NODES", "1")  # a one-node step: level 1 as it is
    one = json.loads(cli(*args).out)
    assert "network.efa" not in {c["id"] for c in one["checks"]} and "efa" not in one["environment"]
    monkeypatch.setenv("SLURM_STEP_NUM_NODES", "2")
    two = json.loads(cli(*args).out)
    assert "network.efa" in {c["id"] for c in two["checks"]}
    assert two["environment"]["efa"] == {"devices": 4, "libfabric": "libfabric-aws 1.21.0amzn1.0"}
    skipped = json.loads(cli(*args, "--skip", "network.efa").out)
    assert "network.efa" not in {c["id"] for c in skipped["checks"]}


def test_a_link_out_of_the_tree_is_only_named_never_followed(tmp_path: Path) -> None:
    root = build_host(tmp_path / "h", "trn2")
    dev = root / "sys/class/infiniband/evil/device"
    dev.mkdir(parents=True)
    (dev / "driver").symlink_to("/etc/passwd\x1b[31m".replace("\x1b", "_"))
    assert read_efa(SysRoot(root)).devices == ()


# -------------------------------------------------------------------- real Slurm, two nodes


@pytest.mark.skipif(not slurm_available(), reason="needs slurm-wlm and munge (.ci/run)")
def test_fleet_reports_collectives_drift_between_two_nodes(cli, cluster: SlurmCluster,
                                                           tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    one, two = build_host(tmp_path / "one", "trn2"), build_host(tmp_path / "two", "trn2")
    add_efa(one, 4, collectives="2.35.49.0")
    add_efa(two, 2, collectives="2.35.43.0", libfabric="1.21.0amzn1.0")
    cluster.set_node_env("node1", NEURONCTL_SYSROOT=str(one))
    cluster.set_node_env("node2", NEURONCTL_SYSROOT=str(two))
    r = cli("fleet", "doctor", "--level", "1", "--timeout", "60", "--json")
    doc = json.loads(r.out)
    assert r.code == 1, doc
    differences = doc["drift"]["differences"]
    assert differences["node2"]["collectives"] == {"baseline": "2.35.49.0", "node": "2.35.43.0"}
    # More than one node: network.efa runs on each at level 1 too, and its facts are compared.
    assert differences["node2"]["libfabric"] == {"baseline": "libfabric-aws 1.22.0amzn4.0",
                                                 "node": "libfabric-aws 1.21.0amzn1.0"}
    assert differences["node2"]["efa_devices"] == {"baseline": "4", "node": "2"}
    for node in doc["nodes"]:
        assert "network.efa" in {c["id"] for c in node["doctor"]["checks"]}, node["node"]
    text = cli("fleet", "doctor", "--level", "1", "--timeout", "60")
    assert "collectives: 2.35.49.0 -> 2.35.43.0" in text.out
    assert "libfabric: libfabric-aws 1.22.0amzn4.0 -> libfabric-aws 1.21.0amzn1.0" in text.out
    assert "efa_devices: 4 -> 2" in text.out
    # level 2 (fleet doctor's default) compares the same
    r = cli("fleet", "doctor", "--level", "2", "--timeout", "90", "--json")
    differences = json.loads(r.out)["drift"]["differences"]
    assert differences["node2"]["libfabric"] == {"baseline": "libfabric-aws 1.22.0amzn4.0",
                                                 "node": "libfabric-aws 1.21.0amzn1.0"}


@pytest.mark.skipif(not slurm_available(), reason="needs slurm-wlm and munge (.ci/run)")
def test_fleet_on_one_node_keeps_level_1_as_it_is(cli, cluster: SlurmCluster, tmp_path: Path,
                                                  monkeypatch) -> None:
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    root = build_host(tmp_path / "one", "trn2")
    add_efa(root, 4)
    cluster.set_node_env("node1", NEURONCTL_SYSROOT=str(root))
    r = cli("fleet", "doctor", "--nodelist", "node1", "--level", "1", "--timeout", "60", "--json")
    doc = json.loads(r.out)
    (node,) = doc["nodes"]
    assert "network.efa" not in {c["id"] for c in node["doctor"]["checks"]}, doc
