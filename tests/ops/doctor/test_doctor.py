import json
import os
import sys
import time
import xml.etree.ElementTree as ET

import pytest
from support.sysroots import build_cpu_host, build_host

from neuronctl.ops.doctor.runner import Check, CheckOutcome, run_checks


def doctor_json(cli, *args):
    r = cli("doctor", "--json", *args)
    assert r.code in (0, 1), r.err
    data = json.loads(r.out)
    return r.code, data, {c["id"]: c for c in data["checks"]}


def test_native_stack_on_trn2_is_clean(cli, stacks, trn2):
    code, data, checks = doctor_json(cli, "--python", str(stacks["native"]), "--sysroot", str(trn2),
                                     "--no-device-probe")
    assert code == 0, checks
    assert data["schema"] == 1
    assert data["summary"]["verdict"] == "pass"
    # this captured tree holds no kernel log: hardware.errors has nothing to read (skip, not pass)
    assert checks.pop("hardware.errors")["status"] == "skip"
    assert {c["status"] for c in checks.values()} == {"pass"}
    assert "device.probe" not in checks and "lock.drift" not in checks
    assert data["environment"]["release"]["version"] == "2.33.1"
    assert data["environment"]["hardware"]["chip"] == "trn2"
    for c in data["checks"]:
        assert set(c) >= {"id", "title", "status", "message", "fix", "duration_ms"}


def test_relative_python_path_is_the_same_environment(cli, stacks, trn2):
    """`--python ../venv` from another directory: the inspection runs elsewhere, so the path must
    not be taken relative to where the interpreter lives."""
    rel = os.path.relpath(stacks["native"], os.getcwd())
    assert not os.path.isabs(rel)
    code, data, checks = doctor_json(cli, "--python", rel, "--sysroot", str(trn2), "--no-device-probe")
    assert code == 0, checks
    assert data["environment"]["python"]["executable"] == str(stacks["native"])


def test_native_on_trn1_fails(cli, stacks, tmp_path):
    root = build_host(tmp_path / "trn1", "trn1")
    code, _, checks = doctor_json(cli, "--python", str(stacks["native"]), "--sysroot", str(root),
                                  "--no-device-probe")
    assert code == 1
    assert checks["packages.torch-neuronx"]["status"] == "fail"
    assert "trn2/trn3 only" in checks["packages.torch-neuronx"]["message"]


def test_legacy_stack_on_trn2_fails_with_fix(cli, stacks, trn2):
    # A legacy XLA build no release ships (the one 2.33.x ships is a warning: see below).
    code, _, checks = doctor_json(cli, "--python", str(stacks["legacy-unshipped"]), "--sysroot", str(trn2),
                                  "--no-device-probe")
    assert code == 1
    legacy = checks["packages.legacy-xla"]
    assert legacy["status"] == "fail"
    # The legacy venv is Python 3.11, which native TorchNeuron does not support: a new venv.
    assert legacy["fix"].endswith(" install --release 2.33.1 --torch 2.14 --venv .venv-neuron "
                                  "--venv-python 3.12 --yes")
    assert checks["packages.torch-neuronx"]["fix"] == legacy["fix"]
    assert len(legacy["details"]) == 5
    assert checks["packages.torch-neuronx"]["status"] == "fail"


def test_shipped_legacy_line_on_trn2_is_inference_only(cli, stacks, trn2):
    # Issue 23: 2.33.x ships torch-neuronx 2.9.0.2.15.32035 as its legacy XLA line, and AWS
    # supports XLA inference on Trn2/Trn3 through 2.33: a warning, with the rules' sources.
    _, _, checks = doctor_json(cli, "--python", str(stacks["legacy"]), "--sysroot", str(trn2),
                               "--release", "2.33.1", "--no-device-probe")
    for check in ("packages.torch-neuronx", "packages.legacy-xla"):
        out = checks[check]
        assert out["status"] == "warn", out
        assert "Neuron 2.33.1 still ships, supported on trn2 for inference only" in out["message"]
        assert "XLA training ended in 2.30" in out["message"]
        assert "[support.xla-training-ended-2.30; source: https://awsdocs-neuron" in out["message"]
        assert "support.xla-inference-trn2-trn3-ended-2.34" in out["message"]
        assert any("announce-no-support-pytorch-xla-training.html" in d for d in out["details"])


def test_unshipped_legacy_line_on_trn2_fails_under_2_33_1(cli, stacks, trn2):
    _, _, checks = doctor_json(cli, "--python", str(stacks["legacy-unshipped"]), "--sysroot",
                               str(trn2), "--release", "2.33.1", "--no-device-probe")
    assert checks["packages.torch-neuronx"]["status"] == "fail"
    assert "legacy XLA library" in checks["packages.torch-neuronx"]["message"]
    assert "inference only" not in checks["packages.torch-neuronx"]["message"]
    assert checks["packages.legacy-xla"]["status"] == "fail"


def test_shipped_legacy_line_on_trn2_fails_under_2_34_0(cli, stacks, trn2):
    # XLA inference on Trn2/Trn3 ended in 2.34.0: the rule's words and source are named.
    code, _, checks = doctor_json(cli, "--python", str(stacks["legacy"]), "--sysroot", str(trn2),
                                  "--release", "2.34.0", "--no-device-probe")
    assert code == 1
    for check in ("packages.torch-neuronx", "packages.legacy-xla"):
        out = checks[check]
        assert out["status"] == "fail", out
        assert "[support.xla-inference-trn2-trn3-ended-2.34; source: https://awsdocs-neuron" \
            in out["message"]
        assert "inference only" not in out["message"]


def test_legacy_stack_on_trn1_is_expected(cli, stacks, tmp_path):
    root = build_host(tmp_path / "trn1", "trn1")
    code, _, checks = doctor_json(cli, "--python", str(stacks["legacy"]), "--sysroot", str(root),
                                  "--no-device-probe")
    assert checks["packages.legacy-xla"]["status"] == "pass"
    assert "expected on trn1" in checks["packages.legacy-xla"]["message"]
    assert checks["packages.torch-neuronx"]["status"] == "pass"
    assert checks["packages.coherence"]["status"] == "warn"  # neuronx-cc 2.26 vs 2.33's 2.28
    assert code == 0
    strict = cli("doctor", "--strict", "--python", str(stacks["legacy"]), "--sysroot", str(root),
                 "--no-device-probe")
    assert strict.code == 1


def test_placeholders_fail(cli, stacks, trn2):
    code, _, checks = doctor_json(cli, "--python", str(stacks["placeholder"]), "--sysroot",
                                  str(trn2), "--no-device-probe")
    assert code == 1
    assert checks["packages.placeholders"]["status"] == "fail"
    # The install replaces placeholders in one step (they are removed when moving to native).
    assert checks["packages.placeholders"]["fix"].endswith(
        f" install --release 2.33.1 --torch 2.14 --python {stacks['placeholder']} --yes")
    assert "PyPI placeholder" in checks["packages.torch-neuronx"]["message"]


def test_coherence_torch_mismatch_and_nki_nrtpy_clash(cli, stacks, trn2):
    code, _, checks = doctor_json(cli, "--python", str(stacks["clash"]), "--sysroot", str(trn2),
                                  "--no-device-probe")
    assert code == 1
    msg = checks["packages.coherence"]["message"]
    assert "torch 2.13.0+cpu does not match torch-neuronx 2.14.3.0" in msg
    assert "nki and nrtpy are both installed" in msg


def test_cuda_torch_on_neuron_host(cli, stacks, trn2):
    _, _, checks = doctor_json(cli, "--python", str(stacks["cuda"]), "--sysroot", str(trn2),
                               "--no-device-probe")
    assert checks["packages.coherence"]["status"] == "fail"
    assert "CUDA build" in checks["packages.coherence"]["message"]


def test_pjrt_device_makes_signals_disagree(cli, stacks, trn2, monkeypatch):
    monkeypatch.setenv("PJRT_DEVICE", "NEURON")
    _, _, checks = doctor_json(cli, "--python", str(stacks["native"]), "--sysroot", str(trn2),
                               "--no-device-probe")
    assert checks["packages.legacy-xla"]["status"] == "warn"
    assert "signals disagree" in checks["packages.legacy-xla"]["message"]


def test_runtime_newer_than_driver(cli, stacks, tmp_path):
    root = build_host(tmp_path / "r", "trn2", driver="2.29.0.0", runtime="2.35.30.0")
    code, _, checks = doctor_json(cli, "--python", str(stacks["native"]), "--sysroot", str(root),
                                  "--no-device-probe")
    assert code == 1
    assert checks["runtime.compat"]["status"] == "fail"
    assert "newer than driver 2.29.0.0" in checks["runtime.compat"]["message"]
    assert "aws-neuronx-dkms=2.31.7.0*" in checks["runtime.compat"]["fix"]
    assert checks["hardware.driver"]["status"] == "warn"


def test_driver_upgraded_without_reload(cli, stacks, tmp_path):
    root = build_host(tmp_path / "r", "trn2", driver="2.30.2.0", dkms_pkg="2.31.7.0",
                      runtime="2.34.10.0")
    _, _, checks = doctor_json(cli, "--python", str(stacks["native"]), "--sysroot", str(root),
                               "--no-device-probe", "--only", "hardware")
    assert set(checks) == {"hardware.chip", "hardware.driver", "hardware.errors"}
    assert checks["hardware.driver"]["status"] == "warn"
    assert checks["hardware.driver"]["fix"] == "sudo rmmod neuron && sudo modprobe neuron"


def test_pci_without_driver_and_container(cli, stacks, tmp_path):
    root = build_host(tmp_path / "nodrv", "trn2", driver=None, sysfs=False, dev_nodes=False,
                      runtime=None)
    _, _, checks = doctor_json(cli, "--python", str(stacks["native"]), "--sysroot", str(root),
                               "--no-device-probe")
    assert checks["hardware.driver"]["status"] == "fail"
    assert "driver is not loaded" in checks["hardware.driver"]["message"]
    box = build_host(tmp_path / "box", "trn2", sysfs=False, pci=False, dmi=False, runtime=None,
                     neuron_ls=False)
    _, _, checks = doctor_json(cli, "--python", str(stacks["native"]), "--sysroot", str(box),
                               "--no-device-probe")
    assert checks["hardware.driver"]["status"] == "warn"
    assert "container" in checks["hardware.driver"]["message"]


def test_plain_cpu_machine_with_real_torch_passes_probe(cli, tmp_path):
    root = build_cpu_host(tmp_path / "cpu")
    r = cli("doctor", "--sysroot", str(root), "--python", sys.executable)
    assert r.code == 0, r.out
    # Issue 25: a CPU run is no pass of the device, and no stack is not healthy.
    assert "device.probe" in r.out and "torch works on cpu; no Neuron device here" in r.out
    assert "warn: no Neuron stack installed here" in r.out


def test_empty_env_needs_no_hardware_or_network(cli, stacks, tmp_path):
    root = build_cpu_host(tmp_path / "cpu")
    code, _, checks = doctor_json(cli, "--python", str(stacks["empty"]), "--sysroot", str(root))
    assert code == 0
    assert checks["device.probe"]["status"] == "skip"
    assert checks["packages.torch-neuronx"]["status"] == "warn"
    assert checks["hardware.chip"]["status"] == "skip"
    forced = cli("doctor", "--python", str(stacks["empty"]), "--sysroot", str(root), "--device", "cpu",
                 "--only", "device")
    assert forced.code == 1


def test_junit_output_is_valid(cli, stacks, trn2, tmp_path):
    out = tmp_path / "doctor.xml"
    r = cli("doctor", "--format", "junit", "-o", str(out), "--python",
            str(stacks["legacy-unshipped"]),
            "--sysroot", str(trn2), "--no-device-probe")
    assert r.code == 1
    assert "fail: problems found" in r.out
    tree = ET.parse(out)
    suites = tree.getroot()
    assert suites.tag == "testsuites"
    cases = suites.findall("./testsuite/testcase")
    assert len(cases) == 16  # level 1: every check but device.probe, model.smoke and lock.drift
    failures = [c.get("name") for c in cases if c.find("failure") is not None]
    assert "packages.legacy-xla" in failures
    assert int(suites.get("failures")) == len(failures)
    skipped = [c.get("name") for c in cases if c.find("skipped") is not None]
    assert int(suites.get("skipped")) == len(skipped)


def test_github_format_and_step_summary(cli, stacks, trn2, tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    r = cli("doctor", "--format", "github", "--python", str(stacks["legacy-unshipped"]),
            "--sysroot", str(trn2), "--no-device-probe")
    assert r.code == 1
    errors = [line for line in r.out.splitlines() if line.startswith("::error ")]
    assert any(line.startswith("::error title=neuronctl packages.legacy-xla::") for line in errors)
    assert all("\n" not in line for line in errors)
    assert any("%0Afix: " in line and "neuronctl install --release 2.33.1" in line for line in errors)
    text = summary.read_text()
    assert text.startswith("earlier step\n## neuronctl doctor")
    assert "| :x: | `packages.legacy-xla` |" in text


def test_lock_drift(cli, stacks, trn2, tmp_path):
    lock = tmp_path / "pylock.toml"
    lock.write_text(
        'lock-version = "1.0"\ncreated-by = "test"\n\n'
        '[[packages]]\nname = "torch-neuronx"\nversion = "2.14.3.0"\n'
        '[[packages.wheels]]\nurl = "https://example.invalid/torch_neuronx-2.14.3.0-py3-none-any.whl"\n'
        'hashes = {sha256 = "' + "a" * 64 + '"}\n\n'
        '[[packages]]\nname = "nki"\nversion = "0.6.0"\n'
        '[[packages.wheels]]\nurl = "https://example.invalid/nki-0.6.0-py3-none-any.whl"\n'
        'hashes = {sha256 = "' + "b" * 64 + '"}\n\n'
        '[[packages]]\nname = "windows-only"\nversion = "1.0"\nmarker = "sys_platform == \'win32\'"\n'
        '[[packages.wheels]]\nurl = "https://example.invalid/windows_only-1.0-py3-none-any.whl"\n'
        'hashes = {sha256 = "' + "c" * 64 + '"}\n')
    code, _, checks = doctor_json(cli, "--python", str(stacks["native"]), "--sysroot", str(trn2),
                                  "--no-device-probe", "--lock", str(lock))
    assert code == 1
    drift = checks["lock.drift"]
    assert drift["status"] == "fail"
    assert drift["details"][0] == "nki: locked 0.6.0, installed 0.7.0"
    # What the venv has that the lock does not list is named too, with its size (issue 14).
    assert sorted(d.split(":")[0] for d in drift["details"][1:]) == ["neuronx-cc 2.28.7631.0+6f180f47",
                                                                     "torch 2.14.0+cpu"]
    assert "1 of 2 locked packages" in drift["message"]
    other = tmp_path / "pylock.other.toml"
    other.write_text("environments = ['python_version == \"3.13\"']\n" + lock.read_text())
    code, _, checks = doctor_json(cli, "--python", str(stacks["native"]), "--sysroot", str(trn2),
                                  "--no-device-probe", "--lock", str(other))
    assert code == 1 and "is not for this environment" in checks["lock.drift"]["message"]
    bad = tmp_path / "bad.toml"
    bad.write_text('lock-version = "9.0"\n')
    r = cli("doctor", "--lock", str(bad))
    assert r.code == 2 and str(bad) in r.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--only", "nope"), "--only 'nope': no such check"),
        (("--skip", "hardware.gpu"), "--skip 'hardware.gpu': no such check"),
        (("--release", "3.0.0"), "unknown Neuron release '3.0.0'"),
        (("--python", "/nonexistent/python"), "no such interpreter"),
        (("--timeout", "0"), "timeout must be a positive number"),
        (("--only", "lock.drift"), "--only lock.drift needs --lock FILE"),
        (("--json", "--format", "junit"), "--json conflicts with --format junit"),
    ],
)
def test_bad_input_exits_2(cli, args, message):
    r = cli("doctor", *args)
    assert r.code == 2
    assert message in r.err
    assert "Traceback" not in r.err


def test_release_override_and_output_file(cli, stacks, trn2, tmp_path):
    out = tmp_path / "report.json"
    r = cli("doctor", "--json", "-o", str(out), "--release", "2.31.1", "--python",
            str(stacks["native"]), "--sysroot", str(trn2), "--no-device-probe")
    data = json.loads(out.read_text())
    assert data["environment"]["release"] == {"version": "2.31.1", "backend": "xla",
                                              "flavour": "xla", "reason": "requested"}
    assert data["release_source"] == "--release"
    assert "packages.torch-neuronx" in r.out  # stdout keeps the text report
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".report")] == []


def test_runner_timeouts_and_raising_checks_are_failures():
    def slow():
        time.sleep(30)
        return CheckOutcome("pass", "never")

    def broken():
        raise KeyError("boom")

    start = time.monotonic()
    results = run_checks([Check("a.slow", "slow", slow, 0.5),
                          Check("b.broken", "broken", broken, 5),
                          Check("c.fine", "fine", lambda: CheckOutcome("pass", "ok"), 5)])
    assert time.monotonic() - start < 5
    by_id = {r.id: r for r in results}
    assert by_id["a.slow"].status == "fail" and "timed out after 0.5s" in by_id["a.slow"].message
    assert by_id["b.broken"].status == "fail" and "KeyError" in by_id["b.broken"].message
    assert by_id["c.fine"].status == "pass"
    assert [r.id for r in results] == ["a.slow", "b.broken", "c.fine"]
