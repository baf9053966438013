"""Issue 32: the device verdict, faithful to TorchNeuron's documented behaviour, proven against
the stand-in `neuron` backend (tests/support/standin_neuron) in a real venv: the unmodified probe,
`neuronctl doctor --level 2/3` and `neuronctl smoke --device neuron` run as a user runs them.

Each run imports torch in the target (seconds), so each test groups what one run shows. The
switches reach the target through the environment, as a user's variables would.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.standin import torch_venv
from support.wheels import build_wheel

from neuronctl.probes.device import ProbeFacts, ProbeReport, TierResult

REPO = Path(__file__).resolve().parents[2]


def doctor(cli, python, *args):
    result = cli("doctor", "--python", str(python), "--only", "device.probe", "--json", *args)
    doc = json.loads(result.out)
    (check,) = doc["checks"]
    return result.code, check


def probe_json(cli, python, *args):
    result = cli("probe", "--python", str(python), "--json", *args)
    return result.code, json.loads(result.out)["probe"]


# --- items 1, 7 and 8: the documented calls, the compile tier forced off eager, the tensors ----

def test_level_3_probe_decides_from_torch_neuron_and_checks_where_tensors_are(cli, standin_python,
                                                                             monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", "0")
    code, check = doctor(cli, standin_python, "--level", "3")
    # item 7: it passes (the stand-in compiles), and the user's eager fallback is named
    assert code == 0 and check["status"] == "warn", check
    assert "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0 in this environment" in check["message"]
    details = "\n".join(check["details"])
    # item 1: torch.neuron (autoloaded), its device_count(), not the PrivateUse1 name
    assert "backend: pass (torch.neuron present after `import torch` (autoload)" in details
    assert "device_count: pass (2 neuron device(s) (torch.neuron.device_count())" in details
    # item 8: the tensor is on the device, and the op tier says what it proves
    assert "allocate: pass (allocated (4, 4) on neuron:0, x.is_neuron True" in details
    assert "this proves the result, not where each op ran" in details
    assert ("compile: pass (torch.compile(backend='neuron') matches eager "
            "(TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=1 for the probe)") in details
    assert ("TORCH_DEVICE_BACKEND_AUTOLOAD unset; `import torch` alone created torch.neuron: yes; "
            "PrivateUse1 backend: neuron; torch.accelerator: neuron; torch-neuronx: 2.13.3.0") in details


def test_a_failing_compile_fails_the_tier_even_where_the_user_allows_eager_fallback(
        cli, standin_python, monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", "0")
    monkeypatch.setenv("NEURON_STANDIN_COMPILE_FAIL", "1")
    code, check = doctor(cli, standin_python, "--level", "3")
    assert code == 1 and check["status"] == "fail"
    assert check["message"].startswith("tier compile failed: torch.compile(backend='neuron') failed: "
                                       "CompileError: neuron stand-in: neuronx-cc failed")
    assert ("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=0 in the environment (the probe ran with 1)"
            in check["details"])


def test_smoke_compile_cannot_time_eager_as_compiled(cli, standin_python, monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", "0")
    monkeypatch.setenv("NEURON_STANDIN_COMPILE_FAIL", "1")
    result = cli("smoke", "--python", str(standin_python), "--device", "neuron", "--compile",
                 "--warmup", "1", "--steps", "1", "--json")
    smoke = json.loads(result.out)["smoke"]
    assert result.code == 1 and smoke["stage"] == "warmup" and smoke["fallback_execution"] == "0"
    assert smoke["detail"].startswith("BackendCompilerFailed: CompileError: neuron stand-in: "
                                      "neuronx-cc failed to compile the graph")


def test_no_device_visible_is_decided_by_torch_neuron_is_available(cli, standin_python, monkeypatch):
    """The PrivateUse1 name is "neuron" all the same: only the documented calls see no device."""
    monkeypatch.setenv("NEURON_STANDIN_DEVICE_COUNT", "0")
    code, check = doctor(cli, standin_python)
    assert code == 1
    assert check["message"] == ("tier device_count failed: torch.neuron.is_available() is False, "
                                "device_count() is 0: torch_neuronx sees no Neuron device (AWS's "
                                "first checks: `neuron-ls` lists the devices; the neuron driver is "
                                "loaded)")
    assert check["fix"] == "neuron-ls"
    # smoke --device neuron says the same, in its own words
    result = cli("smoke", "--python", str(standin_python), "--device", "neuron", "--json",
                 "--warmup", "1", "--steps", "1")
    smoke = json.loads(result.out)["smoke"]
    assert result.code == 1 and smoke["stage"] == "device" and smoke["verdict"] == "failed"
    assert "no Neuron device: torch.neuron.is_available() is False" in smoke["detail"]


# --- item 2: an autoload that does not load ----------------------------------------------------

def test_a_backend_that_needs_an_explicit_import_fails_while_autoload_is_on(cli, standin_python,
                                                                           monkeypatch):
    monkeypatch.setenv("NEURON_STANDIN_EXPLICIT_IMPORT", "1")
    code, check = doctor(cli, standin_python)
    assert code == 1 and check["status"] == "fail"
    assert check["message"].startswith(
        "tier backend failed: the neuron device registers only on an explicit `import torch_neuronx`: "
        "with TORCH_DEVICE_BACKEND_AUTOLOAD unset (autoload on), `import torch` alone should load it")
    assert "`import torch; x.to('neuron')` fails" in check["message"]
    assert " install --release 2.33.1 " in check["fix"]  # the doctor's one install fix
    result = cli("smoke", "--python", str(standin_python), "--device", "neuron", "--json",
                 "--warmup", "1", "--steps", "1")
    smoke = json.loads(result.out)["smoke"]
    assert result.code == 1 and smoke["stage"] == "device"
    assert smoke["detail"].startswith("RuntimeError: torch_neuronx is installed but `import torch` "
                                      "did not create torch.neuron (autoload on)")
    # the user turned autoload off: it works after the import, and a warning names the variable
    monkeypatch.setenv("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
    code, check = doctor(cli, standin_python)
    assert code == 0 and check["status"] == "warn"
    assert ("TORCH_DEVICE_BACKEND_AUTOLOAD=0: torch does not autoload torch_neuronx, so code must "
            "`import torch_neuronx` before using the neuron device") in check["message"]


# --- item 3: an autoload crash is torch_neuronx's -------------------------------------------------

def test_an_autoload_crash_names_torch_neuronx_and_the_isolating_step(cli, standin_python,
                                                                     monkeypatch):
    monkeypatch.setenv("NEURON_STANDIN_AUTOLOAD_FAIL", "1")
    code, check = doctor(cli, standin_python)
    assert code == 1
    assert check["message"].startswith(
        "tier import failed: torch_neuronx raised while torch autoloaded it (RuntimeError: neuron "
        "stand-in: the Neuron runtime could not be initialised")
    assert "the failure is torch_neuronx's, not torch's" in check["message"]
    assert "torch does not import" not in check["message"]
    fix = check["fix"]
    assert fix == f"env TORCH_DEVICE_BACKEND_AUTOLOAD=0 {standin_python} -c 'import torch, torch_neuronx'"
    # the fix, run as given, shows torch_neuronx's own error, not torch's
    shown = subprocess.run(fix, shell=True, capture_output=True, text=True, timeout=300, check=False)
    assert shown.returncode == 1
    assert shown.stderr.strip().splitlines()[-1] == (
        "RuntimeError: neuron stand-in: the Neuron runtime could not be initialised "
        "(NEURON_STANDIN_AUTOLOAD_FAIL=1)")


# --- item 4: another PrivateUse1 backend first --------------------------------------------------

def test_a_competing_backend_is_named_in_the_summary_and_the_fix(cli, standin, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(standin.rival))
    code, check = doctor(cli, standin.python)
    assert code == 1
    assert check["message"].startswith(
        "tier backend failed: another PrivateUse1 backend, 'rival', was registered first "
        "(torch.backends entry points: rival_backend (rival-backend)): torch_neuronx leaves the "
        "device registration to it and torch.neuron is not created")
    assert check["fix"] == f"{standin.python} -m pip uninstall -y rival-backend"


# --- item 5: torch.accelerator is another device (no CPU build of torch can show it) -----------

def _script(name):
    spec = importlib.util.spec_from_file_location(f"under_test_{name}",
                                                  REPO / "probes" / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NEURON_FACTS = {"want": "auto", "registered": True, "autoloaded": True, "autoload": None,
                "installed": "2.14.3.0", "import_error": None, "privateuse1": "neuron",
                "rival_entry_points": [], "accelerator": "neuron", "cuda": False}


def test_an_accelerator_other_than_neuron_is_a_warning_at_the_unit_level():
    """A CPU build of torch resolves torch.accelerator to a renamed PrivateUse1 backend whatever
    the backend does, so the CUDA-build case is the verdict function's alone."""
    verdict = _script("device_probe").backend_verdict
    assert verdict(NEURON_FACTS) == ("pass", "torch.neuron present after `import torch` (autoload), "
                                             "torch.accelerator: neuron", "neuron", [])
    status, _, device, warnings = verdict(dict(NEURON_FACTS, accelerator="cuda", cuda=True))
    assert (status, device) == ("pass", "neuron")
    assert warnings == ["torch.accelerator resolves to cuda, not neuron (AWS: it resolves to neuron "
                        "only when no other accelerator is present): code written against "
                        "torch.accelerator picks cuda, not the Neuron device"]


def test_the_doctor_turns_a_probe_warning_into_a_warn(tmp_path):
    from support.doctor_facts import facts

    from neuronctl.ops.doctor.checks_hardware import check_device

    tiers = tuple(TierResult(t, "pass", "fine", 1.0) for t in ("import", "backend", "device_count"))
    report = ProbeReport("auto", "neuron", "2.14.0", tiers, "ok", "all tiers passed on neuron", 5.0,
                         ProbeFacts(accelerator="cuda", privateuse1="neuron"),
                         ("torch.accelerator resolves to cuda, not neuron",))
    outcome = check_device(facts(probe=report))
    assert outcome.status == "warn"
    assert outcome.message.endswith("; torch.accelerator resolves to cuda, not neuron")
    assert "warning: torch.accelerator resolves to cuda, not neuron" in outcome.details


# --- item 6: smoke measures the device under test -----------------------------------------------

def _fake_torch(accelerator, **module):
    calls = []

    def record(owner, name, value):
        def call():
            calls.append(f"{owner}.{name}")
            return value
        return call

    neuron = SimpleNamespace(**{k: record("neuron", k, v) for k, v in module.items()})
    acc = SimpleNamespace(current_accelerator=lambda: SimpleNamespace(type=accelerator),
                          synchronize=record("accelerator", "synchronize", None),
                          max_memory_allocated=record("accelerator", "max_memory_allocated", 999),
                          reset_peak_memory_stats=record("accelerator", "reset", None))
    return SimpleNamespace(neuron=neuron, accelerator=acc), calls


def test_smoke_uses_torch_accelerator_only_when_it_is_the_device_under_test():
    smoke = _script("smoke_run")
    run = smoke.SmokeRun(lambda *a, **k: None, {"device": "neuron"})
    run.device = "neuron"
    run.torch, calls = _fake_torch("cuda", max_memory_allocated=123, synchronize=None)
    assert run.peak_memory() == 123
    run.synchronize(None)
    assert calls == ["neuron.max_memory_allocated", "neuron.synchronize"]
    # the accelerator is neuron: it may answer what torch.neuron does not offer
    run.torch, calls = _fake_torch("neuron")
    assert run.peak_memory() == 999 and calls == ["accelerator.max_memory_allocated"]
    # another accelerator and no torch.neuron function: no number rather than the wrong device's
    run.torch, calls = _fake_torch("cuda")
    assert run.peak_memory() is None and calls == []


@pytest.mark.slow
def test_smoke_on_the_neuron_device_trains_and_reports_its_memory(cli, standin_python):
    result = cli("smoke", "--python", str(standin_python), "--device", "neuron", "--train",
                 "--warmup", "1", "--steps", "2", "--json")
    smoke = json.loads(result.out)["smoke"]
    assert result.code == 0, smoke
    assert smoke["device"] == "neuron" and smoke["verdict"] == "device-ok"
    assert smoke["comparisons"]["outputs"]["ok"] and smoke["comparisons"]["gradients"]["ok"]
    assert smoke["peak_memory_bytes"] > 0  # torch.neuron.max_memory_allocated(), the stand-in's


# --- item 9: legacy and placeholder builds ------------------------------------------------------

@pytest.fixture(scope="module")
def other_builds(tmp_path_factory):
    """Venvs seeing our torch, one with a legacy XLA torch-neuronx (imports, creates no
    torch.neuron), one with the PyPI placeholder (its import raises WRONG PACKAGE)."""
    root = tmp_path_factory.mktemp("builds")
    legacy = build_wheel(root / "w1", "torch-neuronx", "2.9.0.2.15.32035", files={
        "torch_neuronx/__init__.py": '"""Test double: a legacy XLA build (no neuron device)."""\n'})
    placeholder = build_wheel(root / "w2", "torch-neuronx", "1.0", files={
        "torch_neuronx/__init__.py": 'raise Exception("WRONG PACKAGE. Please install the package '
                                     'from Neuron Repository - pip.repos.neuron.amazonaws.com")\n'})
    return {"legacy": torch_venv(root / "legacy", [legacy]),
            "placeholder": torch_venv(root / "placeholder", [placeholder])}


@pytest.mark.parametrize(("build", "named"), [
    ("legacy", "tier backend failed: legacy XLA build 2.9.0.2.15.32035 of torch-neuronx "
               "(PyTorch/XLA for torch 2.9.0: its device is 'xla', it creates no torch.neuron): "
               "torch-neuronx 2.9.0.2.15.32035 is installed but registers no 'neuron' device"),
    ("placeholder", "tier backend failed: PyPI placeholder torch-neuronx 1.0, not Neuron's package: "
                    "torch-neuronx 1.0 is the PyPI placeholder"),
])
def test_legacy_and_placeholder_builds_are_named(cli, other_builds, build, named):
    code, report = probe_json(cli, other_builds[build], "--device", "auto")
    assert code == 1 and report["detail"].startswith(named), report["detail"]
    assert report["verdict"] == "failed"


# --- item 10: no device, no device verdict ------------------------------------------------------

def test_a_cpu_run_is_labelled_a_cpu_run_and_device_neuron_without_one_fails(cli):
    """neuronctl's own venv: torch 2.13 CPU and no torch-neuronx, as on a laptop."""
    result = cli("smoke", "--python", sys.executable, "--warmup", "1", "--steps", "1")
    assert result.code == 0
    last = result.out.strip().splitlines()[-1]
    assert last == ("warn: built-in reference model ran on cpu and matches its CPU reference: a CPU "
                    "run, which checks torch and the model, not a device (no Neuron or CUDA device "
                    "found)")
    result = cli("smoke", "--python", sys.executable, "--warmup", "1", "--steps", "1", "--json")
    smoke = json.loads(result.out)["smoke"]
    assert (smoke["device"], smoke["verdict"], smoke["requested_device"]) == ("cpu", "cpu-run", "auto")
    failed = cli("smoke", "--python", sys.executable, "--device", "neuron", "--json",
                 "--warmup", "1", "--steps", "1")
    smoke = json.loads(failed.out)["smoke"]
    assert failed.code == 1 and smoke["verdict"] == "failed" and smoke["stage"] == "device"
    assert smoke["detail"].startswith(f"RuntimeError: no Neuron device: torch-neuronx is not "
                                      f"installed for {sys.executable}")
    text = cli("probe", "--python", sys.executable)
    assert text.code == 0 and text.out.strip().splitlines()[-1] == (
        "warn: all tiers passed on cpu: a CPU run, which checks torch and the model, not a device")
    asked = cli("probe", "--python", sys.executable, "--device", "cpu")
    assert asked.out.strip().splitlines()[-1].startswith("pass: all tiers passed on cpu: a CPU run")
