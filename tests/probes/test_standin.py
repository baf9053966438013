"""The stand-in `neuron` backend itself (tests/support/standin_neuron): it behaves as AWS documents
torch_neuronx does, in a real venv where `import torch` autoloads it. Each case is one
interpreter (a torch import costs seconds), reporting what it saw as one JSON line."""

import json
import subprocess
import textwrap

import pytest

SEEN = textwrap.dedent('''
    import json, os, sys
    seen = {}
    try:
        import torch
    except Exception as exc:
        print(json.dumps({"import": f"{type(exc).__name__}: {exc}",
                          "cause": f"{type(exc.__cause__).__name__}: {exc.__cause__}"}))
        sys.exit(0)
    seen["name"] = torch._C._get_privateuse1_backend_name()
    seen["module"] = hasattr(torch, "neuron")
    seen["explicit"] = "torch_neuronx" not in sys.modules
    if seen["module"]:
        acc = torch.accelerator.current_accelerator()
        seen.update(available=torch.neuron.is_available(), count=torch.neuron.device_count(),
                    accelerator=acc.type if acc is not None else None)
    if seen["name"] == "neuron" and seen["count"]:
        x = torch.ones(4, 4, device="neuron")
        seen.update(device=str(x.device), is_neuron=x.is_neuron)
        try:
            f = torch.compile(lambda t: torch.nn.functional.gelu(t) * 2, backend="neuron")
            seen["compiled"] = bool(torch.allclose(f(x).cpu(), torch.nn.functional.gelu(x.cpu()) * 2))
        except Exception as exc:
            seen["compiled"] = type(exc).__name__ + ": " + str(exc).splitlines()[0]
    print(json.dumps(seen))
''')


def seen(standin, **kwargs):
    env = standin.env(**kwargs.pop("env", {}))
    env.update(kwargs)
    out = subprocess.run([str(standin.python), "-c", SEEN], env=env, capture_output=True,
                         text=True, timeout=300, check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_autoload_registers_neuron_as_aws_documents(standin):
    got = seen(standin)
    assert got == {"name": "neuron", "module": True, "explicit": False, "available": True,
                   "count": 2, "accelerator": "neuron", "device": "neuron:0", "is_neuron": True,
                   "compiled": True}


def test_switches(standin):
    off = seen(standin, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert off == {"name": "privateuseone", "module": False, "explicit": True}
    assert seen(standin, env={"explicit_import": "1"})["name"] == "privateuseone"
    failing = seen(standin, env={"autoload_fail": "1"})
    assert failing["import"].startswith("RuntimeError: Failed to load the backend extension: "
                                        "torch_neuronx. You can disable extension auto-loading "
                                        "with TORCH_DEVICE_BACKEND_AUTOLOAD=0.")
    assert "NEURON_STANDIN_AUTOLOAD_FAIL=1" in failing["cause"]
    none = seen(standin, env={"device_count": "0"})
    assert none["count"] == 0 and none["available"] is False


def test_compile_failure_raises_unless_fallback_execution_is_allowed(standin):
    assert seen(standin, env={"compile_fail": "1"})["compiled"].startswith("BackendCompilerFailed")
    assert seen(standin, env={"compile_fail": "1"},
                TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION="0")["compiled"] is True


def test_a_competing_backend_first_keeps_the_registration(standin):
    got = seen(standin, env={}, PYTHONPATH=str(standin.rival))
    assert got == {"name": "rival", "module": False, "explicit": False}


MODELS = textwrap.dedent('''
    import json, torch
    from torch_neuronx import _standin
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
    result = {}
    torch.manual_seed(0)
    for name, model in [
        ("gpt2", GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64,
                                            n_positions=32, bos_token_id=0, eos_token_id=0))),
        ("llama", LlamaForCausalLM(LlamaConfig(num_hidden_layers=1, hidden_size=32,
                                               intermediate_size=64, num_attention_heads=2,
                                               num_key_value_heads=2, vocab_size=64)))]:
        model.eval()
        ids = torch.randint(0, 64, (2, 8))
        expected = model(ids).logits
        _standin.NATIVE_CALLS.clear(); _standin.FALLBACK_CALLS.clear()
        got = model.to("neuron")(ids.to("neuron")).logits
        result[name] = {"device": str(got.device),
                        "close": bool(torch.allclose(got.cpu(), expected, atol=1e-5)),
                        "native": sum(_standin.NATIVE_CALLS.values()),
                        "fallback": sorted(_standin.FALLBACK_CALLS),
                        "native_ops": sorted(_standin.NATIVE_CALLS)}
    result["NATIVE_OPS"] = sorted(_standin.NATIVE_OPS)
    print(json.dumps(result))
''')


@pytest.mark.slow
def test_tiny_transformers_models_run_mostly_native_with_some_ops_on_the_fallback(standin):
    out = subprocess.run([str(standin.python), "-c", MODELS], env=standin.env(), capture_output=True,
                         text=True, timeout=300, check=True).stdout
    got = json.loads(out.splitlines()[-1])
    for name in ("gpt2", "llama"):
        run = got[name]
        assert run["device"] == "neuron:0" and run["close"], name
        assert run["native"] > 5 * len(run["fallback"]) > 0, run
        assert set(run["native_ops"]) <= set(got["NATIVE_OPS"])
        assert not set(run["fallback"]) & set(got["NATIVE_OPS"])
    assert "aten::cos.out" in got["llama"]["fallback"]  # rotary embeddings: left to the fallback
