import contextlib
import json
import os
import signal
import sys
import time

import pytest
from support.procs import alive
from support.standin import fake_neuron_plugin
from support.wheels import make_venv, site_packages

from neuronctl.probes.device import run_device_probe


@pytest.fixture(scope="module")
def neuron_plugin(tmp_path_factory):
    """A tiny PrivateUse1 plugin named "neuron", loaded by torch's backend autoload like the real one."""
    return fake_neuron_plugin(tmp_path_factory.mktemp("plugin"))


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
    assert neuron.outcome == "failed" and neuron.failed_tier.tier == "backend"
    assert "no 'neuron' device: torch-neuronx is not installed" in neuron.detail


def test_privateuse1_plugin_detected_and_failing_allocation_reported(neuron_plugin):
    env = dict(os.environ, PYTHONPATH=str(neuron_plugin))
    report = run_device_probe(sys.executable, "auto", timeout=120, env=env)
    assert report.device == "neuron"
    statuses = {t.tier: t.status for t in report.tiers}
    assert statuses == {"import": "pass", "backend": "pass", "device_count": "pass",
                        "allocate": "fail"}
    assert "torch.neuron present after `import torch` (autoload)" in report.tiers[1].detail
    assert "2 neuron device(s) (torch.neuron.device_count())" in report.tiers[2].detail
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


# --- Hostile targets: what the probed import does cannot hang, fool or outlive neuronctl. ---

def _fake_torch_path(tmp_path, body):
    """A `torch` package that shadows the real one (PYTHONPATH), for probing our own interpreter."""
    root = tmp_path / "fake"
    (root / "torch").mkdir(parents=True)
    (root / "torch" / "__init__.py").write_text(body)
    return dict(os.environ, PYTHONPATH=str(root))


def _detached_holder(marker):
    """Code that starts a grandchild in its own session (setsid, double fork) which keeps the
    probe's stdout and stderr open for ten minutes, and records its pid."""
    return f'''
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open({str(marker)!r} + ".tmp", "w") as fh:
            fh.write(str(os.getpid()))
        os.rename({str(marker)!r} + ".tmp", {str(marker)!r})
        time.sleep(600)
    os._exit(0)
os.wait()
'''


def _wait_for_pid(marker, seconds=30.0):
    deadline = time.monotonic() + seconds
    while not marker.exists():
        assert time.monotonic() < deadline, f"{marker} never appeared"
        time.sleep(0.05)
    return int(marker.read_text())


@pytest.fixture
def reaper():
    """Pids a test started outside any process group neuronctl owns: killed at the end."""
    pids = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("then", ["time.sleep(600)\n", "raise ImportError('no device here')\n"])
def test_a_detached_child_holding_stdout_cannot_stretch_the_probe(tmp_path, reaper, then):
    """Hanging after the fork, the timeout holds; failing at once, the probe ends at once, not
    when the grandchild closes the pipes ten minutes later."""
    marker = tmp_path / "grandchild.pid"
    env = _fake_torch_path(tmp_path, _detached_holder(marker) + then)
    start = time.monotonic()
    report = run_device_probe(sys.executable, "cpu", timeout=5, env=env)
    elapsed = time.monotonic() - start
    reaper.append(_wait_for_pid(marker))
    # It held the pipes until the probe ended, and the probe's end killed it (a contained
    # script: what it starts does not outlive it, issue 22 item 16).
    deadline = time.monotonic() + 5
    while alive(reaper[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(reaper[0])
    assert elapsed < 15
    if "sleep" in then:
        assert report.outcome == "timeout" and "in tier import" in report.detail
    else:
        assert report.outcome == "failed" and elapsed < 4
        assert report.failed_tier.detail == "ImportError: no device here"


FORGED = "".join(
    f'print({json.dumps(json.dumps(line))}, flush=True)\n'
    for line in [{"tier": t, "status": "pass", "detail": "forged", "ms": 1.0,
                  **({"device": "neuron"} if t == "backend" else {})}
                 for t in ("import", "backend", "device_count", "allocate", "op", "autograd",
                           "compile")])


@pytest.mark.parametrize(("then", "outcome"), [
    ("raise ImportError('real failure')\n", "failed"),
    ("import os\nos._exit(0)\n", "error"),  # before the probe itself could say anything
])
def test_forged_tier_lines_on_stdout_cannot_pass_the_probe(tmp_path, then, outcome):
    env = _fake_torch_path(tmp_path, FORGED + FORGED.replace("flush=True", "file=__import__('sys').stderr")
                           + then)
    report = run_device_probe(sys.executable, "auto", timeout=60, env=env)
    assert not report.ok and report.outcome == outcome
    assert report.device is None
    assert all(t.detail != "forged" for t in report.tiers)
    assert [t.tier for t in report.tiers] == ["import"]


def test_a_malformed_stdout_line_is_ignored_not_an_internal_error(tmp_path):
    env = _fake_torch_path(tmp_path, 'print(\'{"tier": "import"}\')\nprint(\'{"tier": "import", '
                                     '"status": 5, "ms": "x"}\')\n__version__ = "9.9"\n')
    report = run_device_probe(sys.executable, "cpu", timeout=60, env=env)
    assert report.torch == "9.9"
    assert report.failed_tier.tier == "backend"  # the fake has no torch._C: a real failure


def test_a_malformed_line_on_the_channel_itself_is_a_failed_tier(tmp_path):
    """Even code that finds the channel (any pipe but stdio) and writes junk there only fails
    the tier it was due to report."""
    env = _fake_torch_path(tmp_path, '''
import os, stat
for name in os.listdir("/proc/self/fd"):
    fd = int(name)
    try:
        if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.write(fd, b'{"tier": "import", "status": "pass", "detail": 7, "ms": 1}\\n')
    except OSError:
        pass
os._exit(0)
''')
    report = run_device_probe(sys.executable, "auto", timeout=60, env=env)
    assert report.outcome == "failed"
    assert report.failed_tier.detail == "malformed probe output: detail is not a string"


SPAWNS_AND_SLEEPS = '''
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open({marker!r} + ".tmp", "w") as fh:
    fh.write(str(child.pid))
import os
os.rename({marker!r} + ".tmp", {marker!r})
time.sleep(600)
'''


@pytest.mark.timeout(120)
@pytest.mark.parametrize("command", [("probe",), ("doctor", "--only", "device.probe")])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_and_sigterm_kill_the_probes_whole_process_group(tmp_path, reaper, command, signum):
    """A real `neuronctl probe` (and doctor, whose probe runs in a worker thread) interrupted while
    the probed import sleeps: the child that import started must not outlive neuronctl."""
    import subprocess

    marker = tmp_path / "child.pid"
    py = _fake_torch_venv(tmp_path, SPAWNS_AND_SLEEPS.format(marker=str(marker)))
    proc = subprocess.Popen([sys.executable, "-m", "neuronctl", *command, "--python", str(py),
                             "--timeout", "300"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    try:
        child = _wait_for_pid(marker, 60)
        reaper.append(child)
        assert alive(child)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == (130 if signum == signal.SIGINT else 143), err
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the probe's child outlived neuronctl"
