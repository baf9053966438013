"""The hardware decision over hand-made evidence: no file, process or network is involved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.sysroots import build_host

from neuronctl.probes.hardware import HardwareEvidence, decide, gather_evidence
from neuronctl.probes.hardware_signals import PciDevice, SysfsDevice
from neuronctl.probes.imds import ImdsResult
from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.tools import ToolResult

# These captured trees carry a fake neuron-ls that the tests mean to run.
pytestmark = pytest.mark.usefixtures("sysroot_tools")


TRN2_PCI = (PciDevice("0000:cc:00.0", "0x7364", "trn2"), PciDevice("0000:cd:00.0", "0x7364", "trn2"))


def sysfs(n: int = 2, *, device_name: str | None = "Trainium2", arch: str | None = "NDv3",
          cores: int | None = 8) -> tuple[SysfsDevice, ...]:
    return tuple(SysfsDevice(f"neuron{i}", device_name, None, arch, cores) for i in range(n))


def neuron_ls(devices: list[dict[str, object]]) -> ToolResult:
    return ToolResult(0, json.dumps(devices), "")


def test_nothing_is_no_hardware() -> None:
    report = decide(HardwareEvidence())
    assert not report.present and report.chip is None and report.device_count == 0
    assert report.neuron_ls == "absent" and report.neuron_cores is None


def test_pci_and_sysfs_agree_on_trn2_with_sysfs_cores() -> None:
    report = decide(HardwareEvidence(pci_devices=TRN2_PCI, sysfs_devices=sysfs()))
    assert report.chip == "trn2" and report.chip_name == "Trainium2" and report.conflicts == ()
    assert report.device_count == 2
    assert (report.neuron_cores, report.neuron_cores_source) == (16, "sysfs core_count")
    assert [e.source for e in report.evidence][:2] == ["pci 0000:cc:00.0", "pci 0000:cd:00.0"]


def test_the_strongest_signal_decides_and_the_others_are_conflicts() -> None:
    report = decide(HardwareEvidence(pci_devices=TRN2_PCI, dmi_product="inf2.48xlarge"))
    assert report.chip == "trn2"
    assert report.conflicts == ("DMI product_name says inf2",)
    assert (report.instance_type, report.instance_type_source) == ("inf2.48xlarge",
                                                                   "DMI product_name")


def test_an_arch_type_that_does_not_fit_the_chip_is_a_conflict() -> None:
    report = decide(HardwareEvidence(pci_devices=TRN2_PCI, sysfs_devices=sysfs(arch="NDv2")))
    assert report.conflicts == ("sysfs arch_type NDv2 does not fit trn2 (NDv3)",)


def test_arch_type_alone_never_decides() -> None:
    report = decide(HardwareEvidence(sysfs_devices=sysfs(1, device_name=None, arch="NDv9",
                                                         cores=None)))
    assert report.present and report.chip is None
    assert ("note", "unknown arch_type NDv9") in [(e.source, e.value) for e in report.evidence]


def test_imds_names_the_instance_when_dmi_does_not() -> None:
    ev = HardwareEvidence(dev_nodes=("neuron0",), dmi_product="Not Specified",
                          imds=ImdsResult("trn1.32xlarge", "IMDSv2 at http://127.0.0.1:1"))
    report = decide(ev)
    assert report.chip == "trn1"
    assert report.instance_type_source == "IMDSv2 at http://127.0.0.1:1"
    # trn1 has 2 cores per chip in the chip table; one device node counted
    assert (report.neuron_cores, report.neuron_cores_source) == (2, "chip table (physical cores)")


def test_neuron_ls_gives_cores_and_the_logical_core_config() -> None:
    ls = neuron_ls([{"nc_count": 4, "logical_neuroncore_config": 2},
                    {"nc_count": 4, "logical_neuroncore_config": 2}])
    report = decide(HardwareEvidence(pci_devices=TRN2_PCI, neuron_ls=ls,
                                     logical_nc_config_env="1"))
    assert report.neuron_ls == "ok" and report.logical_nc_config == 2
    assert (report.neuron_cores, report.neuron_cores_source) == (8, "neuron-ls nc_count")


def test_without_neuron_ls_the_logical_core_config_comes_from_the_environment() -> None:
    assert decide(HardwareEvidence(logical_nc_config_env="1")).logical_nc_config == 1
    assert decide(HardwareEvidence(logical_nc_config_env="x")).logical_nc_config is None


@pytest.mark.parametrize(("result", "state"), [
    (ToolResult(None, "", "", "timed out after 5s"), "timed out after 5s"),
    (ToolResult(1, "", "first\nUnable to read device information\n"),
     "exit 1: Unable to read device information"),
    (ToolResult(0, "not json", ""), "unreadable JSON output"),
    (ToolResult(0, '{"a": 1}', ""), "unreadable JSON output"),
])
def test_neuron_ls_failures_are_reported_not_counted(result: ToolResult, state: str) -> None:
    report = decide(HardwareEvidence(pci_devices=TRN2_PCI, neuron_ls=result))
    assert report.neuron_ls == state and report.device_count == 2


def test_more_devices_from_neuron_ls_than_sysfs_count() -> None:
    ls = neuron_ls([{"nc_count": 8}] * 4)
    assert decide(HardwareEvidence(pci_devices=TRN2_PCI, neuron_ls=ls)).device_count == 4


def test_runtime_from_dpkg_before_the_library_before_neuron_ls() -> None:
    ls = neuron_ls([{"nc_count": 8, "neuron_processes": [{"neuron_runtime_version": "2.1.0"}]}])
    libs = ("/opt/aws/neuron/lib/libnrt.so.2.30.5",)
    both = decide(HardwareEvidence(system_packages={"aws-neuronx-runtime-lib": "2.35.30.0"},
                                   runtime_libraries=libs, neuron_ls=ls))
    assert (both.runtime_version, both.runtime_source) == ("2.35.30.0", "dpkg")
    lib = decide(HardwareEvidence(runtime_libraries=libs, neuron_ls=ls))
    assert (lib.runtime_version, lib.runtime_source) == ("2.30.5", libs[0])
    only_ls = decide(HardwareEvidence(neuron_ls=ls))
    assert (only_ls.runtime_version, only_ls.runtime_source) == ("2.1.0", "neuron-ls")


def test_driver_and_tools_versions_pass_through() -> None:
    report = decide(HardwareEvidence(driver_version="2.31.7.0",
                                     system_packages={"aws-neuronx-tools": "2.33.38.0"}))
    assert (report.driver_version, report.tools_version) == ("2.31.7.0", "2.33.38.0")


def test_gathering_asks_imds_only_where_dmi_does_not_name_the_instance(tmp_path: Path) -> None:
    asked: list[object] = []

    def imds(env: object) -> ImdsResult:
        asked.append(env)
        return ImdsResult(None, "test: no IMDS")

    named = gather_evidence(SysRoot(build_host(tmp_path / "a", "trn2")), {}, imds=imds)
    assert named.imds is None and named.dmi_product == "trn2.48xlarge" and asked == []
    unnamed = gather_evidence(SysRoot(build_host(tmp_path / "b", "trn2", dmi=False)), {},
                              imds=imds)
    assert unnamed.imds == ImdsResult(None, "test: no IMDS") and len(asked) == 1
    assert unnamed.neuron_ls is not None and unnamed.neuron_ls.returncode == 0
    assert decide(unnamed).chip == "trn2"
