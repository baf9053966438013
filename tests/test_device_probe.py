import json
import os
import sys
import time

import pytest
from wheels import make_venv, site_packages

from neuronctl.probes.device import run_device_probe

PLUGIN = '''
import types
import torch


def _autoload():
    torch.utils.rename_privateuse1_backend("neuron")
    mod = types.ModuleType("torch_neuron_fake")
    mod.is_available = lambda: True
    mod.device_count = lambda: 2
    mod.current_device = lambda: 0
    torch._register_device_module("neuron", mod)
'''


@pytest.fixture(scope="module")
def neuron_plugin(tmp_path_factory):
    """A tiny PrivateUse1 plugin named "neuron", loaded by torch's backend autoload like the real one."""
    root = tmp_path_factory.mktemp("plugin")
    (root / "fake_neuron").mkdir()
    (root / "fake_neuron" / "__init__.py").write_text(PLUGIN)
    info = root / "fake_neuron-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-neuron\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[torch.backends]\nfake_neuron = fake_neuron:_autoload\n")
    return root


def test_real_torch_cpu_tiers_pass():
    report = run_device_probe(sys.executable, "cpu", timeout=120)
    assert report.ok, report.detail
    assert report.torch.startswith("2.13.0")
    assert [t.tier for t in report.tiers] == ["import", "backend", "device_count", "allocate", "op",
                                              "autograd", "compile"]
    assert [t.status for t in report.tiers][:6] == ["pass"] * 6
    assert report.tiers[-1].status == "skip"


def test_auto_without_neuron_or_cuda_falls_back_to_cpu():
    report = run_device_probe(sys.executable, "auto", timeout=120)
    assert report.ok and report.device == "cpu"


def test_cuda_and_neuron_requested_on_a_cpu_build_fail_at_backend():
    cuda = run_device_probe(sys.executable, "cuda", timeout=120)
    assert cuda.outcome == "failed" and cuda.failed_tier.tier == "backend"
    assert "CUDA not available" in cuda.detail
    neuron = run_device_probe(sys.executable, "neuron", timeout=120)
    assert neuron.outcome == "failed" and "no 'neuron' backend registered" in neuron.detail


def test_privateuse1_plugin_detected_and_failing_allocation_reported(neuron_plugin):
    env = dict(os.environ, PYTHONPATH=str(neuron_plugin))
    report = run_device_probe(sys.executable, "auto", timeout=120, env=env)
    assert report.device == "neuron"
    statuses = {t.tier: t.status for t in report.tiers}
    assert statuses == {"import": "pass", "backend": "pass", "device_count": "pass",
                        "allocate": "fail"}
    assert "privateuse1 backend 'neuron'" in report.tiers[1].detail
    assert "2 neuron device(s)" in report.tiers[2].detail
    assert report.failed_tier.detail.startswith("NotImplementedError: Could not run")
    # autoload switched off: the probe must not find the backend
    off = run_device_probe(sys.executable, "neuron", timeout=120,
                           env=dict(env, TORCH_DEVICE_BACKEND_AUTOLOAD="0"))
    assert off.failed_tier.tier == "backend"


def _fake_torch_venv(tmp_path, body):
    py = make_venv(tmp_path / "venv")
    pkg = site_packages(tmp_path / "venv") / "torch"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(body)
    return py


def test_hang_is_a_timeout_result(tmp_path):
    py = _fake_torch_venv(tmp_path, "import time\ntime.sleep(600)\n")
    start = time.monotonic()
    report = run_device_probe(str(py), "auto", timeout=3)
    assert time.monotonic() - start < 20
    assert report.outcome == "timeout"
    assert report.tiers[-1].tier == "import" and "timed out after 3s" in report.tiers[-1].detail


def test_abort_is_a_crash_result(tmp_path):
    py = _fake_torch_venv(tmp_path, "import os\nos.abort()\n")
    report = run_device_probe(str(py), "auto", timeout=60)
    assert report.outcome == "crashed"
    assert "SIGABRT" in report.detail and "tier import" in report.detail


def test_missing_torch(tmp_path):
    py = make_venv(tmp_path / "venv")
    report = run_device_probe(str(py), "auto", timeout=60)
    assert report.outcome == "no-torch"


def test_probe_command_json_and_exit_codes(cli, tmp_path):
    ok = cli("probe", "--device", "cpu", "--json")
    assert ok.code == 0
    data = json.loads(ok.out)
    assert data["schema"] == 1 and data["probe"]["ok"] is True
    py = _fake_torch_venv(tmp_path, "import os\nos.abort()\n")
    crashed = cli("probe", "--python", str(py))
    assert crashed.code == 1 and "crashed" in crashed.out
    assert cli("probe", "--python", str(tmp_path / "nope")).code == 2
    assert cli("probe", "--timeout", "-1").code == 2


@pytest.mark.slow
def test_compile_tier_is_opt_in_and_runs_inductor_on_cpu():
    report = run_device_probe(sys.executable, "cpu", timeout=300, compile_tier=True)
    assert report.ok, report.detail
    compiled = report.tiers[-1]
    assert compiled.tier == "compile" and compiled.status == "pass"
    assert "torch.compile(backend='inductor') matches eager" in compiled.detail
