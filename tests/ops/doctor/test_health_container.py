"""device.access inside a container (issue 27): the image's release (NEURONCTL_IMAGE_* as setup
--dockerfile's labels name them, else the image's own runtime library) against the host driver
with the documented rules, and the devices passed in against NEURON_RT_VISIBLE_CORES."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.doctor_cli import access
from support.health_sysroots import build_container


def test_a_labelled_image_on_a_host_driver_too_old_fails(cli, tmp_path: Path, monkeypatch) -> None:
    root = build_container(tmp_path / "c", host_driver="2.26.0.0")
    monkeypatch.setenv("NEURONCTL_IMAGE_RELEASE", "2.33.1")
    check = access(cli, root)
    assert check["status"] == "fail" and check["severity"] == "fix"
    assert "Neuron 2.33.1" in check["message"] and "host driver is 2.26.0.0" in check["message"]
    assert ">=2.31" in check["message"]
    assert any("runtime.runtime-2.35-features-need-driver-2.31" in d for d in check["details"])
    assert "aws-neuronx-dkms" in check["fix"]


def test_the_range_label_given_as_env_wins(cli, tmp_path: Path, monkeypatch) -> None:
    root = build_container(tmp_path / "c", host_driver="2.26.0.0")
    monkeypatch.setenv("NEURONCTL_IMAGE_RELEASE", "2.33.1")
    monkeypatch.setenv("NEURONCTL_IMAGE_DRIVER_RANGE", ">=2.20")
    assert access(cli, root)["status"] == "pass"


def test_without_labels_the_images_runtime_library_decides(cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("NEURONCTL_IMAGE_RELEASE", raising=False)
    old = build_container(tmp_path / "old", host_driver="2.26.0.0")  # image runtime 2.35.33.0
    check = access(cli, old)
    assert check["status"] == "fail" and "runtime library 2.35.33.0" in json.dumps(check)
    fine = build_container(tmp_path / "ok", host_driver="2.31.8.0")
    assert access(cli, fine)["status"] == "pass"


@pytest.mark.parametrize(("cores", "status"), [("0-3", "pass"), ("0-4", "fail"), ("6", "fail")])
def test_visible_cores_on_devices_not_passed_in_fail(cli, tmp_path: Path, monkeypatch,
                                                      cores: str, status: str) -> None:
    # 2 of 4 Trn2 devices passed in, 2 logical cores each (the fixture's 4 physical at LNC=2)
    monkeypatch.delenv("NEURONCTL_IMAGE_RELEASE", raising=False)
    root = build_container(tmp_path / "c", host_driver="2.31.8.0")
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", cores)
    check = access(cli, root)
    assert check["status"] == status, check
    if status == "fail":
        assert "but 2 were passed in" in check["message"]


def test_a_bogus_release_name_is_not_trusted(cli, tmp_path: Path, monkeypatch) -> None:
    root = build_container(tmp_path / "c", host_driver="2.31.8.0")
    monkeypatch.setenv("NEURONCTL_IMAGE_RELEASE", "9.9.9\x1b[31m")
    monkeypatch.setenv("NEURONCTL_IMAGE_DRIVER_RANGE", "not a range")
    check = access(cli, root)
    assert check["status"] == "pass" and "\x1b" not in json.dumps(check, ensure_ascii=False)
    assert any("not a known release" in d for d in check["details"])
