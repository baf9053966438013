import json
from typing import ClassVar

import pytest
from support.loopback import QuietHandler, serving
from support.sysroots import build_cpu_host, build_host, write

from neuronctl.probes.hardware import detect_hardware
from neuronctl.probes.imds import imds_instance_type
from neuronctl.probes.sysroot import SysRoot

# These captured trees carry a fake neuron-ls that the tests mean to run.
pytestmark = pytest.mark.usefixtures("sysroot_tools")


def imds_forbidden(_env):
    raise AssertionError("IMDS must not be asked here")


@pytest.mark.parametrize(
    ("chip", "cores", "lnc"),
    [("trn3", 16, 2), ("trn2", 8, 2), ("inf2", 4, 2), ("trn1", 4, 2)],
)
def test_chip_generations_from_captured_trees(tmp_path, chip, cores, lnc):
    root = build_host(tmp_path / chip, chip)
    report = detect_hardware(SysRoot(root), env={}, imds=imds_forbidden)
    assert report.chip == chip
    assert report.conflicts == ()
    assert report.device_count == 2
    assert report.neuron_cores == cores and report.neuron_cores_source == "neuron-ls nc_count"
    assert report.logical_nc_config == lnc
    assert report.instance_type.startswith(chip) and report.instance_type_source == "DMI product_name"
    assert report.driver_version == "2.31.8.0"
    assert report.runtime_version == "2.35.33.0" and report.runtime_source == "dpkg"
    assert report.tools_version == "2.33.38.0"
    # the deinstalled package and the ENA card are not counted
    assert "aws-neuronx-collectives" not in report.system_packages
    assert len(report.pci_devices) == 2
    sources = {e.source.split()[0] for e in report.evidence}
    assert {"pci", "sysfs", "DMI"} <= sources


def test_inf2_and_trn2_share_ndv3_but_are_told_apart(tmp_path):
    inf2 = detect_hardware(SysRoot(build_host(tmp_path / "a", "inf2")), env={}, imds=imds_forbidden)
    trn2 = detect_hardware(SysRoot(build_host(tmp_path / "b", "trn2")), env={}, imds=imds_forbidden)
    assert inf2.sysfs_devices[0].arch_type == trn2.sysfs_devices[0].arch_type == "NDv3"
    assert (inf2.chip, trn2.chip) == ("inf2", "trn2")


def test_arch_type_alone_never_decides(tmp_path):
    root = tmp_path / "r"
    write(root, "/sys/class/neuron_device/neuron0/info/architecture/arch_type", "NDv3\n")
    report = detect_hardware(SysRoot(root), env={}, imds=lambda _e: _no_answer())
    assert report.present and report.chip is None


def _no_answer():
    from neuronctl.probes.imds import ImdsResult

    return ImdsResult(None, "test: no IMDS")


def test_pci_device_without_driver(tmp_path):
    root = build_host(tmp_path / "r", "trn2", driver=None, sysfs=False, dev_nodes=False,
                      runtime=None)
    report = detect_hardware(SysRoot(root), env={}, imds=imds_forbidden)
    assert report.chip == "trn2"
    assert report.driver_version is None
    assert report.neuron_ls.startswith("exit 1: Failed to discover neuron devices")
    assert report.neuron_cores == 16 and report.neuron_cores_source == "chip table (physical cores)"


def test_container_with_dev_nodes_only(tmp_path):
    root = build_host(tmp_path / "r", "trn2", sysfs=False, pci=False, dmi=False, runtime=None,
                      neuron_ls=False)
    report = detect_hardware(SysRoot(root), env={}, imds=lambda _e: _no_answer())
    assert report.present and report.dev_nodes == ("neuron0", "neuron1")
    assert report.chip is None and report.driver_version is None


def test_plain_cpu_machine(tmp_path):
    report = detect_hardware(SysRoot(build_cpu_host(tmp_path / "r")), env={}, imds=imds_forbidden)
    assert not report.present and report.chip is None and report.device_count == 0


def test_disagreeing_signals_are_reported(tmp_path):
    root = build_host(tmp_path / "r", "trn2")
    write(root, "/sys/class/dmi/id/product_name", "trn1.32xlarge\n")
    report = detect_hardware(SysRoot(root), env={}, imds=imds_forbidden)
    assert report.chip == "trn2"
    assert any("DMI product_name says trn1" in c for c in report.conflicts)


class ImdsHandler(QuietHandler):
    token = "tok-123"
    instance_type = "trn2u.48xlarge"
    calls: ClassVar[list[str]] = []

    def do_PUT(self):
        self.calls.append(f"PUT {self.path}")
        if self.path != "/latest/api/token" or not self.headers.get(
                "X-aws-ec2-metadata-token-ttl-seconds"):
            self.send_error(400)
            return
        self.reply(self.token)

    def do_GET(self):
        self.calls.append(f"GET {self.path}")
        if self.headers.get("X-aws-ec2-metadata-token") != self.token:
            self.send_error(401)
            return
        if self.path == "/latest/meta-data/instance-type":
            self.reply(self.instance_type)
        else:
            self.send_error(404)


@pytest.fixture
def imds_server():
    ImdsHandler.calls = []
    with serving(ImdsHandler) as url:
        yield url


def test_imds_v2_token_then_instance_type(imds_server):
    result = imds_instance_type({"AWS_EC2_METADATA_SERVICE_ENDPOINT": imds_server})
    assert result.instance_type == "trn2u.48xlarge"
    assert ImdsHandler.calls == ["PUT /latest/api/token", "GET /latest/meta-data/instance-type"]


def test_imds_disabled_and_unreachable(imds_server):
    disabled = imds_instance_type({"AWS_EC2_METADATA_DISABLED": "true",
                                   "AWS_EC2_METADATA_SERVICE_ENDPOINT": imds_server})
    assert disabled.instance_type is None and "disabled" in disabled.detail
    assert ImdsHandler.calls == []
    # a closed loopback port: fails fast, no exception
    down = imds_instance_type({"AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://127.0.0.1:9"})
    assert down.instance_type is None and "not reachable" in down.detail


def test_imds_gives_instance_type_when_dmi_lacks_it(tmp_path, imds_server, cli, monkeypatch):
    root = build_host(tmp_path / "r", "trn2", dmi=False)
    write(root, "/sys/class/dmi/id/sys_vendor", "Amazon EC2\n")
    monkeypatch.delenv("AWS_EC2_METADATA_DISABLED")
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds_server)
    r = cli("detect", "--json", "--sysroot", str(root))
    assert r.code == 0, r.err
    hw = json.loads(r.out)["hardware"]
    assert hw["instance_type"] == "trn2u.48xlarge"
    assert hw["instance_type_source"].startswith("IMDSv2 at http://127.0.0.1:")
    assert hw["chip"] == "trn2" and hw["supports"] == {"native_torch": True, "ocp_fp8": False,
                                                       "mxfp8": False, "cfp8": True, "fp8": False}


def test_detect_text_and_env_sysroot(tmp_path, cli, monkeypatch):
    root = build_host(tmp_path / "r", "trn3")
    monkeypatch.setenv("NEURONCTL_SYSROOT", str(root))
    r = cli("detect")
    assert r.code == 0
    assert "trn3 (Trainium3)" in r.out and "32 physical, 16 logical at LNC=2 (from neuron-ls nc_count)" in r.out
    assert cli("detect", "--sysroot", str(tmp_path / "missing")).code == 2
