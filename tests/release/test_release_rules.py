"""The documented rules as data: OS rules from os-release under --sysroot, AWS's driver/runtime/
dkms rules, support windows, each reported with its words and source; the staleness note."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from support.doctor_facts import facts, machine, python_env
from support.sysroots import UBUNTU_24_04, UBUNTU_26_04, build_host

from neuronctl.ops.doctor.checks_rules import (
    check_host_os,
    check_lifecycle,
    check_runtime_compat,
    stale_note,
)
from neuronctl.probes.sysroot import SysRoot
from neuronctl.release.manifest import load_bundled_manifest, parse_manifest
from neuronctl.release.rules import Situation, broken_rules

M = load_bundled_manifest()


def _root_facts(root: Path, release: str = "2.33.1", **kw: object):
    kw.setdefault("hardware", machine("trn2"))
    f = facts(release=release, **kw)
    f.sysroot = SysRoot(root)
    return f


def test_every_rule_names_its_source():
    assert len(M.rules) >= 15
    for rule in M.rules:
        assert M.sources[rule.source].url.startswith("https://"), rule.id


def test_ubuntu_24_04_breaks_the_2_33_wheel_rule_and_26_04_does_not(tmp_path):
    old = build_host(tmp_path / "u24", "trn2", os_release=UBUNTU_24_04)
    out = check_host_os(_root_facts(old))
    assert out.status == "fail"
    assert "support Ubuntu 26.04 only" in out.message and "build torch-neuronx from source" in out.message
    assert "os.torchneuron-wheels-ubuntu-26.04" in out.message
    assert "quickstart-torch-neuron.html (read 2026-12-01)" in out.message
    new = build_host(tmp_path / "u26", "trn2", os_release=UBUNTU_26_04)
    assert check_host_os(_root_facts(new)).status == "pass"
    # The rule is 2.33's: 2.32.0 (no TorchNeuron) on 24.04 breaks nothing.
    assert check_host_os(_root_facts(old, release="2.32.0")).status == "pass"


def test_without_neuron_hardware_the_os_rules_are_named_but_skipped(tmp_path):
    """An environment prepared here for another host: this machine's OS is not that host's."""
    from support.doctor_facts import NO_HARDWARE

    old = build_host(tmp_path / "u24", "trn2", os_release=UBUNTU_24_04)
    out = check_host_os(_root_facts(old, hardware=NO_HARDWARE))
    assert out.status == "skip" and "Ubuntu 26.04 only" in out.message


def test_no_os_release_is_a_skip(tmp_path):
    root = build_host(tmp_path / "r", "trn2", os_release=None)
    assert check_host_os(_root_facts(root)).status == "skip"


def test_host_os_through_the_cli(cli, tmp_path):
    root = build_host(tmp_path / "u24", "trn2", os_release=UBUNTU_24_04)
    r = cli("doctor", "--level", "1", "--only", "host.os", "--sysroot", str(root), "--json")
    check = next(c for c in json.loads(r.out)["checks"] if c["id"] == "host.os")
    assert check["status"] == "fail" and "Ubuntu 26.04 only" in check["message"]


def test_driver_2_26_with_runtime_2_32_breaks_aws_rule():
    hw = machine("trn2", driver="2.26.10.0", runtime="2.32.31.0")
    out = check_runtime_compat(facts(hardware=hw, release="2.30.0"))
    assert out.status == "fail"
    assert "Neuron Runtime Library 2.32 is not backward-compatible with Neuron Driver 2.26" in out.message
    assert "runtime.runtime-2.32-needs-driver-2.27" in out.message and "runtime.rst" in out.message


def test_dkms_2_21_on_trn2_with_runtime_2_26_breaks_and_on_trn1_does_not():
    s = Situation("2.24.0", chip="trn2", driver="2.21.37.0", runtime="2.26.42.0")
    assert [r.id for r in broken_rules(M.rules, s, ("runtime",))] == [
        "runtime.runtime-2.26-needs-dkms-2.22-trn2"]
    s1 = Situation("2.24.0", chip="trn1", driver="2.21.37.0", runtime="2.26.42.0")
    assert broken_rules(M.rules, s1, ("runtime",)) == []
    out = check_runtime_compat(facts(hardware=machine("trn2", driver="2.21.37.0",
                                                      runtime="2.26.42.0"), release="2.24.0"))
    assert out.status == "fail" and "aws-neuron-dkms version 2.22 or later" in out.message


def test_driver_2_29_needs_runtime_2_33_and_inf1_stays_on_2_24():
    assert [r.id for r in broken_rules(M.rules, Situation("2.31.0", driver="2.29.0.0",
                                                          runtime="2.32.31.0"), ("runtime",))] \
        == ["runtime.driver-2.29-needs-runtime-2.33"]
    inf1 = broken_rules(M.rules, Situation("2.31.0", chip="inf1", driver="2.29.0.0"), ("runtime",))
    assert "runtime.inf1-driver-2.24" in [r.id for r in inf1]
    ok = Situation("2.31.0", chip="inf1", driver="2.24.13.0")
    assert broken_rules(M.rules, ok, ("runtime",)) == []


def test_runtime_2_35_features_on_an_older_driver_warn_only():
    out = check_runtime_compat(facts(hardware=machine("trn2", driver="2.30.2.0",
                                                      runtime="2.35.33.0"), release="2.33.1"))
    # runtime 2.35.33.0 is also newer than driver 2.30.2.0's release: the existing fail stays
    assert out.status == "fail" and "require Neuron Driver 2.31 or later" in out.message
    rules = broken_rules(M.rules, Situation("2.33.1", driver="2.30.2.0", runtime="2.35.33.0"))
    assert [(r.id, r.severity) for r in rules] == [
        ("runtime.runtime-2.35-features-need-driver-2.31", "warn")]


def test_an_unknown_fact_never_breaks_a_rule():
    assert broken_rules(M.rules, Situation("2.33.1")) == []
    assert broken_rules(M.rules, Situation("2.33.1", runtime="2.32.31.0")) == []


def test_support_windows():
    ids = lambda **kw: [r.id for r in broken_rules(M.rules, Situation(**kw), ("support",))]  # noqa: E731
    assert ids(release="2.34.0", flavour="xla", chip="trn2") == [
        "support.xla-training-ended-2.30", "support.xla-inference-trn2-trn3-ended-2.34"]
    # XLA inference on Trn2 is supported through 2.33: only the training note applies.
    assert ids(release="2.33.0", flavour="xla", chip="trn2") == ["support.xla-training-ended-2.30"]
    assert ids(release="2.30.0", python="3.10") == ["support.python-3.10-ended-2.30"]
    assert ids(release="2.29.0", python="3.10") == []
    assert ids(release="2.29.0", torch="2.8") == ["support.pytorch-2.7-2.8-ended-2.29"]
    assert ids(release="2.34.0", chip="trn3", packages=frozenset({"neuronx-distributed-inference"})) \
        == ["support.nxd-inference-trn2-trn3-ended-2.34"]
    assert ids(release="2.34.0", chip="inf2", packages=frozenset({"neuronx-distributed-inference"})) == []


def test_lifecycle_check_names_the_rule_and_source():
    env = python_env("3.10.12", {"torch": "2.9.0", "torch-neuronx": "2.9.0.2.15.32035"})
    out = check_lifecycle(facts(env=env, release="2.30.0", hardware=machine("trn1")))
    assert out.status == "fail" and "Python 3.10 is no longer supported" in out.message
    assert "announcement-python-3-10-eol.html (read 2026-12-01)" in out.message
    clean = python_env("3.12.3", {"torch": "2.14.0+cpu", "torch-neuronx": "2.14.3.0"})
    assert check_lifecycle(facts(env=clean, release="2.33.1", hardware=machine("trn2"))).status == "pass"


def test_staleness_is_an_informational_line_after_45_days():
    assert stale_note("2026-12-01", dt.date(2027, 1, 15)) is None  # 45 days
    note = stale_note("2026-12-01", dt.date(2027, 1, 16))
    assert note is not None and "46 days ago" in note and "neuronctl releases update" in note
    assert stale_note(None, dt.date(2030, 1, 1)) is None


def test_doctor_reports_stale_data_as_a_note_not_a_warning(cli, tmp_path):
    data = M.to_json()
    data["compiled"] = "2025-01-01"
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    r = cli("--manifest", str(path), "doctor", "--level", "1", "--only", "python.version", "--json")
    doc = json.loads(r.out)
    assert any("neuronctl releases update" in n for n in doc["environment"]["notes"])
    assert doc["summary"]["warnings"] == 0 or all(
        "releases update" not in c["message"] for c in doc["checks"])



def test_doctor_text_prints_the_stale_data_note_after_the_verdict(cli, tmp_path):
    data = M.to_json()
    data["compiled"] = "2025-01-01"
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    r = cli("--manifest", str(path), "doctor", "--level", "1", "--only", "python.version")
    lines = r.out.splitlines()
    notes = [i for i, line in enumerate(lines) if line.startswith("note: ")]
    assert notes and any("neuronctl releases update" in lines[i] for i in notes), r.out
    verdict = next(i for i, line in enumerate(lines) if line.startswith(("pass:", "warn:", "fail:")))
    assert min(notes) > verdict
    quiet = cli("--manifest", str(path), "doctor", "-q", "--level", "1", "--only", "python.version")
    assert "note: " not in quiet.out

@pytest.mark.parametrize(("field", "value", "message"), [
    ("kind", "magic", "kind: expected one of"),
    ("source", "nowhere", "source: unknown source"),
    ("releases", ">=2.x", "releases: '>=2.x' is not a version range"),
    ("when", {"driver": "==2.29.* rm -rf"}, "is not a version range"),
    ("when", {"colour": ["red"]}, "unknown condition"),
    ("when", {"chips": "trn2"}, "expected a list of strings"),
    ("severity", "panic", "expected fail or warn"),
])
def test_a_malformed_rule_is_refused(field, value, message):
    from neuronctl.errors import InputError

    data = M.to_json()
    data["rules"][0][field] = value
    with pytest.raises(InputError, match=message):
        parse_manifest(data, "m.json")


def test_lock_and_install_refuse_what_a_rule_forbids_unless_allowed():
    from neuronctl.errors import InputError
    from neuronctl.release.stack_rules import check_stack_rules

    rel = M.get("2.33.1")
    fw = rel.default_framework()
    with pytest.raises(InputError, match=r"install is not supported by Neuron 2.33.1: The standalone "
                                         r"wheels .* \[os.torchneuron-wheels-ubuntu-26.04; source: https"):
        check_stack_rules(rel, fw, ["3.12"], chip="trn2", os="ubuntu 24.04", what="install")
    notes = check_stack_rules(rel, fw, ["3.12"], chip="trn2", os="ubuntu 24.04",
                              allow=True, what="install")
    assert notes and notes[0].startswith("allowed (--allow-unsupported): The standalone wheels")
    assert check_stack_rules(rel, fw, ["3.12"], chip="trn2", os="ubuntu 26.04") == []
    old = M.get("2.31.0")
    notes = check_stack_rules(old, old.default_framework(), ["3.11"], what="lock")
    assert len(notes) == 1 and "no longer supported for training" in notes[0]  # warn: a note
    new = M.get("2.34.0")
    notes = check_stack_rules(new, new.default_framework(), ["3.12"], what="lock")
    assert notes == ["Neuron 2.34.0 does not publish the pins of neuronx-cc, nki, libneuronxla: "
                     "they are resolved from the index within AWS's install recipe "
                     "(neuronx-cc==2.*, nki unpinned, libneuronxla==3.*)"]


def test_coherence_says_a_pin_is_not_published_and_judges_by_the_recipe():
    from neuronctl.ops.doctor.checks_packages import check_coherence

    env = python_env("3.12.3", {"torch": "2.14.0+cpu", "torch-neuronx": "2.14.3.1",
                                "neuronx-cc": "2.29.1.0", "nki": "0.8.0"})
    out = check_coherence(facts(env=env, release="2.34.0"))
    assert out.status == "pass", out
    assert any("neuronx-cc 2.29.1.0: Neuron 2.34.0 does not publish its pin; within AWS's recipe, "
               "neuronx-cc==2.*" in d for d in out.details)
    assert any("nki (unpinned)" in d for d in out.details)
    old = python_env("3.12.3", {"torch": "2.14.0+cpu", "torch-neuronx": "2.14.3.1",
                                "neuronx-cc": "1.24.0.0"})
    out = check_coherence(facts(env=old, release="2.34.0"))
    assert out.status == "warn" and "outside AWS's recipe for Neuron 2.34.0" in out.message


def test_install_refuses_a_forbidden_stack_before_reaching_any_index(cli, tmp_path):
    """The preflight runs before the source: a fresh resolution the OS rule forbids is bad input
    naming the rule (exit 2), not a wait on the network (the indexes here are closed ports: were
    they reached first, the error would be that they are unreachable, exit 1)."""
    from support.loopback import closed_ports

    root = build_host(tmp_path / "u24", "trn2", os_release=UBUNTU_24_04)
    dead = [f"{name}=http://127.0.0.1:{port}/simple"
            for name, port in zip(("pypi", "pytorch-cpu", "neuron"), closed_ports(3), strict=True)]
    args = ["install", "--venv", str(tmp_path / "v"), "--venv-python", "3.12", "--dry-run",
            "--sysroot", str(root), *(f for d in dead for f in ("--index", d))]
    r = cli(*args)
    assert r.code == 2, r.err
    assert "Ubuntu 26.04 only" in r.err and "unreachable" not in r.err
    assert not (tmp_path / "v").exists()
    # --allow-unsupported proceeds past the rule, to the network, which names every dead index.
    r = cli(*args, "--allow-unsupported")
    assert r.code == 1 and "3 of 3 hosts unreachable" in r.err, r.err
