"""Each doctor check over hand-made facts, one test per check per status it can give: no
interpreter is run, no machine read, no device probed (the guard makes any such attempt fail)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.pylock import Pylock
from support.doctor_facts import NO_HARDWARE, facts, legacy, machine, probe, python_env

import neuronctl.ops.doctor.facts as facts_module
import neuronctl.ops.smoke
import neuronctl.probes.device
import neuronctl.resolvers.pylock
from neuronctl.ops.doctor.checks import CHECK_IDS
from neuronctl.ops.doctor.checks_hardware import (
    check_chip,
    check_device,
    check_driver,
    check_driver_and_kernel,
    check_runtime,
)
from neuronctl.ops.doctor.checks_lock import check_lock
from neuronctl.ops.doctor.checks_model import check_model
from neuronctl.ops.doctor.checks_packages import (
    check_coherence,
    check_legacy,
    check_placeholders,
    check_python,
    check_torch_neuronx,
)
from neuronctl.ops.doctor.facts import ModelRun
from neuronctl.probes.smoke import SmokeReport, SmokeSpec
from neuronctl.probes.smoke_records import Comparison
from neuronctl.probes.sysroot import SysRoot
from neuronctl.tomlfile import loads_toml

NATIVE = {"torch-neuronx": "2.14.3.0", "torch": "2.14.0"}
XLA = {"torch-neuronx": "2.9.0.2.15.32035", "torch": "2.9.0"}  # 2.33's legacy XLA line
XLA_UNSHIPPED = {"torch-neuronx": "2.9.0.2.15.30001", "torch": "2.9.0"}  # no release's


@pytest.fixture(autouse=True)
def nothing_is_probed(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a check over given facts gathered one itself")

    for name in ("inspect_python", "detect_hardware", "detect_legacy"):
        monkeypatch.setattr(facts_module, name, refuse)
    # Facts imports these where the probe or the model run is first gathered: patched at home.
    monkeypatch.setattr(neuronctl.probes.device, "run_device_probe", refuse)
    monkeypatch.setattr(neuronctl.ops.smoke, "run_smoke", refuse)
    monkeypatch.setattr(neuronctl.resolvers.pylock, "load_pylock", refuse)


HEALTH_IDS = {"hardware.errors", "runtime.cores", "cache.compile", "network.efa"}


def test_every_check_has_direct_tests_here() -> None:
    # packages.system, device.access, device.holders and hardware.driver's kernel half have
    # theirs in test_system_checks.py (over fixture sysroots); host.os, packages.lifecycle and
    # runtime.compat's rules in test_release_rules.py; the issue-27 health checks in
    # tests/test_health_*.py
    assert set(CHECK_IDS) - HEALTH_IDS == {"python.version", "packages.torch-neuronx", "packages.legacy-xla",
                              "packages.placeholders", "packages.coherence", "packages.system",
                              "packages.lifecycle", "host.os",
                              "hardware.chip", "hardware.driver", "runtime.compat",
                              "device.access", "device.holders", "device.probe", "model.smoke",
                              "lock.drift"}


# python.version

def test_python_pass_when_the_release_supports_it() -> None:
    out = check_python(facts(env=python_env("3.12.3", NATIVE)))
    assert out.status == "pass" and "fits Neuron 2.33.0" in out.message


def test_python_warn_native_off_linux_x86_64() -> None:
    out = check_python(facts(env=python_env("3.12.3", NATIVE, system="Darwin", machine="arm64")))
    assert out.status == "warn" and "Linux x86_64 only" in out.message and out.fix is None


def test_python_warn_unsupported_with_nothing_neuron_installed() -> None:
    out = check_python(facts(env=python_env("3.10.14")))
    assert out.status == "warn" and "nothing Neuron is installed" in out.message
    assert out.fix is not None and "install --release 2.33.0" in out.fix


def test_legacy_warn_on_trn2_for_the_xla_line_the_release_ships() -> None:
    given = legacy("legacy", packages=("torch-xla", "libneuronxla"))
    out = check_legacy(facts(legacy=given, env=python_env(packages=XLA), hardware=machine("trn2")))
    assert out.status == "warn" and "inference only" in out.message
    assert "announce-no-support-pytorch-xla-training.html" in out.message
    unshipped = check_legacy(facts(legacy=given, env=python_env(packages=XLA_UNSHIPPED),
                                   hardware=machine("trn2")))
    assert unshipped.status == "fail"


def test_python_fail_unsupported_under_an_installed_stack() -> None:
    out = check_python(facts(env=python_env("3.10.14", NATIVE)))
    assert out.status == "fail" and "not supported by Neuron 2.33.0" in out.message
    assert out.fix is not None and "--venv .venv-neuron" in out.fix


# packages.torch-neuronx

def test_torch_neuronx_pass_native_pinned_on_trn2() -> None:
    out = check_torch_neuronx(facts(env=python_env(packages=NATIVE), hardware=machine("trn2")))
    assert out.status == "pass" and "pinned by Neuron 2.33.0" in out.message


def test_torch_neuronx_pass_legacy_xla_on_trn1() -> None:
    out = check_torch_neuronx(facts(env=python_env("3.11.9", XLA), hardware=machine("trn1")))
    assert out.status == "pass" and "right stack for trn1" in out.message


def test_torch_neuronx_warn_not_installed() -> None:
    out = check_torch_neuronx(facts())
    assert out.status == "warn" and "not installed" in out.message and out.fix


def test_torch_neuronx_warn_native_but_not_pinned() -> None:
    env = python_env(packages={"torch-neuronx": "2.14.1.0", "torch": "2.14.0"})
    out = check_torch_neuronx(facts(env=env, hardware=machine("trn2")))
    assert out.status == "warn" and "not a version Neuron 2.33.0 pins" in out.message


def test_torch_neuronx_warn_unknown_line() -> None:
    out = check_torch_neuronx(facts(env=python_env(packages={"torch-neuronx": "2.11.0"})))
    assert out.status == "warn" and "does not know" in out.message


def test_torch_neuronx_fail_placeholder() -> None:
    out = check_torch_neuronx(facts(env=python_env(packages={"torch-neuronx": "1.0"})))
    assert out.status == "fail" and "placeholder" in out.message


def test_torch_neuronx_fail_native_on_trn1() -> None:
    out = check_torch_neuronx(facts(env=python_env(packages=NATIVE), hardware=machine("trn1")))
    assert out.status == "fail" and "trn2/trn3 only" in out.message


def test_torch_neuronx_fail_legacy_under_a_native_release_on_trn2() -> None:
    out = check_torch_neuronx(facts(env=python_env(packages=XLA_UNSHIPPED),
                                    hardware=machine("trn2")))
    assert out.status == "fail" and "legacy XLA library" in out.message


def test_torch_neuronx_warn_legacy_line_the_release_ships_on_trn2() -> None:
    out = check_torch_neuronx(facts(env=python_env(packages=XLA), hardware=machine("trn2")))
    assert out.status == "warn" and "supported on trn2 for inference only" in out.message
    assert "support.xla-training-ended-2.30; source: https://" in out.message


def test_torch_neuronx_fail_legacy_line_after_xla_inference_ended() -> None:
    out = check_torch_neuronx(facts(env=python_env(packages=XLA), hardware=machine("trn2"),
                                    release="2.34.0"))
    assert out.status == "fail" and "support.xla-inference-trn2-trn3-ended-2.34" in out.message


# packages.legacy-xla

def test_legacy_pass_none() -> None:
    assert check_legacy(facts(legacy=legacy("none"))).status == "pass"


def test_legacy_pass_expected_on_trn1() -> None:
    out = check_legacy(facts(legacy=legacy("legacy", packages=("torch-xla",)),
                             hardware=machine("trn1")))
    assert out.status == "pass" and "expected on trn1" in out.message


def test_legacy_warn_mixed_signals() -> None:
    out = check_legacy(facts(legacy=legacy("mixed")))
    assert out.status == "warn" and out.fix == "unset PJRT_DEVICE"


def test_legacy_fail_on_trn2_under_a_native_release() -> None:
    out = check_legacy(facts(legacy=legacy("legacy", packages=("torch-xla", "libneuronxla")),
                             hardware=machine("trn2")))
    assert out.status == "fail" and "torch-xla, libneuronxla" in out.message
    assert out.fix is not None and "install --release 2.33.0" in out.fix


# packages.placeholders

def test_placeholders_pass() -> None:
    assert check_placeholders(facts()).status == "pass"


def test_placeholders_fail() -> None:
    out = check_placeholders(facts(legacy=legacy(placeholders=("neuronx-cc 1.0",))))
    assert out.status == "fail" and "neuronx-cc 1.0" in out.message


# packages.coherence

def test_coherence_skip_without_neuron_packages() -> None:
    assert check_coherence(facts()).status == "skip"


def test_coherence_pass_when_versions_agree() -> None:
    env = python_env(packages={**NATIVE, "nki": "0.7.0"})
    out = check_coherence(facts(env=env, hardware=machine("trn2")))
    assert out.status == "pass" and out.message == "2 version pairs agree"


def test_coherence_warn_on_an_unpinned_companion() -> None:
    out = check_coherence(facts(env=python_env(packages={**NATIVE, "nki": "0.6.0"})))
    assert out.status == "warn" and "nki 0.6.0 is not what Neuron 2.33.0 pins" in out.message


def test_coherence_warn_cuda_torch_without_neuron_hardware() -> None:
    env = python_env(packages={"torch": "2.14.0+cu124"})
    assert check_coherence(facts(env=env)).status == "warn"


def test_coherence_fail_torch_mismatch() -> None:
    env = python_env(packages={"torch-neuronx": "2.14.3.0", "torch": "2.13.0"})
    out = check_coherence(facts(env=env))
    assert out.status == "fail" and "does not match torch-neuronx" in out.message


def test_coherence_fail_cuda_torch_on_a_neuron_host() -> None:
    env = python_env(packages={"torch": "2.14.0+cu124"})
    out = check_coherence(facts(env=env, hardware=machine("trn2")))
    assert out.status == "fail" and "CUDA build" in out.message


def test_coherence_fail_nki_beside_nrtpy() -> None:
    out = check_coherence(facts(env=python_env(packages={"nki": "0.7.0", "nrtpy": "2.34.10"})))
    assert out.status == "fail" and "clash" in out.message and "nrtpy" in (out.fix or "")


# hardware.chip

def test_chip_skip_without_hardware() -> None:
    assert check_chip(facts()).status == "skip"


def test_chip_pass_trn2() -> None:
    out = check_chip(facts(hardware=machine("trn2", instance_type="trn2.48xlarge")))
    assert out.status == "pass" and out.message.startswith("trn2 (Trainium2), 2 device(s), NeuronCores: 16 physical, logical unknown")
    assert "trn2.48xlarge" in out.message and "native TorchNeuron yes" in out.message


def test_chip_warn_undecided() -> None:
    out = check_chip(facts(hardware=machine(None)))
    assert out.status == "warn" and "could not be decided" in out.message


def test_chip_warn_conflicting_signals() -> None:
    out = check_chip(facts(hardware=machine("trn2", conflicts=("DMI product_name says inf2",))))
    assert out.status == "warn" and "signals disagree: DMI product_name says inf2" in out.message


def test_chip_warn_trn1_under_a_native_release() -> None:
    out = check_chip(facts(hardware=machine("trn1")))
    assert out.status == "warn" and "needs trn2/trn3" in out.message


# hardware.driver

def test_driver_skip_without_hardware() -> None:
    assert check_driver(facts()).status == "skip"


def test_driver_pass_as_the_release_ships() -> None:
    out = check_driver(facts(hardware=machine("trn2")))
    assert out.status == "pass" and out.message == "driver 2.31.7.0 (Neuron 2.33.0 ships 2.31.7.0)"


def test_driver_warn_dev_nodes_only() -> None:
    out = check_driver(facts(hardware=machine("trn2", driver=None, sysfs=False, pci=False)))
    assert out.status == "warn" and "inside a container?" in out.message


def test_driver_warn_upgraded_without_reload() -> None:
    out = check_driver(facts(hardware=machine("trn2", dkms_package="2.31.9.0")))
    assert out.status == "warn" and "upgraded without reload" in out.message
    assert out.fix == "sudo rmmod neuron && sudo modprobe neuron"


def test_driver_warn_older_than_the_release() -> None:
    out = check_driver(facts(hardware=machine("trn2", driver="2.29.0.0")))
    assert out.status == "warn" and "older than Neuron 2.33.0 ships" in out.message


def test_driver_fail_not_loaded() -> None:
    out = check_driver(facts(hardware=machine("trn2", driver=None)))
    assert out.status == "fail" and "not loaded" in out.message


# runtime.compat

def test_runtime_skip_without_runtime_or_hardware() -> None:
    assert check_runtime(facts()).status == "skip"


def test_runtime_pass_as_the_release_ships() -> None:
    out = check_runtime(facts(hardware=machine("trn2")))
    assert out.status == "pass" and "as Neuron 2.33.0 ships" in out.message


def test_runtime_warn_missing_on_a_neuron_host() -> None:
    out = check_runtime(facts(hardware=machine("trn2", runtime=None)))
    assert out.status == "warn" and "not found" in out.message


def test_runtime_warn_not_the_release_s() -> None:
    out = check_runtime(facts(hardware=machine("trn2", driver="2.29.0.0", runtime="2.33.10.0")))
    assert out.status == "warn" and "not the one Neuron 2.33.0 ships" in out.message


def test_runtime_fail_newer_than_the_driver() -> None:
    out = check_runtime(facts(hardware=machine("trn2", driver="2.29.0.0")))
    assert out.status == "fail" and "is newer than driver 2.29.0.0" in out.message


# device.probe

def test_device_skip_without_torch_on_auto() -> None:
    assert check_device(facts(probe=probe("no-torch", None, torch=None))).status == "skip"


def test_device_pass() -> None:
    out = check_device(facts(device="cpu", probe=probe()))  # --device cpu: a pass of the CPU
    assert out.status == "pass" and out.message == "all tiers passed (torch 2.14.0)"


def test_device_skip_cpu_on_a_neuron_host_without_torch_neuronx() -> None:
    out = check_device(facts(probe=probe(device="cpu"), hardware=machine("trn2")))
    assert out.status == "skip" and "no Neuron torch backend is installed here" in out.message
    assert out.fix is None


def test_device_warn_cpu_on_a_neuron_host_with_torch_neuronx() -> None:
    out = check_device(facts(probe=probe(device="cpu"), hardware=machine("trn2"),
                             env=python_env(packages=NATIVE)))
    assert out.status == "warn" and "no 'neuron' torch backend" in out.message and out.fix


def test_device_fail_asked_device_without_torch() -> None:
    out = check_device(facts(device="cpu", probe=probe("no-torch", None, torch=None)))
    assert out.status == "fail" and "--device cpu: torch is not installed" in out.message


def test_device_fail_a_failed_tier() -> None:
    out = check_device(facts(probe=probe("failed", detail="allocate failed: NRT error")))
    assert out.status == "fail" and out.message == "allocate failed: NRT error"


# lock.drift

def pylock(environments: str = "") -> Pylock:
    text = ('lock-version = "1.0"\ncreated-by = "test"\n' + environments +
            '\n[[packages]]\nname = "nki"\nversion = "0.7.0"\n'
            '[[packages.wheels]]\nurl = "https://example.invalid/nki-0.7.0-py3-none-any.whl"\n'
            'hashes = {sha256 = "' + "b" * 64 + '"}\n')
    return Pylock.from_dict(loads_toml(text, "test lock"))


def test_lock_pass_when_every_package_matches() -> None:
    out = check_lock(facts(env=python_env(packages={"nki": "0.7.0"}), lock=Path("pylock.toml"),
                           pylock=pylock()))
    assert out.status == "pass" and out.message == "all 1 packages match pylock.toml"


def test_lock_fail_on_drift() -> None:
    out = check_lock(facts(env=python_env(packages={"nki": "0.6.0"}), lock=Path("pylock.toml"),
                           pylock=pylock()))
    assert out.status == "fail" and out.details == ("nki: locked 0.7.0, installed 0.6.0",)


def test_lock_fail_for_another_environment() -> None:
    lock = pylock("environments = ['python_version == \"3.13\"']\n")
    out = check_lock(facts(env=python_env("3.12.3"), lock=Path("pylock.toml"), pylock=lock))
    assert out.status == "fail" and "is not for this environment" in out.message
    assert out.fix is not None and " lock --release 2.33.0 --python-version 3.12 -o pylock.toml" in out.fix


def test_given_facts_are_never_gathered_again() -> None:
    given = facts(hardware=NO_HARDWARE)
    assert given.gathered("hardware") and given.gathered("env") and not given.gathered("selection")
    assert given.hardware is NO_HARDWARE


# hardware.driver, with the module against the running kernel

def _kernel_upgraded(root: Path) -> Path:
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/osrelease").write_text("6.8.0-1020-aws\n")
    module = root / "lib/modules/6.8.0-1015-aws/updates/dkms/neuron.ko"
    module.parent.mkdir(parents=True)
    module.write_bytes(b"")
    return root


def test_driver_fail_kernel_upgraded_without_a_dkms_rebuild(tmp_path: Path) -> None:
    given = facts(hardware=machine("trn2"))
    given.sysroot = SysRoot(_kernel_upgraded(tmp_path))
    assert check_driver(given).status == "pass"  # the loaded driver alone looks fine
    out = check_driver_and_kernel(given)
    assert out.status == "fail" and "no neuron module for the running kernel 6.8.0-1020-aws" \
        in out.message
    assert out.fix is not None and "dkms install -m aws-neuronx" in out.fix
    assert "; driver 2.31.7.0" in out.message  # what the loaded driver says follows


def test_driver_pass_keeps_the_driver_message_when_the_kernel_half_skips(tmp_path: Path) -> None:
    given = facts(hardware=machine("trn2"))
    given.sysroot = SysRoot(tmp_path)
    out = check_driver_and_kernel(given)
    assert out.status == "pass" and out.message.startswith("driver 2.31.7.0")


# model.smoke

MODEL = ModelRun("mypkg.models:make", "config model (pyproject.toml)")


def smoke(outcome: str = "ok", **fields: object) -> SmokeReport:
    spec = SmokeSpec(model=MODEL.spec, origin=MODEL.origin)
    fields.setdefault("device", "cpu")
    return SmokeReport(spec, outcome, fields.pop("detail", "passed"), **fields)  # type: ignore[arg-type]


def test_model_skip_without_a_configured_model() -> None:
    out = check_model(facts())
    assert out.status == "skip" and 'model = "pkg.mod:make"' in out.message


def test_model_pass_with_its_step_time_and_errors() -> None:
    comparison = Comparison("outputs", True, 1e-6, 2e-6, None, 1, "float32", 1e-4, 1e-5, None)
    out = check_model(facts(model=MODEL, smoke=smoke(step_ms=(4.0, 5.0, 6.0), tokens_per_step=100,
                                                     comparisons=(comparison,), device="neuron")))
    assert out.status == "pass"
    assert out.message == ("mypkg.models:make (config model (pyproject.toml)) ran on neuron and "
                           "matches CPU: median step 5.00 ms, 20,000 tokens/s")
    assert out.details[0].startswith("outputs: max abs error 1e-06")


def test_a_model_run_on_cpu_is_no_device_verdict() -> None:
    out = check_model(facts(model=MODEL, smoke=smoke(step_ms=(4.0,))))
    assert out.status == "skip"
    assert out.message.endswith("ran on cpu, not a Neuron device: a CPU run checks the model, not "
                                "a device")
    assert check_model(facts(model=MODEL, device="cpu", smoke=smoke(step_ms=(4.0,)))).status == "pass"


def test_model_fail_names_the_stage_and_step() -> None:
    out = check_model(facts(model=MODEL, smoke=smoke("failed", detail="RuntimeError: boom",
                                                     stage="forward", step=2)))
    assert out.status == "fail"
    assert out.message.endswith("failed in forward step 2: RuntimeError: boom")
    assert out.fix is not None and "smoke --model mypkg.models:make" in out.fix


def test_model_waits_for_a_passing_device_probe() -> None:
    given = facts(model=MODEL, probe=probe("failed", detail="import tier failed"),
                  smoke=smoke("failed"))
    given.planned = frozenset({"probe"})
    out = check_model(given)
    assert out.status == "skip" and "device probe did not pass (import tier failed)" in out.message
