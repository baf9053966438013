"""lock and install apply the documented rules (exit 2 naming the rule and its source;
--allow-unsupported proceeds with the rule named) and say which pins a release does not publish;
the lock records the pins it resolved from the index."""

from __future__ import annotations

import json
from pathlib import Path

from support.sysroots import UBUNTU_24_04, UBUNTU_26_04, build_host
from support.universe import running

from neuronctl.release.manifest import load_bundled_manifest
from neuronctl.tomlfile import read_toml


def test_lock_2_34_says_and_records_the_pins_resolved_from_the_index(cli, wheels_2_34):
    with running(wheels_2_34) as uni:
        r = cli("lock", *uni.index_flags(), "--release", "2.34.0", "--python", "3.12")
        again = cli("lock", *uni.index_flags(), "--release", "2.34.0", "--python", "3.12", "--check")
    assert r.code == 0, r.err
    assert ("note: Neuron 2.34.0 does not publish the pins of neuronx-cc, nki, libneuronxla: they "
            "are resolved from the index within AWS's install recipe (neuronx-cc==2.*, nki "
            "unpinned, libneuronxla==3.*)") in r.err
    tool = read_toml(Path("pylock.toml"), "lock")["tool"]["neuronctl"]
    recorded = tool["resolved-from-index"]
    assert set(recorded) == {"neuronx-cc", "nki"}
    assert recorded["neuronx-cc"] == ("pin not published by Neuron 2.34.0; resolved from the index "
                                      "within neuronx-cc==2.*")
    assert again.code == 0, again.out + again.err  # --check agrees with what it wrote


def _forbidding_manifest(tmp_path: Path) -> Path:
    """The bundled data plus a rule that forbids Python 3.12 for 2.33.1 (a rule the bundled data
    has no occasion to break on a lock: its own Python ranges already keep such stacks out)."""
    data = load_bundled_manifest().to_json()
    data["rules"].append({"id": "support.test-python-3.12", "kind": "support",
                          "releases": "==2.33.1", "when": {"python": ["3.12"]},
                          "says": "Python 3.12 is not supported here (a test rule)",
                          "source": "rn-2.33.1"})
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data))
    return path


def test_lock_refuses_a_stack_a_rule_forbids_unless_allowed(cli, uni, tmp_path):
    m = _forbidding_manifest(tmp_path)
    r = cli("--manifest", str(m), "lock", *uni.index_flags(), "--python", "3.12")
    assert r.code == 2
    assert "lock is not supported by Neuron 2.33.1: Python 3.12 is not supported here" in r.err
    assert "support.test-python-3.12; source: https://awsdocs-neuron" in r.err
    assert "--allow-unsupported" in r.err and not Path("pylock.toml").exists()
    r = cli("--manifest", str(m), "lock", *uni.index_flags(), "--python", "3.12",
            "--allow-unsupported")
    assert r.code == 0, r.err
    assert "note: allowed (--allow-unsupported): Python 3.12 is not supported here" in r.err


def test_install_on_ubuntu_24_04_refuses_the_2_33_wheels_unless_allowed(cli, uni, tmp_path):
    root = build_host(tmp_path / "u24", "trn2", os_release=UBUNTU_24_04)
    args = ["install", *uni.index_flags(), "--venv", str(tmp_path / "v"), "--venv-python", "3.12",
            "--dry-run", "--sysroot", str(root)]
    r = cli(*args)
    assert r.code == 2, r.out + r.err
    assert "install is not supported by Neuron 2.33.1: The standalone wheels in this release " \
           "support Ubuntu 26.04 only" in r.err
    assert "quickstart-torch-neuron.html (read 2026-12-01)" in r.err
    assert not (tmp_path / "v").exists()
    r = cli(*args, "--allow-unsupported")
    assert r.code == 0, r.out + r.err
    assert "allowed (--allow-unsupported): The standalone wheels" in r.err
    ok = build_host(tmp_path / "u26", "trn2", os_release=UBUNTU_26_04)
    r = cli("install", *uni.index_flags(), "--venv", str(tmp_path / "w"), "--venv-python", "3.12",
            "--dry-run", "--sysroot", str(ok))
    assert r.code == 0, r.out + r.err
    assert "Ubuntu 26.04 only" not in r.err
