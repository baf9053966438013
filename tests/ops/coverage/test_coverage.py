"""`neuronctl coverage` with real torch 2.13 CPU and transformers in this venv: tiny Llama and GPT-2
built from their config classes (random weights, nothing downloaded: HF_HUB_OFFLINE=1, HF_HOME
in a temporary folder), recorded in a real target interpreter.

Each target run imports torch and transformers (seconds on 2 cores): the recordings are made once
per module and the classifications tested on them; bad inputs that are refused before anything
runs cost nothing.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from neuronctl.ops.coverage import CoverageRequest, ModelCoverage, classify, run_coverage
from neuronctl.ops.coverage_table import OpTable, read_table
from neuronctl.ops.reporter import CollectingReporter
from neuronctl.probes.coverage import ModelRun, parse
from neuronctl.probes.target_run import ScriptExit

PY = sys.executable


def _record(**kwargs: object) -> ModelCoverage:
    outcome = run_coverage(CoverageRequest(PY, tiny=True, **kwargs), CollectingReporter())  # type: ignore[arg-type]
    assert outcome.coverage is not None, outcome.detail
    return outcome.coverage


@pytest.fixture(scope="module")
def gpt2(hf_home: Path) -> ModelCoverage:
    return _record(arch="gpt2")


@pytest.fixture(scope="module")
def gpt2_train(hf_home: Path) -> ModelCoverage:
    return _record(arch="gpt2", train=True)


def _recording(coverage: ModelCoverage) -> ModelRun:
    """The recording behind a coverage, to classify again with another table."""
    from neuronctl.probes.coverage import OpRecord

    return ModelRun("ok", "", coverage.model, operators=tuple(
        OpRecord(o.op, o.calls, o.dtypes, o.module) for o in coverage.operators))


# -- recording ---------------------------------------------------------------------------------

def test_tiny_llama_json_has_the_issue_keys(cli) -> None:
    result = cli("coverage", "--arch", "llama", "--tiny", "--python", PY, "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["command"] == "coverage" and doc["model"] == "llama"
    ops = {o["op"]: o for o in doc["operators"]}
    assert {"op", "calls", "class", "module"} <= set(doc["operators"][0])
    assert ops["aten::mm"]["calls"] >= 2 * 7  # q, k, v, o, gate, up, down per layer (2 layers)
    assert ops["aten::mm"]["module"].startswith("model.layers.0.")
    assert ops["aten::embedding"]["module"] == "model.embed_tokens"
    assert doc["summary"] == {"total": len(ops), "native": 0, "cpu_fallback": 0, "unsupported": 0,
                              "unknown": len(ops)}
    assert doc["source"]["kind"] == "none" and "coverage table" in doc["source"]["detail"]


def test_gpt2_records_its_operators_and_modules(gpt2: ModelCoverage) -> None:
    ops = {o.op: o for o in gpt2.operators}
    assert gpt2.model == "gpt2" and gpt2.mode == "forward"
    assert "aten::addmm" in ops  # GPT-2's Conv1D is addmm
    assert ops["aten::addmm"].module.startswith("transformer.h.0.")
    assert all(o.calls >= 1 and o.dtypes for o in gpt2.operators if o.op == "aten::addmm")
    assert not any("backward" in o.op for o in gpt2.operators)


def test_train_adds_backward_operators(gpt2: ModelCoverage, gpt2_train: ModelCoverage) -> None:
    forward = {o.op for o in gpt2.operators}
    train = {o.op: o for o in gpt2_train.operators}
    added = set(train) - forward
    assert gpt2_train.mode == "train"
    assert any(op.endswith("_backward") or "backward" in op for op in added), added
    assert any(o.module == "(backward)" for o in train.values())
    assert any(o.module == "(optimizer)" for o in train.values())


def test_bfloat16_is_recorded_as_such(cli) -> None:
    result = cli("coverage", "--arch", "gpt2", "--tiny", "--layers", "1", "--dtype", "bfloat16",
                 "--python", PY, "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["dtype"] == "bfloat16"
    assert "bfloat16" in {d for o in doc["operators"] for d in o["dtypes"]}


def test_a_factory_and_a_script_as_smoke_takes_them(cli, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "mymodels.py").write_text(textwrap.dedent('''
        import torch

        def make():
            model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
            return model, (torch.randn(2, 8),)
    '''))
    monkeypatch.chdir(tmp_path)
    result = cli("coverage", "--model", "mymodels:make", "--python", PY, "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    ops = {o["op"]: o["module"] for o in doc["operators"]}
    assert ops["aten::relu"] == "1" and ops["aten::addmm"] == "0"
    script = tmp_path / "train_me.py"
    script.write_text("from mymodels import make\n")
    result = cli("coverage", "--script", str(script), "--train", "--python", PY, "--json")
    assert result.code == 0, result.err
    assert "aten::threshold_backward" in {o["op"] for o in json.loads(result.out)["operators"]}


def test_a_local_config_json_builds_without_the_hub(cli, tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "hidden_size": 32, "intermediate_size": 64,
                                  "num_attention_heads": 2, "num_key_value_heads": 1,
                                  "vocab_size": 100, "num_hidden_layers": 8,
                                  "auto_map": {"AutoModel": "evil.Model"},
                                  "id2label": {str(i): f"label {i}" for i in range(20_000)}}))
    assert config.stat().st_size > 256 * 1024  # more than one argv string may hold
    result = cli("coverage", "--model-config", str(config), "--layers", "1", "--python", PY,
                 "--format", "markdown")
    assert result.code == 0, result.err
    assert result.out.startswith("**llama, forward, float32:")
    assert "| `aten::mm` | unknown |" in result.out


# -- classification from a table ----------------------------------------------------------------

def _table(tmp_path: Path, ops: dict[str, str], name: str = "ops.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"schema": 1, "torch_neuronx": "2.14.3.0", "ops": ops}, indent=1))
    return path


def test_table_classes_overload_less_keys_and_exact_overloads(gpt2: ModelCoverage,
                                                               tmp_path: Path) -> None:
    ops = {o.op for o in gpt2.operators}
    table = read_table(_table(tmp_path, {"aten::addmm": "CPU_FALLBACK", "aten::add": "Y",
                                         "aten::add.Tensor": "N", "aten::view": "Y"}))
    operators, source = classify(_recording(gpt2), table, None)
    classes = {o.op: o.klass for o in operators}
    assert source.kind == "table" and source.torch_neuronx == "2.14.3.0"
    assert classes["aten::addmm"] == "cpu_fallback"
    assert classes["aten::view"] == "native"
    assert "aten::add.Tensor" in ops and classes["aten::add.Tensor"] == "unsupported"  # exact wins
    assert all(classes[op] == "unknown" for op in ops - {"aten::addmm", "aten::view",
                                                          "aten::add.Tensor"}
               if not op.startswith("aten::add."))


def test_default_overload_key_matches(tmp_path: Path) -> None:
    table = read_table(_table(tmp_path, {"aten::mm.default": "N", "aten::cat": "CPU_FALLBACK"}))
    assert table.lookup("aten::mm") == "unsupported"
    assert table.lookup("aten::mm.out") == "unknown"
    assert table.lookup("aten::cat.names") == "cpu_fallback"


def test_exit_codes_from_a_table(cli, tmp_path: Path) -> None:
    csv_table = tmp_path / "ops.csv"
    csv_table.write_text("op,class\naten::addmm,CPU_FALLBACK\naten::mm,Y\n")
    args = ("coverage", "--arch", "gpt2", "--tiny", "--layers", "1", "--python", PY)
    fallback = cli(*args, "--table", str(csv_table))
    assert fallback.code == 0, fallback.err
    first = fallback.out.splitlines()[1]
    assert first.startswith("gpt2, forward, float32: ") and "1 cpu fallback (aten::addmm)" in first
    assert "warn: 1 operator(s) run on the CPU" in fallback.out
    assert cli(*args, "--table", str(csv_table), "--strict").code == 1
    unsupported = _table(tmp_path, {"aten::addmm": "N"})
    result = cli(*args, "--table", str(unsupported), "--json")
    assert result.code == 1
    doc = json.loads(result.out)
    assert doc["summary"]["unsupported"] == 1 and doc["source"]["kind"] == "table"
    assert doc["status"] != "ok"


@pytest.mark.parametrize(("name", "text", "where"), [
    ("bad.json", '{"schema": 1, "ops": {\n "aten::mm": "Y",\n "aten::bmm": "MAYBE"}}', "bad.json:3"),
    ("bad.csv", "op,class\naten::mm,Y\naten::bmm,yes\n", "bad.csv:3"),
    ("broken.json", '{"schema": 1,\n "ops": {', "broken.json:2"),
    ("header.csv", "operator;class\n", "header.csv:1"),
    ("name.csv", "op,class\nnot an op,Y\n", "name.csv:2"),
])
def test_a_bad_table_is_exit_2_naming_file_and_line(cli, tmp_path: Path, name: str, text: str,
                                                     where: str) -> None:
    (tmp_path / name).write_text(text)
    result = cli("coverage", "--arch", "gpt2", "--python", PY, "--table", str(tmp_path / name))
    assert result.code == 2
    assert where in result.err and result.err.count("\n") == 1 and "Traceback" not in result.err


# -- bad input ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("content", "says"), [
    ("{not json", "not JSON"), ('["a list"]', "not a JSON object"),
    ('{"hidden_size": 8}', 'no "model_type"'),
])
def test_a_bad_config_is_exit_2(cli, tmp_path: Path, content: str, says: str) -> None:
    config = tmp_path / "config.json"
    config.write_text(content)
    result = cli("coverage", "--model-config", str(config), "--python", PY)
    assert result.code == 2 and says in result.err and result.err.count("\n") == 1


def test_unknown_architecture_says_did_you_mean(cli, tmp_path: Path) -> None:
    result = cli("coverage", "--arch", "lama", "--python", PY)
    assert result.code == 2
    assert "knows no architecture 'lama'; did you mean llama" in result.err
    assert result.err.count("\n") == 1 and "Traceback" not in result.err
    # The same from a config.json names the flag it came by (--config is neuronctl's own file).
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "lama"}')
    result = cli("coverage", "--model-config", str(config), "--python", PY)
    assert result.code == 2 and f"--model-config {config}: transformers" in result.err, result.err


def test_a_factory_that_raises_is_one_line_exit_2(cli, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "broken.py").write_text("def make():\n    raise ValueError('no weights here')\n")
    monkeypatch.chdir(tmp_path)
    result = cli("coverage", "--model", "broken:make", "--python", PY, "--json")
    assert result.code == 2
    assert "the factory raised ValueError: no weights here" in result.err
    assert json.loads(result.out)["error"]["kind"] == "input"


@pytest.mark.parametrize("args", [
    ("--arch", "llama", "--model", "a:b"), ("--layers", "0", "--arch", "llama"),
    ("--all", "--arch", "llama"), ("--all", "--device", "neuron"),
    ("--arch", "llama", "--limit", "3"), ("--arch", "../x"),
    ("--model", "not a spec"), ("--script", "/nonexistent/x.py"),
])
def test_requests_wrong_on_their_face_run_nothing(cli, args: tuple[str, ...]) -> None:
    result = cli("coverage", *args, "--python", PY)
    assert result.code == 2 and result.err.count("\n") == 1


# -- the channel is untrusted ----------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    '{"type": "result", "result": "ok", "model": "x", "operators": [{"op": "rm -rf /", "calls": 1, '
    '"dtypes": [], "module": ""}]}',
    '{"type": "result", "result": "ok", "model": "x", "operators": [{"op": "aten::mm", "calls": 1, '
    '"dtypes": [], "module": "", "class": "fine"}]}',
    '{"type": "result", "result": "ok", "model": "x", "operators": [{"op": "aten::mm", "calls": -1, '
    '"dtypes": [], "module": ""}]}',
    '{"type": "result", "result": "great"}',
])
def test_forged_records_are_malformed(line: str) -> None:
    hello = '{"coverage": "neuronctl-coverage", "version": 1, "type": "hello"}'
    run = parse([hello, line], ScriptExit(0, 10.0, 1.0))
    assert run.outcome == "error" and "malformed" in run.detail


def test_no_hello_no_verdict() -> None:
    run = parse(['{"type": "result", "result": "ok"}'], ScriptExit(1, 10.0, 1.0, "boom"))
    assert run.outcome == "error"


def test_table_lookup_unit() -> None:
    table = OpTable("t", {"aten::add": "native", "aten::add.Tensor": "unsupported"})
    assert table.lookup("aten::add.Tensor") == "unsupported"
    assert table.lookup("aten::add.Scalar") == "native"
    assert table.lookup("aten::sub.Tensor") == "unknown"


# -- the sweep's bounds ----------------------------------------------------------------------------

def test_the_sweep_bounds_each_childs_memory_and_time(cli) -> None:
    """Configured widths (a 500 MB embedding): past --memory-mb the child fails as such, not as
    an unbuildable architecture; past --arch-timeout it is killed. Either way the sweep ends."""
    base = ("coverage", "--all", "--arch-filter", "^llama$", "--python", PY, "--json")
    memory = json.loads(cli(*base, "--memory-mb", "256").out)
    assert memory["counts"]["failed"] == 1 and memory["counts"]["unbuildable"] == 0
    assert "out of memory: the child's bound, --memory-mb 256" in memory["archs"][0]["detail"]
    timed = json.loads(cli(*base, "--arch-timeout", "1").out)
    assert timed["archs"][0]["outcome"] == "timeout"
    assert timed["archs"][0]["detail"] == "no result within 1s"


def test_sweep_counts_keep_unbuildable_apart() -> None:
    from neuronctl.ops.coverage import Operator, Source
    from neuronctl.ops.coverage_sweep import ArchResult, SweepOutcome

    def ran(name: str, *classes: str) -> ArchResult:
        ops = tuple(Operator(f"aten::op{i}", 1, k, "m") for i, k in enumerate(classes))  # type: ignore[arg-type]
        return ArchResult(name, "ok", "", ModelCoverage(name, "forward", "float32", ops,
                                                        Source("table", "t")))

    outcome = SweepOutcome("ok", "", (
        ran("a", "native"), ran("b", "native", "cpu_fallback"), ran("c", "unsupported"),
        ArchResult("d", "unbuildable", "ImportError: needs mamba_ssm"),
        ArchResult("e", "timeout", "no result within 1s")))
    assert outcome.counts() == {"total": 5, "ran": 3, "unbuildable": 1, "failed": 1, "native": 1,
                                "fallback": 1, "unsupported": 1, "unknown": 0}
    assert outcome.exit_code == 1 and "1 architecture(s) hit an unsupported" in str(outcome.failure)


def test_a_model_that_raises_in_forward_fails_exit_1(cli, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "boom.py").write_text(textwrap.dedent('''
        import torch

        class Boom(torch.nn.Linear):
            def forward(self, x):
                raise RuntimeError("boom in forward")

        def make():
            return Boom(4, 4), torch.randn(2, 4)
    '''))
    monkeypatch.chdir(tmp_path)
    result = cli("coverage", "--model", "boom:make", "--python", PY)
    assert result.code == 1
    assert "fail: coverage failed: RuntimeError: boom in forward" in result.out


@pytest.mark.parametrize("bad", ["nan", "-1", "0", "1e400"])
def test_a_bad_run_timeout_is_one_line_and_exit_2_before_anything_runs(cli, bad) -> None:
    """click reads nan, inf and negatives as floats: the run's limit is checked as every other
    command's --timeout is (once an internal error for nan, a run for -1)."""
    r = cli("coverage", "--model", "nowhere:make", "--timeout", bad)
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert r.err.startswith("neuronctl: error: --timeout: timeout must be a positive number")
