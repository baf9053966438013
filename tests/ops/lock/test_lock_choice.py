"""NVIDIA detection as uv's --torch-backend=auto does it (sysroots faking the driver's files, a
fake nvidia-smi on PATH) and the pure choice of the lock to install for the host's hardware."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from neuronctl.errors import InputError
from neuronctl.ops.lock.choice import HostDevices, choose_lock, driver_warning, present_fallbacks
from neuronctl.probes.nvidia import detect_nvidia, parse_proc_driver
from neuronctl.probes.sysroot import SysRoot

# The kernel's own texts, as uv's tests quote them (crates/uv-torch/src/accelerator.rs).
PROC_OPEN = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.144.03  Release Build  "
             "(dvs-builder@U16-I3-D08-1-2)  Mon Dec 30 17:26:13 UTC 2024\n"
             "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n")
PROC_OLD = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  375.74  Wed Jun 14 01:39:39 PDT 2017\n"
            "GCC version:  gcc version 5.4.0 20160609 (Ubuntu 5.4.0-6ubuntu1~16.04.4)\n")


def sysroot_with(tmp_path: Path, files: dict[str, str]) -> SysRoot:
    for absolute, text in files.items():
        path = tmp_path / absolute.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return SysRoot(tmp_path)


def fake_smi(bindir: Path, body: str) -> str:
    bindir.mkdir(parents=True, exist_ok=True)
    smi = bindir / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + body + "\n")
    smi.chmod(0o755)
    return str(bindir)


def test_sys_module_version_comes_first(tmp_path):
    root = sysroot_with(tmp_path / "root", {"/sys/module/nvidia/version": "580.65.06\n",
                                       "/proc/driver/nvidia/version": PROC_OPEN})
    found = detect_nvidia(root, run_smi=False)
    assert (found.driver, found.source) == ("580.65.06", "/sys/module/nvidia/version")


@pytest.mark.parametrize(("text", "version"), [(PROC_OPEN, "550.144.03"), (PROC_OLD, "375.74")])
def test_proc_driver_version_when_the_module_file_is_absent(tmp_path, text, version):
    found = detect_nvidia(sysroot_with(tmp_path, {"/proc/driver/nvidia/version": text}), run_smi=False)
    assert (found.driver, found.source) == (version, "/proc/driver/nvidia/version")
    assert parse_proc_driver("no double spaces here") is None


def test_untrusted_text_is_noted_and_the_next_source_asked(tmp_path):
    root = sysroot_with(tmp_path / "root", {"/sys/module/nvidia/version": "../../etc/passwd\x1b[31m",
                                       "/proc/driver/nvidia/version": PROC_OPEN})
    found = detect_nvidia(root, run_smi=False)
    assert found.driver == "550.144.03"
    assert found.notes and "/sys/module/nvidia/version: no driver version" in found.notes[0]
    huge = sysroot_with(tmp_path / "huge", {"/sys/module/nvidia/version": "5" * 100_000})
    assert detect_nvidia(huge, run_smi=False).driver is None  # read bounded, then refused


def test_nvidia_smi_on_path_answers_when_no_file_does(tmp_path, monkeypatch):
    path = fake_smi(tmp_path / "bin", 'echo "535.104.05"; echo "535.104.05"')
    found = detect_nvidia(SysRoot(tmp_path / "empty"), run_smi=True, path=path)
    assert (found.driver, found.source) == ("535.104.05", "nvidia-smi")
    monkeypatch.setenv("PATH", f"{path}{os.pathsep}{os.environ['PATH']}")
    assert detect_nvidia(SysRoot(tmp_path / "empty"), run_smi=True).driver == "535.104.05"
    # A captured tree describes another machine: this host's nvidia-smi is not asked about it.
    assert detect_nvidia(SysRoot(tmp_path / "empty")).driver is None


def test_nvidia_smi_failing_or_hanging_is_noted_not_fatal(tmp_path):
    failing = fake_smi(tmp_path / "fail", 'echo "NVIDIA-SMI has failed" >&2; exit 9')
    found = detect_nvidia(SysRoot(tmp_path / "empty"), run_smi=True, path=failing)
    assert found.driver is None and "exit 9" in found.notes[0] and "NVIDIA-SMI has failed" in found.notes[0]
    hanging = fake_smi(tmp_path / "hang", "sleep 30")
    found = detect_nvidia(SysRoot(tmp_path / "empty"), run_smi=True, path=hanging, timeout=0.5)
    assert found.driver is None and "timed out" in found.notes[0]
    garbage = fake_smi(tmp_path / "junk", 'echo "[N/A]"')
    found = detect_nvidia(SysRoot(tmp_path / "empty"), run_smi=True, path=garbage)
    assert found.driver is None and "no driver version" in found.notes[0]
    assert detect_nvidia(SysRoot(tmp_path / "empty"), run_smi=True, path=str(tmp_path / "none")).notes == ()


MAIN = Path("locks/pylock.toml")
GPU = HostDevices(0, "580.65.06", "/sys/module/nvidia/version")


def test_neuron_devices_pick_the_neuron_lock_even_beside_a_gpu():
    choice = choose_lock(MAIN, {"cuda", "cpu"}, HostDevices(16, "580.65.06"))
    assert (choice.path, choice.device) == (MAIN, "neuron")
    assert "16 Neuron device(s)" in choice.text()


def test_a_gpu_without_neuron_devices_picks_the_cuda_lock_and_says_why():
    choice = choose_lock(MAIN, {"cuda"}, GPU, cuda_variant="cu130")
    assert (choice.path, choice.device) == (Path("locks/pylock.cuda.toml"), "cuda")
    assert "no Neuron device" in choice.reason and "NVIDIA driver 580.65.06" in choice.reason
    assert "/sys/module/nvidia/version" in choice.reason and "cu130" in choice.reason
    assert choice.warnings == ()


def test_a_gpu_without_a_cuda_lock_keeps_the_neuron_lock_and_names_the_fix():
    choice = choose_lock(MAIN, {"cpu"}, GPU)
    assert choice.device == "neuron" and "neuronctl lock --fallback cuda" in choice.warnings[0]


def test_no_accelerator_keeps_the_neuron_lock():
    choice = choose_lock(MAIN, {"cuda", "cpu"}, HostDevices(0))
    assert choice.device == "neuron" and "--device cpu" in choice.reason
    assert "--device cpu" not in choose_lock(MAIN, set(), HostDevices(0)).reason


def test_device_overrides_the_hardware():
    assert choose_lock(MAIN, {"cuda"}, HostDevices(16), "neuron").device == "neuron"
    cpu = choose_lock(MAIN, {"cpu"}, GPU, "cpu")
    assert (cpu.path, cpu.device) == (Path("locks/pylock.cpu.toml"), "cpu") and "--device cpu" in cpu.reason
    away = choose_lock(MAIN, {"cuda"}, HostDevices(16), "cuda")
    assert away.device == "cuda" and "no NVIDIA driver found" in away.warnings[0]
    with pytest.raises(InputError) as exc:
        choose_lock(MAIN, {"cpu"}, GPU, "cuda")
    assert "no locks/pylock.cuda.toml" in exc.value.message
    assert "neuronctl lock --fallback cuda -o locks/pylock.cuda.toml" in (exc.value.hint or "")
    with pytest.raises(InputError, match="expected one of auto, neuron, cuda, cpu"):
        choose_lock(MAIN, {"cuda"}, GPU, "rocm")


def test_a_driver_too_old_for_the_variant_warns():
    old = HostDevices(0, "550.144.03", "nvidia-smi")
    choice = choose_lock(MAIN, {"cuda"}, old, cuda_variant="cu130")
    assert choice.device == "cuda" and "older than cu130 needs (>= 580)" in choice.warnings[0]
    assert choose_lock(MAIN, {"cuda"}, old, cuda_variant="cu128").warnings == ()
    assert driver_warning("550.144.03", "cu999", {"cu130": "580"}) is None


def test_a_fallback_lock_named_on_the_command_line_is_used_where_the_hardware_or_device_says():
    given = Path("pylock.cuda.toml")
    assert choose_lock(given, set(), GPU).path == given
    assert choose_lock(given, set(), HostDevices(16), "cuda").path == given
    with pytest.raises(InputError, match="16 Neuron device"):  # issue 22, item 9
        choose_lock(given, set(), HostDevices(16))
    with pytest.raises(InputError, match="is the CUDA fallback lock"):
        choose_lock(given, set(), HostDevices(16), "neuron")


def test_present_fallbacks_looks_beside_the_main_lock(tmp_path):
    (tmp_path / "pylock.cuda.toml").write_text("")
    (tmp_path / "pylock.rocm.toml").write_text("")
    assert present_fallbacks(tmp_path / "pylock.toml") == {"cuda"}
