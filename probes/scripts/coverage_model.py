# ruff: noqa: UP006, UP035, UP045  (runs in the target interpreter: whatever Python its torch needs, 3.8 on)
"""`neuronctl coverage`'s model and recorder, inside the target interpreter (loaded by path by
coverage_run.py; torch is passed in, transformers imported only for --arch/--model-config).

The model comes from a Hugging Face architecture (`model_type`) or a local config.json, built
from the installed transformers' config class with random weights (nothing downloaded, no hub:
from_config never reads weights, and remote code is never trusted), or from the user's factory
exactly as `smoke` takes it. It runs under a TorchDispatchMode that counts each ATen overload,
with its dtypes and the first module it ran in (global module hooks keep the module stack).
"""

import contextlib
import difflib
import importlib
import os
import runpy
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

SEQUENCE = 8
TINY = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512, "n_embd": 64, "n_head": 4,
        "n_inner": 128, "d_model": 64, "ffn_dim": 128, "moe_intermediate_size": 64,
        "shared_expert_intermediate_size": 64, "num_experts": 4, "num_local_experts": 4,
        "num_experts_per_tok": 2, "kv_lora_rank": 16, "q_lora_rank": 32, "qk_rope_head_dim": 8,
        "qk_nope_head_dim": 8, "v_head_dim": 16, "rotary_dim": 8}
"""--tiny: the width fields a config has are set to these (those it lacks are left alone)."""
LAYER_FIELDS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "encoder_layers",
                "decoder_layers")
DROPPED = ("quantization_config", "auto_map", "_name_or_path")
"""Config keys never honoured: a quantizer needs weights and packages; auto_map is remote code."""


class BadInput(Exception):
    """The model asked for cannot be used as given: the user's mistake (exit 2)."""


class Unbuildable(Exception):
    """An architecture the installed transformers cannot build as configured (a required config
    field, an optional dependency): counted apart, never a failure of the operators."""


def error_text(exc: BaseException) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return (f"{type(exc).__name__}: {first}" if first else type(exc).__name__)[:500]


def out_of_memory(exc: BaseException) -> bool:
    """A Python MemoryError, or torch's allocator refusing (a RuntimeError in its words)."""
    return isinstance(exc, MemoryError) or "can't allocate memory" in str(exc)


def causal_archs() -> List[str]:
    """Every causal-LM (text-generation) model_type the installed transformers knows."""
    auto = importlib.import_module("transformers.models.auto.modeling_auto")
    return sorted(auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def warm(names: List[str]) -> None:
    """Import each architecture's modeling module here, before the sweep forks: every child
    finds it imported (a child's imports die with it). Imports only: a process that has run a
    torch op forks children that deadlock in their first parallel op (the OpenMP pool)."""
    auto = importlib.import_module("transformers.models.auto.modeling_auto")
    configs = importlib.import_module("transformers.models.auto.configuration_auto").CONFIG_MAPPING
    for name in names:
        with contextlib.suppress(Exception):  # the child reports its own failure, with why
            auto.MODEL_FOR_CAUSAL_LM_MAPPING[configs[name]]


def _transformers() -> Any:
    try:
        return importlib.import_module("transformers")
    except ImportError as exc:
        raise BadInput(f"transformers does not import in {sys.executable} ({error_text(exc)}); "
                       "--arch and --model-config build the model with the target's "
                       "transformers") from None


def config_for(request: Dict[str, Any]) -> Any:
    """The config of --arch NAME or --model-config FILE (its JSON, already read and checked)."""
    transformers = _transformers()
    mapping = importlib.import_module("transformers.models.auto.configuration_auto").CONFIG_MAPPING
    values = dict(request.get("config") or {})
    model_type = request.get("arch") or values.get("model_type")
    origin = "--arch" if request.get("arch") else f"--model-config {request.get('config_file')}"
    if model_type not in mapping:
        close = difflib.get_close_matches(str(model_type), list(mapping.keys()), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise BadInput(f"{origin}: transformers {transformers.__version__} knows no architecture "
                       f"{model_type!r}{hint}")
    for key in DROPPED:
        values.pop(key, None)
    values.pop("model_type", None)
    try:
        config = mapping[model_type](**values)
    except Exception as exc:
        raise (BadInput if values else Unbuildable)(f"{origin}: the {model_type} config: "
                                                    f"{error_text(exc)}") from None
    return config


def _set(config: Any, field: str, value: Any) -> None:
    # a derived property (no setter): the config computes it from the fields that are set
    with contextlib.suppress(AttributeError, TypeError, ValueError):
        setattr(config, field, value)


def _token_ids(config: Any) -> List[int]:
    ids: List[int] = []
    for field in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
        value = getattr(config, field, None)
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, int) and not isinstance(item, bool):
                ids.append(item)
    return ids


def shrink(config: Any, layers: int, tiny: bool) -> Any:
    """`layers` layers (every layer-count field the config has), and tiny widths with --tiny
    (the vocabulary still holds the config's special token ids)."""
    for field in LAYER_FIELDS:
        if getattr(config, field, None) is not None:
            _set(config, field, layers)
    value = getattr(config, "layer_types", None)
    if isinstance(value, list) and len(value) > layers:  # per-layer lists follow the new count
        _set(config, "layer_types", value[:layers])
    if tiny:
        for field, width in TINY.items():
            if getattr(config, field, None) is not None:
                _set(config, field, width)
        if getattr(config, "vocab_size", None) is not None:
            _set(config, "vocab_size", max([TINY["vocab_size"]] + [i + 1 for i in _token_ids(config)]))
    for sub in ("text_config", "decoder"):
        inner = getattr(config, sub, None)
        if inner is not None and inner is not config and hasattr(inner, "to_dict"):
            shrink(inner, layers, tiny)
    return config


def hf_model(request: Dict[str, Any], torch: Any) -> Tuple[Any, Any, str]:
    """(model, inputs, label) of --arch or --model-config: a causal LM where transformers maps the
    config to one, else its base model."""
    transformers = _transformers()
    config = shrink(config_for(request), int(request["layers"]), bool(request["tiny"]))
    dtype = getattr(torch, request["dtype"])
    try:
        try:
            model = transformers.AutoModelForCausalLM.from_config(config)
        except ValueError:  # not a causal LM: the base model
            model = transformers.AutoModel.from_config(config)
    except Exception as exc:
        if out_of_memory(exc):  # the sweep's bound, not the architecture: said as such
            raise MemoryError(error_text(exc)) from None
        raise Unbuildable(error_text(exc)) from None
    model = model.to(dtype)
    text = getattr(config, "text_config", None) or config
    vocab = int(getattr(text, "vocab_size", None) or 256)
    ids = torch.randint(0, min(vocab, 1000), (1, SEQUENCE))
    inputs: Dict[str, Any] = {"input_ids": ids}
    if request["train"]:
        inputs["labels"] = ids.clone()
    return model, inputs, str(config.model_type)


def factory_model(request: Dict[str, Any], torch: Any) -> Tuple[Any, Any, str]:
    """(model, inputs, label) from MODULE:FACTORY or a --script defining make(), as smoke takes
    them; a factory that raises or returns the wrong shape is the user's mistake."""
    origin, script, spec = request["origin"], request.get("script"), str(request.get("model"))
    if script:
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
        try:
            namespace = runpy.run_path(script, run_name="__neuronctl_coverage__")
        except Exception as exc:
            raise BadInput(f"{origin} {script}: {error_text(exc)}") from None
        factory, label = namespace.get("make"), f"{script}:make"
        if factory is None:
            raise BadInput(f"{origin} {script}: the script defines no make()")
    else:
        factory, label = import_factory(origin, spec), spec
    if not callable(factory):
        raise BadInput(f"{origin} {label} is not a callable")
    try:
        made = factory()
    except Exception as exc:
        raise BadInput(f"{origin} {label}: the factory raised {error_text(exc)}") from None
    if not isinstance(made, (tuple, list)) or len(made) not in (2, 3):
        raise BadInput(f"{origin} {label}: the factory returned {type(made).__name__}; expected "
                       "(model, example_inputs) or (model, example_inputs, tokens_per_step)")
    model, inputs = made[0], made[1]
    if not isinstance(model, torch.nn.Module):
        raise BadInput(f"{origin} {label}: the factory's model is a {type(model).__name__}, "
                       "not a torch.nn.Module")
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    if not isinstance(inputs, (tuple, list, dict)):
        raise BadInput(f"{origin} {label}: example_inputs is a {type(inputs).__name__}; expected a "
                       "tensor, a tuple or list, or a dict")
    dtype = getattr(torch, request["dtype"])
    return model.to(dtype), cast_inputs(inputs, dtype, torch), label


def cast_inputs(value: Any, dtype: Any, torch: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, dict):
        return type(value)((k, cast_inputs(v, dtype, torch)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return type(value)(cast_inputs(v, dtype, torch) for v in value)
    return value


def import_factory(origin: str, spec: str) -> Any:
    module_name, _, attribute = spec.partition(":")
    sys.path.insert(0, os.getcwd())  # as `python -m` does: the user's project is importable
    try:
        target = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise BadInput(f"{origin} {spec}: no module named {exc.name!r}") from None
        raise BadInput(f"{origin} {spec}: {error_text(exc)}") from None
    except Exception as exc:
        raise BadInput(f"{origin} {spec}: importing it raised {error_text(exc)}") from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise BadInput(f"{origin} {spec}: {module_name} has no attribute {part!r}")
        target = getattr(target, part)
    return target


def op_key(func: Any) -> str:
    """'aten::mm' for a default overload, 'aten::add.Tensor' otherwise (the dispatcher's names)."""
    overload = func._overloadname
    return str(func._schema.name) + ("" if overload == "default" else "." + overload)


class ModuleStack:
    """The module running now, by qualified name, from global forward hooks."""

    def __init__(self, model: Any, torch: Any) -> None:
        self.names = {id(m): (name or type(m).__name__) for name, m in model.named_modules()}
        self.stack: List[str] = []
        self.phase = "(model)"
        hooks = torch.nn.modules.module
        self.handles = [hooks.register_module_forward_pre_hook(self.enter),
                        hooks.register_module_forward_hook(self.leave)]

    def enter(self, module: Any, _args: Any) -> None:
        self.stack.append(self.names.get(id(module), type(module).__name__))

    def leave(self, _module: Any, _args: Any, _out: Any) -> None:
        if self.stack:
            self.stack.pop()

    def where(self) -> str:
        return self.stack[-1] if self.stack else self.phase

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()


def recorder_class(torch: Any) -> Any:
    dispatch = importlib.import_module("torch.utils._python_dispatch")
    tensor = torch.Tensor

    class Recorder(dispatch.TorchDispatchMode):  # type: ignore[misc, name-defined]
        """Each ATen overload: calls, dtypes of its tensor arguments, first module. Kept cheap
        (it runs on every ATen call): one dict lookup by the overload object, arguments looked
        at one level deep (tensors, and lists of them as cat and stack take)."""

        def __init__(self, where: Callable[[], str]) -> None:
            super().__init__()
            self.where = where
            self.ops: Dict[str, Dict[str, Any]] = {}
            self.by_func: Dict[Any, Dict[str, Any]] = {}

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            entry = self.by_func.get(func)
            if entry is None:
                key = op_key(func)
                entry = self.ops.get(key)
                if entry is None:
                    entry = self.ops[key] = {"op": key, "calls": 0, "dtypes": set(),
                                             "module": self.where()}
                self.by_func[func] = entry
            entry["calls"] += 1
            dtypes = entry["dtypes"]
            for arg in args:
                if isinstance(arg, tensor):
                    dtypes.add(arg.dtype)
                elif isinstance(arg, (list, tuple)):
                    dtypes.update(a.dtype for a in arg if isinstance(a, tensor))
            if kwargs:
                dtypes.update(v.dtype for v in kwargs.values() if isinstance(v, tensor))
                return func(*args, **kwargs)
            return func(*args)

    return Recorder
def loss_of(output: Any, torch: Any) -> Any:
    """A model's own loss (transformers with labels), else the sum of its float outputs' means."""
    loss = getattr(output, "loss", None)
    if isinstance(loss, torch.Tensor):
        return loss.float()
    leaves = [t for t in importlib.import_module("torch.utils._pytree").tree_leaves(output)
              if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad]
    if not leaves:
        raise BadInput("with --train the model's output must hold a floating-point tensor that "
                       "requires grad")
    total = leaves[0].float().mean()
    for tensor in leaves[1:]:
        total = total + tensor.float().mean()
    return total


def call(model: Any, inputs: Any) -> Any:
    if isinstance(inputs, dict):
        return model(**inputs)
    return model(*inputs)


def run_step(model: Any, inputs: Any, train: bool, torch: Any,
             stack: Optional[ModuleStack] = None) -> Any:
    """One forward (no grad), or with train a forward, loss, backward and an SGD step."""
    def phase(name: str) -> None:
        if stack is not None:
            stack.phase = name

    model.train(train)
    if not train:
        with torch.no_grad():
            phase("(model)")
            return call(model, inputs)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    optimizer.zero_grad(set_to_none=True)
    phase("(model)")
    output = call(model, inputs)
    phase("(loss)")
    loss = loss_of(output, torch)
    phase("(backward)")
    loss.backward()
    phase("(optimizer)")
    optimizer.step()
    return output


def record(model: Any, inputs: Any, train: bool, torch: Any) -> List[Dict[str, Any]]:
    """The operators one step of the model runs, in the order first seen."""
    stack = ModuleStack(model, torch)
    recorder = recorder_class(torch)(stack.where)
    try:
        with recorder:
            run_step(model, inputs, train, torch, stack)
    finally:
        stack.close()
    return [dict(entry, dtypes=sorted(str(d).replace("torch.", "") for d in entry["dtypes"]))
            for entry in recorder.ops.values()]
