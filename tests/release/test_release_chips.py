"""Chips as the driver source knows them: instance families and 3xlarge sizes, capabilities named
for what they are (ocp_fp8/mxfp8 vs cfp8, the old "fp8" key kept), and NeuronCores reported as
physical and logical, each as such, with the LNC setting."""

from __future__ import annotations

import json

import pytest
from support.sysroots import build_host, write

from neuronctl.chips import chip_for_instance_type, devices_for_instance, get_chip
from neuronctl.probes.hardware import detect_hardware
from neuronctl.probes.sysroot import SysRoot


@pytest.mark.parametrize(("instance", "chip"), [
    ("trn2p.48xlarge", "trn2"), ("trn2eu.48xlarge", "trn2"), ("trn2u.48xlarge", "trn2"),
    ("trn2u-ac.24xlarge", "trn2"), ("trn2es.48xlarge", "trn2"), ("trn2en.24xlarge", "trn2"),
    ("trn2n.48xlarge", "trn2"), ("trn3e.24xlarge", "trn3"), ("trn3p.48xlarge", "trn3"),
    ("trn3.48xlarge", "trn3"), ("trn3pd98.3xlarge", "trn3"), ("trn3sn-es.3xlarge", "trn3"),
    ("TRN3S-ES.3XLARGE", "trn3"), ("trn1n.32xlarge", "trn1")])
def test_instance_families_the_driver_knows(instance, chip):
    found = chip_for_instance_type(instance)
    assert found is not None and found.id == chip


def test_sizes_only_where_a_source_gives_them():
    assert devices_for_instance("trn3pd98.3xlarge") == 1
    assert devices_for_instance("trn2.48xlarge") == 16
    assert devices_for_instance("trn2.3xlarge") is None  # not published
    assert chip_for_instance_type("trn9.48xlarge") is None


def test_lnc_only_on_trn2_and_trn3():
    trn2, trn1 = get_chip("trn2"), get_chip("trn1")
    assert trn2.logical_cores(16, 2) == 8 and trn2.physical_cores(8, 2) == 16
    assert trn2.logical_cores(16, None) is None  # LNC applies but is not known
    assert trn1.logical_cores(4, None) == 4 and trn1.physical_cores(4, 2) == 4


@pytest.fixture(autouse=True)
def _tools_under_sysroot(monkeypatch):
    """The fixture trees' neuron-ls is this test's own script: let it run."""
    monkeypatch.setenv("NEURONCTL_SYSROOT_TOOLS", "1")


def test_neuron_ls_counts_logical_cores_and_the_report_says_so(tmp_path):
    root = build_host(tmp_path / "r", "trn2", lnc=2)  # neuron-ls nc_count 4 a device, LNC=2
    report = detect_hardware(SysRoot(root), env={}, imds=lambda _env: None)
    assert (report.cores_kind, report.logical_cores, report.physical_cores) == ("logical", 8, 16)
    assert report.cores_text() == ("NeuronCores: 16 physical, 8 logical at LNC=2 "
                                   "(from neuron-ls nc_count)")
    data = report.to_json()
    assert (data["physical_cores"], data["logical_cores"], data["neuron_cores_kind"]) == \
        (16, 8, "logical")


def test_sysfs_counts_physical_cores(tmp_path):
    root = build_host(tmp_path / "r", "trn2", neuron_ls=False)
    for i in range(2):
        write(root, f"/sys/class/neuron_device/neuron{i}/core_count", "8\n")
    report = detect_hardware(SysRoot(root), env={"NEURON_LOGICAL_NC_CONFIG": "2"},
                             imds=lambda _env: None)
    assert (report.cores_kind, report.physical_cores, report.logical_cores) == ("physical", 16, 8)


def test_detect_json_names_both_counts_and_the_capabilities(cli, tmp_path):
    root = build_host(tmp_path / "r", "trn3", lnc=2)
    hw = json.loads(cli("detect", "--json", "--sysroot", str(root)).out)["hardware"]
    assert hw["supports"]["ocp_fp8"] is True and hw["supports"]["mxfp8"] is True
    assert hw["supports"]["fp8"] is True  # the old key, kept for existing readers
    assert hw["logical_cores"] == 16 and hw["physical_cores"] == 32
