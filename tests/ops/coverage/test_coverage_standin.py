"""`neuronctl coverage` against the stand-in `neuron` backend (tests/support/standin_neuron, a test double of
torch-neuronx: kernels registered for PrivateUse1 for NATIVE_OPS, a boxed fallback for the rest),
installed by real pip in a real venv: classes from the backend's registrations, a table written
from it and used in a venv without it, the device confirmation, and the sweep.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from neuronctl.ops.coverage import CoverageRequest, ModelCoverage, run_coverage
from neuronctl.ops.coverage_sweep import SweepRequest, run_sweep
from neuronctl.ops.reporter import CollectingReporter, Status

STANDIN = Path(__file__).resolve().parents[2] / "support" / "standin_neuron" / "torch_neuronx" / "_standin.py"


def _native_ops() -> frozenset[str]:
    """The stand-in's own list of the ops it has kernels for (its module, loaded by path: it
    registers nothing until asked)."""
    spec = importlib.util.spec_from_file_location("standin_ops", STANDIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return frozenset(module.NATIVE_OPS)


def _coverage(python: Path | str, **kwargs: Any) -> ModelCoverage:
    outcome = run_coverage(CoverageRequest(str(python), tiny=True, **kwargs), CollectingReporter())
    assert outcome.coverage is not None, outcome.detail
    return outcome.coverage


@pytest.fixture(scope="module")
def llama(standin_python: Path, hf_home: Path) -> ModelCoverage:
    return _coverage(standin_python, arch="llama")


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_classes_come_from_the_backends_registrations(arch: str, llama: ModelCoverage,
                                                      standin_python: Path) -> None:
    coverage = llama if arch == "llama" else _coverage(standin_python, arch=arch, train=True)
    native = _native_ops()
    assert coverage.source.kind == "backend" and coverage.source.torch_neuronx == "2.13.3.0"
    classes = {o.op: o.klass for o in coverage.operators}
    assert set(classes.values()) <= {"native", "cpu_fallback"}  # a fallback: nothing unsupported
    for op, klass in classes.items():
        if op in native:
            assert klass == "native", op
    # composites that redispatch to an out= overload the stand-in lacks run on its fallback
    assert classes["aten::arange"] == "cpu_fallback"
    if arch == "llama":
        assert classes["aten::cos"] == classes["aten::sin"] == "cpu_fallback"
        assert classes["aten::mm"] == classes["aten::embedding"] == "native"
    else:
        assert classes["aten::addmm"] == "native"
        assert classes["aten::embedding_dense_backward"] == "native"  # --train's backward
    assert coverage.summary.cpu_fallback >= 1


def test_fallbacks_warn_exit_0_and_fail_with_strict(cli, standin_python: Path) -> None:
    args = ("coverage", "--arch", "llama", "--tiny", "--layers", "1", "--python", str(standin_python))
    result = cli(*args)
    assert result.code == 0, result.err
    assert "cpu fallback (aten::arange, aten::cos, aten::sin" in result.out
    assert "classes from: the Neuron backend installed in the target (torch-neuronx 2.13.3.0)" in result.out
    assert cli(*args, "--strict").code == 1


def test_a_table_from_the_standin_classifies_where_it_is_absent(cli, tmp_path: Path,
                                                               standin_python: Path,
                                                               llama: ModelCoverage) -> None:
    table = tmp_path / "ops.json"
    result = cli("coverage", "table", "--python", str(standin_python), "-o", str(table))
    assert result.code == 0, result.err
    doc = json.loads(table.read_text())
    assert doc["schema"] == 1 and doc["torch_neuronx"] == "2.13.3.0" and doc["date"]
    assert doc["ops"]["aten::mm.default"] == "Y" and doc["ops"]["aten::cos.out"] == "CPU_FALLBACK"
    assert all(key.startswith("aten::") and "." in key for key in doc["ops"])
    # this venv has no torch_neuronx: the table is the only source
    result = cli("coverage", "--arch", "llama", "--tiny", "--python", sys.executable,
                 "--table", str(table), "--json")
    assert result.code == 0, result.err
    got = json.loads(result.out)
    assert got["source"]["kind"] == "table" and got["source"]["torch_neuronx"] == "2.13.3.0"
    assert {o["op"]: o["class"] for o in got["operators"]} == {
        o.op: o.klass for o in llama.operators}


def test_no_backend_no_table(cli, tmp_path: Path) -> None:
    result = cli("coverage", "table", "--python", sys.executable, "-o", str(tmp_path / "t.json"))
    assert result.code == 1 and "no Neuron backend" in result.out
    assert not (tmp_path / "t.json").exists()


def test_device_confirmation_compares_and_times_both(cli, standin_python: Path) -> None:
    result = cli("coverage", "--arch", "llama", "--tiny", "--layers", "1", "--device", "neuron",
                 "--python", str(standin_python), "--json")
    assert result.code == 0, result.err
    confirm = json.loads(result.out)["confirm"]
    assert confirm["device"] == "neuron"
    assert confirm["compare"]["outputs"]["ok"] is True
    assert confirm["device_ms"] > 0 and confirm["cpu_ms"] > 0


def test_device_confirmation_with_train_compares_gradients(cli, standin_python: Path,
                                                           tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "mlp.py").write_text(
        "import torch\n\ndef make():\n    torch.manual_seed(0)\n"
        "    return torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()), torch.randn(2, 8)\n")
    monkeypatch.chdir(tmp_path)
    result = cli("coverage", "--model", "mlp:make", "--train", "--device", "neuron",
                 "--python", str(standin_python), "--json")
    confirm = json.loads(result.out)["confirm"]
    assert set(confirm["compare"]) == {"outputs", "gradients"}
    assert confirm["compare"]["outputs"]["ok"] is True
    assert confirm["compare"]["gradients"]["ok"] is True, confirm["compare"]["gradients"]
    assert result.code == 0, result.out


def test_device_neuron_without_a_backend_fails_saying_why(cli) -> None:
    result = cli("coverage", "--arch", "gpt2", "--tiny", "--layers", "1", "--device", "neuron",
                 "--python", sys.executable)
    assert result.code == 1 and "no Neuron backend registered" in result.out


def test_the_sweep_limit_5(standin_python: Path) -> None:
    reporter = CollectingReporter()
    outcome = run_sweep(SweepRequest(str(standin_python), tiny=True, layers=1, limit=5,
                                     arch_timeout=120), reporter)
    assert outcome.outcome == "ok", outcome.detail
    counts = outcome.counts()
    assert counts["total"] == 5 == len(outcome.archs)
    assert counts["ran"] + counts["unbuildable"] + counts["failed"] == 5
    assert counts["ran"] >= 3
    assert counts["native"] + counts["fallback"] + counts["unsupported"] + counts["unknown"] == counts["ran"]
    assert counts["unknown"] == 0 and outcome.source is not None
    assert outcome.source["kind"] == "backend"
    done = [e.done for e in reporter.events if isinstance(e, Status) and e.total == 5]
    assert done == [1, 2, 3, 4, 5]
    for arch in outcome.archs:
        if arch.outcome != "ok":
            assert arch.detail  # why it could not be built or run
    assert outcome.exit_code == 0


def test_the_sweep_in_json_and_filtered(cli, standin_python: Path) -> None:
    result = cli("coverage", "--all", "--tiny", "--layers", "1", "--arch-filter", "^(llama|gpt2)$",
                 "--python", str(standin_python), "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert [a["name"] for a in doc["archs"]] == ["gpt2", "llama"]
    assert doc["counts"]["fallback"] == 2 and doc["counts"]["ran"] == 2
    assert all("aten::arange" in a["not_native"] for a in doc["archs"])


RUN_ON_DEVICE = """
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("m", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
request = {"arch": sys.argv[2], "layers": 1, "tiny": True, "train": True, "dtype": "float32"}
model, inputs, _ = m.hf_model(request, torch)
model = model.to("neuron"); model.tie_weights()
m.run_step(model, {k: v.to("neuron") for k, v in inputs.items()}, True, torch)
"""


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_classes_agree_with_what_the_device_sends_to_its_fallback(arch: str, standin: Any,
                                                                   tmp_path: Path) -> None:
    """Ground truth: the same model's training step run on the stand-in device, its fallback
    logging each op it runs on CPU. A recorded op without a kernel of its own whose out=
    overload the device sent to the fallback must be classed cpu_fallback."""
    import subprocess

    model_py = Path(__file__).resolve().parents[3] / "probes" / "scripts" / "coverage_model.py"
    env = standin.env(log_fallback="1")
    ran = subprocess.run([str(standin.python), "-c", RUN_ON_DEVICE, str(model_py), arch],
                         capture_output=True, text=True, env=env, timeout=300, check=True)
    fell = {line.rsplit(" ", 1)[1] for line in ran.stdout.splitlines()
            if line.startswith("neuron stand-in: CPU fallback for ")}
    coverage = _coverage(standin.python, arch=arch, layers=1, train=True)
    native = _native_ops()
    checked = 0
    for op in coverage.operators:
        bases = {f.partition(".")[0] for f in fell}
        if op.op not in native and op.op.partition(".")[0] in bases:
            assert op.klass == "cpu_fallback", (op.op, sorted(fell))
            checked += 1
    assert checked >= 2, sorted(fell)
