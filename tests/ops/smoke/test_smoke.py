"""`neuronctl smoke` with real torch 2.13 CPU in this venv: every run is a real target interpreter.

Each run imports torch (seconds on 2 cores), so the models are tiny and the step counts small.
"""

import json
import os
import sys
import textwrap

import pytest
from support.standin import fake_neuron_plugin

from neuronctl.ops.reporter import CollectingReporter
from neuronctl.ops.smoke import SmokeRequest, run_smoke
from neuronctl.probes.smoke import SmokeExit, SmokeSpec, parse_smoke
from neuronctl.probes.smoke_records import HELLO, STAGES

FAST = ("--device", "cpu", "--warmup", "1", "--steps", "3")

MODELS = {
    "good": '''
        import torch

        def make():
            torch.manual_seed(1)
            model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
            return model, (torch.randn(2, 8),), 2
    ''',
    "raising": '''
        import torch

        class Boom(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 4)

            def forward(self, x):
                raise RuntimeError("boom in forward")

        def make():
            return Boom(), torch.randn(2, 4)
    ''',
    "hanging": '''
        import time
        import torch

        class Stuck(torch.nn.Linear):
            def forward(self, x):
                time.sleep(600)

        def make():
            return Stuck(4, 4), torch.randn(2, 4)
    ''',
    "crashing": '''
        import os
        import torch

        class Abort(torch.nn.Linear):
            def forward(self, x):
                os.abort()

        def make():
            return Abort(4, 4), torch.randn(2, 4)
    ''',
    # A device whose transfer corrupts the weights: the model only ever goes through .to() on the
    # device path (the CPU reference is a copy taken before), so only the comparison can see it.
    "corrupting_transfer": '''
        import torch

        _to = torch.nn.Module.to

        def corrupting_to(self, *args, **kwargs):
            moved = _to(self, *args, **kwargs)
            with torch.no_grad():
                for p in moved.parameters():
                    p.add_(0.05)
            return moved

        torch.nn.Module.to = corrupting_to

        def make():
            torch.manual_seed(2)
            return torch.nn.Linear(8, 8), torch.randn(3, 8), 3
    ''',
    # Outputs right, gradients wrong (by half again) on the device path only.
    "wrong_gradients": '''
        import torch

        _to = torch.nn.Module.to

        def to_with_bad_backward(self, *args, **kwargs):
            moved = _to(self, *args, **kwargs)
            for p in moved.parameters():
                p.register_hook(lambda grad: grad * 1.5)
            return moved

        torch.nn.Module.to = to_with_bad_backward

        def make():
            torch.manual_seed(3)
            return torch.nn.Linear(8, 8), torch.randn(3, 8)
    ''',
    "bad_shape": '''
        import torch

        def make():
            return torch.nn.Linear(2, 2)

        not_callable = 42
    ''',
}


@pytest.fixture
def models(isolated_env):
    """The test models as modules in the working directory (where MODULE:FACTORY is imported from)."""
    for name, body in MODELS.items():
        (isolated_env / f"{name}.py").write_text(textwrap.dedent(body))
    return isolated_env


def smoke_json(cli, *args):
    result = cli("smoke", "--json", *args)
    return result, json.loads(result.out)


def test_builtin_reference_model_trains_on_cpu_and_matches_it(cli, isolated_env):
    out_file = isolated_env / "smoke.json"
    result, doc = smoke_json(cli, *FAST, "--train", "-o", str(out_file))
    assert result.code == 0, result.err
    smoke = doc["smoke"]
    assert doc["command"] == "smoke" and "error" not in doc
    assert smoke["ok"] and smoke["outcome"] == "ok" and smoke["device"] == "cpu"
    assert smoke["model"] == "built-in reference model" and smoke["torch"].startswith("2.13.0")
    assert len(smoke["warmup_ms"]) == 1 and len(smoke["step_ms"]) == 3
    assert smoke["first_step_ms"] == smoke["warmup_ms"][0]
    assert min(smoke["step_ms"]) <= smoke["median_ms"] <= smoke["p90_ms"] <= max(smoke["step_ms"])
    assert smoke["tokens_per_step"] == 128
    assert smoke["tokens_per_s"] == pytest.approx(128 / (smoke["median_ms"] / 1000))
    outputs, grads = smoke["comparisons"]["outputs"], smoke["comparisons"]["gradients"]
    assert outputs["ok"] and outputs["max_abs"] == 0.0 and outputs["dtype"] == "float32"
    assert grads["ok"] and grads["tensors"] == 30  # every parameter of the two blocks, embeddings, head
    assert smoke["peak_memory_bytes"] is None  # the CPU backend keeps no statistics
    # the -o file is the same report, and cost reads its throughput
    assert json.loads(out_file.read_text())["smoke"]["tokens_per_s"] == smoke["tokens_per_s"]
    cost = cli("cost", "--from", str(out_file), "--instance", "trn1.2xlarge", "--json")
    row = json.loads(cost.out)["cost"]["instances"][0]
    assert cost.code == 0
    assert row["usd_per_million_tokens"] == pytest.approx(1e6 / smoke["tokens_per_s"] * 0.512 / 3600)


def test_user_module_from_config_in_the_working_directory(cli, models):
    (models / "pyproject.toml").write_text('[tool.neuronctl]\nmodel = "good:make"\n')
    result = cli("smoke", *FAST)
    assert result.code == 0, result.out + result.err
    assert "good:make, inference on cpu" in result.out
    assert "tokens/s (2 tokens per step)" in result.out
    assert "vs CPU outputs     match: max abs error 0" in result.out
    assert "pass: " in result.out


def test_script_defining_make(cli, tmp_path):
    script = tmp_path / "elsewhere" / "train.py"
    script.parent.mkdir()
    (script.parent / "helper.py").write_text("WIDTH = 4\n")
    script.write_text(textwrap.dedent('''
        import torch
        from helper import WIDTH  # the script's own folder is importable, as with `python train.py`

        def make():
            return torch.nn.Linear(WIDTH, WIDTH), {"input": torch.randn(2, WIDTH)}

        if __name__ == "__main__":
            raise SystemExit("the training entry point must not run")
    '''))
    result, doc = smoke_json(cli, *FAST, "--script", str(script))
    assert result.code == 0, doc
    assert doc["smoke"]["model"] == f"{script}:make" and doc["smoke"]["tokens_per_s"] is None


def test_a_model_that_raises_fails_at_its_step_with_its_error(cli, models):
    result, doc = smoke_json(cli, *FAST, "--model", "raising:make")
    assert result.code == 1
    smoke = doc["smoke"]
    assert smoke["outcome"] == "failed" and smoke["stage"] == "warmup" and smoke["step"] == 1
    assert smoke["where"] == "raising.py:10"
    assert smoke["detail"] == "RuntimeError: boom in forward (warm-up step 1, at raising.py:10)"
    assert doc["error"]["kind"] == "failed" and "boom in forward" in doc["error"]["message"]


def test_a_hanging_model_is_killed_at_the_timeout(cli, models):
    result, doc = smoke_json(cli, *FAST, "--model", "hanging:make", "--timeout", "15")
    assert result.code == 1
    smoke = doc["smoke"]
    assert smoke["outcome"] == "timeout"
    assert smoke["detail"] == "timed out after 15s in warm-up step 1"
    assert smoke["wall_ms"] < 25_000


def test_a_model_that_crashes_the_interpreter(cli, models):
    result, doc = smoke_json(cli, *FAST, "--model", "crashing:make")
    assert result.code == 1
    assert doc["smoke"]["outcome"] == "crashed"
    assert doc["smoke"]["detail"] == "the interpreter crashed with SIGABRT in warm-up step 1"


def test_device_output_that_disagrees_with_cpu_fails_the_comparison(cli, models):
    report = models / "report.json"
    result = cli("smoke", *FAST, "--model", "corrupting_transfer:make", "-o", str(report))
    assert result.code == 1
    assert "vs CPU outputs     DIFFER" in result.out
    assert "fail: outputs differ from CPU at output: max abs error" in result.out
    doc = json.loads(report.read_text())
    assert doc["error"]["kind"] == "failed"
    outputs = doc["smoke"]["comparisons"]["outputs"]
    assert not outputs["ok"] and outputs["max_abs"] > 0.01 and outputs["worst"] == "output"
    assert doc["smoke"]["stage"] == "compare" and doc["smoke"]["tokens_per_s"] is None


def test_wrong_gradients_fail_only_with_train(cli, models):
    result, doc = smoke_json(cli, *FAST, "--model", "wrong_gradients:make", "--train")
    assert result.code == 1
    comparisons = doc["smoke"]["comparisons"]
    assert comparisons["outputs"]["ok"] and comparisons["outputs"]["max_abs"] == 0.0
    assert not comparisons["gradients"]["ok"]
    assert comparisons["gradients"]["worst"] == "weight"
    assert comparisons["gradients"]["max_rel"] == pytest.approx(0.5, rel=1e-3)  # 1.5 g against g
    assert doc["smoke"]["detail"].startswith("gradients differ from CPU at weight")


@pytest.mark.parametrize(("model", "message"), [
    ("nosuchmodule:make", "--model nosuchmodule:make: no module named 'nosuchmodule'"),
    ("good:nosuch", "--model good:nosuch: good has no attribute 'nosuch'"),
    ("bad_shape:not_callable", "--model bad_shape:not_callable is an int, not a callable"),
    ("bad_shape:make", "the factory returned a Linear; expected (model, example_inputs) or "
                       "(model, example_inputs, tokens_per_step)"),
])
def test_bad_model_is_exit_2_naming_what_is_wrong(cli, models, model, message):
    result, doc = smoke_json(cli, *FAST, "--model", model)
    assert result.code == 2
    assert message in result.err and "Traceback" not in result.err
    assert doc["error"]["kind"] == "input" and message in doc["error"]["message"]
    assert doc["smoke"]["outcome"] == "bad-input" and doc["smoke"]["stage"] in ("load", "build")


def test_bad_model_spec_and_script_are_refused_before_running(cli, tmp_path):
    for args, message in [
        (("--model", "not a spec"), "--model 'not a spec': expected MODULE:FACTORY"),
        (("--script", str(tmp_path / "absent.py")), "no such file"),
        (("--model", "a:b", "--script", __file__), "give one of them"),
    ]:
        result = cli("smoke", "--json", *args)
        assert result.code == 2, args
        assert message in json.loads(result.out)["error"]["message"]


def test_script_without_make_is_bad_input(tmp_path):
    script = tmp_path / "nomake.py"
    script.write_text("import torch\n")
    reporter = CollectingReporter()
    outcome = run_smoke(SmokeRequest(sys.executable, script=script, device="cpu", warmup=1, steps=1),
                        reporter)
    assert outcome.exit_code == 2 and outcome.report.stage == "load"
    assert outcome.report.detail == f"--script {script}: the script defines no make()"
    assert [e.kind for e in reporter.events if e.kind != "status"] == ["step", "done"]


def test_a_target_without_torch(cli, tmp_path):
    # A fresh venv (found by path, not by pyenv on PATH) holds no torch whatever its base has.
    from support.wheels import find_python, make_venv

    bare = make_venv(tmp_path / "bare", find_python("3.12"))
    result, doc = smoke_json(cli, "--python", str(bare))
    assert result.code == 1
    assert doc["smoke"]["outcome"] == "no-torch" and doc["smoke"]["stage"] == "import"


# The parser alone (pure): forged or truncated channel output never passes.

SPEC = SmokeSpec(device="cpu", warmup=1, steps=2)
CLEAN_EXIT = SmokeExit(0, 60.0, 100.0)
COMPARE = {"outputs": {"ok": True, "max_abs": 0.0, "max_rel": 0.0, "worst": "output", "tensors": 1,
                       "dtype": "float32", "rtol": 0.01, "atol": 0.001, "problem": None}}


def lines(*records):
    return [json.dumps(HELLO)] + [json.dumps(r) for r in records]


def full_run(steps=2, result=None):
    records = []
    for stage in STAGES:
        records.append({"type": "stage", "stage": stage})
        if stage == "device":
            records.append({"type": "info", "device": "cpu"})
        if stage == "warmup":
            records.append({"type": "step", "phase": "warmup", "i": 1, "ms": 50.0})
        if stage == "steps":
            records += [{"type": "step", "phase": "timed", "i": i, "ms": 1.0 + i} for i in range(1, steps + 1)]
    records.append(result or {"type": "result", "result": "ok", "compare": COMPARE, "peak_memory_bytes": None})
    return lines(*records)


def test_parser_accepts_a_whole_run_and_computes_its_statistics():
    report = parse_smoke(SPEC, full_run(), CLEAN_EXIT)
    assert report.ok and report.first_step_ms == 50.0
    assert report.step_ms == (2.0, 3.0) and report.median_ms == 2.5 and report.p90_ms == 3.0


@pytest.mark.parametrize(("forged", "why"), [
    (full_run(steps=1), "a passing result for a run that did not finish"),
    (lines({"type": "result", "result": "ok", "compare": COMPARE}), "a passing result"),
    (full_run(result={"type": "result", "result": "ok", "compare": {}}), "a passing result"),
    (full_run(result={"type": "result", "result": "bad-input", "error": "x"}), "a bad-input result in stage compare"),
    (lines({"type": "stage", "stage": "load"}), "stage 'load' where import was due"),
    (lines({"type": "stage", "stage": "import"}, {"type": "info", "device": "tpu"}), "device is not"),
    ([*full_run(), '{"type": "stage", "stage": "import"}'], "a line after the result"),
])
def test_parser_refuses_forged_or_inconsistent_output(forged, why):
    report = parse_smoke(SPEC, forged, CLEAN_EXIT)
    assert report.outcome == "error" and why in report.detail


def test_parser_without_hello_or_result():
    assert parse_smoke(SPEC, ["garbage"], SmokeExit(1, 60.0, 1.0, "SyntaxError: x")).detail == (
        "the interpreter did not run the smoke script: exit 1: SyntaxError: x")
    stuck = lines({"type": "stage", "stage": "import"}, {"type": "stage", "stage": "device"})
    report = parse_smoke(SPEC, stuck, SmokeExit(None, 5.0, 5000.0))
    assert report.outcome == "timeout" and report.detail == "timed out after 5s in stage device"




def test_auto_picks_a_registered_neuron_backend_and_reports_where_it_fails(tmp_path):
    """A PrivateUse1 plugin named "neuron" (loaded by torch's backend autoload, like the real one)
    that registers the device but has no kernels: the move to the device is where it fails."""
    env = dict(os.environ, PYTHONPATH=str(fake_neuron_plugin(tmp_path)))
    outcome = run_smoke(SmokeRequest(sys.executable, warmup=1, steps=1, env=env), CollectingReporter())
    report = outcome.report
    assert outcome.exit_code == 1 and report.device == "neuron"
    assert report.stage == "move" and report.warmup_ms == ()
    assert "not linked with support for neuron devices (stage move, at module.py:" in report.detail
