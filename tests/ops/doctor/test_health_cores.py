"""`runtime.cores` (issue 27): NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES against the cores
a fixture host has, the LNC the runtime and the compiler are told, cores on devices another
process holds, deprecated NEURONCORE_GROUP_SIZES."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from support.sysroots import build_host

from neuronctl.ops.doctor.checks_cores import check_runtime_cores, compiler_lnc, parse_visible_cores
from neuronctl.ops.doctor.facts import Facts
from neuronctl.probes.sysroot import SysRoot
from neuronctl.release.manifest import load_bundled_manifest


def run(root: Path, **env: str):
    facts = Facts(python=sys.executable, sysroot=SysRoot(root), manifest=load_bundled_manifest(),
                  release=None, device="cpu", timeout=5.0, environ=env)
    return check_runtime_cores(facts)


@pytest.fixture
def trn1(tmp_path: Path) -> Path:
    return build_host(tmp_path / "trn1", "trn1", devices=2)  # 2 x 2 cores, no LNC


@pytest.fixture
def trn2_two_devices(tmp_path: Path) -> Path:
    return build_host(tmp_path / "trn2", "trn2", devices=2)  # 8 physical, 4 logical at LNC=2


def test_parse_ranges_and_lists() -> None:
    assert parse_visible_cores("3").cores == (3,)
    assert parse_visible_cores("0-3").cores == (0, 1, 2, 3)
    assert parse_visible_cores(" 0,2-3 ").cores == (0, 2, 3)
    assert parse_visible_cores("0-2,1").duplicates == (1,)
    for bad in ("", "3-1", "a", "1,,2", "0-", "-1", "99999999", "0-70000", "1.5", "0x3"):
        assert parse_visible_cores(bad).error, bad
    assert compiler_lnc("--lnc=2 -O1") == ("2", None)
    assert compiler_lnc("-O1 --logical-nc-config 1") == ("1", None)
    assert compiler_lnc("-lnc=1") == ("1", None)
    assert compiler_lnc("--cache_dir=/x") == (None, None)
    assert compiler_lnc("'unclosed")[1] is not None


def test_unset_means_all_cores(trn1: Path) -> None:
    outcome = run(trn1)
    assert outcome.status == "pass" and "all cores of 4" in outcome.message


def test_visible_cores_in_range_pass(trn1: Path) -> None:
    assert run(trn1, NEURON_RT_VISIBLE_CORES="0-3").status == "pass"
    assert run(trn1, NEURON_RT_VISIBLE_CORES="1,3").status == "pass"


@pytest.mark.parametrize("value", ["4", "2-5", "0,7"])
def test_visible_cores_out_of_range_fail_with_fix_severity(trn1: Path, value: str) -> None:
    outcome = run(trn1, NEURON_RT_VISIBLE_CORES=value)
    assert outcome.status == "fail" and outcome.severity == "fix"
    assert "out of range" in outcome.message and "0-3" in outcome.message
    assert outcome.fix and "NEURON_RT_VISIBLE_CORES" in outcome.fix


def test_a_malformed_value_fails_naming_it(trn1: Path) -> None:
    outcome = run(trn1, NEURON_RT_VISIBLE_CORES="3-1")
    assert outcome.status == "fail" and "runs backwards" in outcome.message


def test_num_cores_over_the_host_fails_and_visible_wins(trn1: Path) -> None:
    assert run(trn1, NEURON_RT_NUM_CORES="5").status == "fail"
    assert run(trn1, NEURON_RT_NUM_CORES="lots").status == "fail"
    assert run(trn1, NEURON_RT_NUM_CORES="2").status == "pass"
    both = run(trn1, NEURON_RT_NUM_CORES="9", NEURON_RT_VISIBLE_CORES="0-1")
    assert both.status == "pass"
    assert any("takes precedence" in d for d in both.details)


def test_lnc_decides_the_range_on_trn2(trn2_two_devices: Path) -> None:
    # LNC=2 (Trn2's default): 4 logical cores, 0-3; LNC=1: 8, 0-7
    assert run(trn2_two_devices, NEURON_RT_VISIBLE_CORES="0-3").status == "pass"
    assert run(trn2_two_devices, NEURON_RT_VISIBLE_CORES="4-7").status == "fail"
    assert run(trn2_two_devices, NEURON_RT_VISIBLE_CORES="4-7", NEURON_LOGICAL_NC_CONFIG="1").status == "pass"


def test_lnc_mismatch_between_compiler_and_runtime_fails(trn2_two_devices: Path) -> None:
    outcome = run(trn2_two_devices, NEURON_LOGICAL_NC_CONFIG="1", NEURON_CC_FLAGS="--lnc=2 -O1")
    assert outcome.status == "fail" and "LNC=2" in outcome.message and "LNC=1" in outcome.message
    default = run(trn2_two_devices, NEURON_CC_FLAGS="--logical-nc-config 1")  # runtime at Trn2's default 2
    assert default.status == "fail"
    assert run(trn2_two_devices, NEURON_LOGICAL_NC_CONFIG="2", NEURON_CC_FLAGS="-lnc=2").status == "pass"
    assert run(trn2_two_devices, NEURON_LOGICAL_NC_CONFIG="3").status == "fail"


def test_lnc_on_a_chip_without_it_fails(trn1: Path) -> None:
    outcome = run(trn1, NEURON_LOGICAL_NC_CONFIG="2")
    assert outcome.status == "fail" and "Trn2/Trn3 only" in outcome.message


def test_deprecated_group_sizes_warn(trn1: Path) -> None:
    outcome = run(trn1, NEURONCORE_GROUP_SIZES="2,2")
    assert outcome.status == "warn" and "deprecated" in outcome.message


def test_cores_on_a_device_another_process_holds_warn(trn1: Path) -> None:
    fd = trn1 / "proc" / "4242" / "fd"
    fd.mkdir(parents=True)
    (fd.parent / "cmdline").write_bytes(b"python\0train.py\0")
    (fd.parent / "status").write_text("Name:\tpython\nState:\tS (sleeping)\nPPid:\t1\n")
    os.symlink("/dev/neuron1", fd / "3")
    held = run(trn1, NEURON_RT_VISIBLE_CORES="0-3")
    assert held.status == "warn" and "cores 2-3 are on neuron1, which pid 4242 holds" in held.message
    assert run(trn1, NEURON_RT_VISIBLE_CORES="0-1").status == "pass"


def test_no_hardware_skips(tmp_path: Path) -> None:
    (tmp_path / "empty" / "sys").mkdir(parents=True)
    assert run(tmp_path / "empty").status == "skip"
    assert run(tmp_path / "empty", NEURON_RT_VISIBLE_CORES="x").status == "fail"
