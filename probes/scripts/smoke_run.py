# ruff: noqa: UP006, UP035, UP045  (runs in the target interpreter: whatever Python its torch needs, 3.8 on)
"""A model's smoke run, inside the target interpreter (see probes/smoke.py, which parses it).

argv: CHANNEL_FD REQUEST_JSON, the request holding model (MODULE:FACTORY or null), script (a path
or null), origin (the flag or config key that named the model, for messages), device, warmup,
steps, train and compile.

Writes a hello line, then one JSON object a line, each flushed at once so that a hang or a crash
still leaves what came before it: {"type": "stage"} when a stage begins (STAGES, in order),
{"type": "info"} facts, {"type": "step"} after each warm-up or timed step, and last
{"type": "result"}: "ok", "fail" (the model raised, or disagrees with CPU) or "bad-input" (the
model cannot be found, or its factory returns the wrong thing: the user's mistake, exit 2).

The CPU reference is a deep copy of the model and its inputs taken before anything is moved to
the device; it never goes through `.to()`. The outputs (and with train, the gradients) of the
first device step are compared with one step of that copy on CPU (smoke_compare.py); what the
model leaves running is killed as this interpreter exits (descendants.py). Both, and the built-in
reference model, are files beside this one, loaded by path (sibling()).
"""

import contextlib
import copy
import importlib
import importlib.util
import json
import os
import runpy
import sys
import time
import traceback
from typing import IO, Any, Callable, Dict, List, Optional, Tuple

HELLO = {"smoke": "neuronctl-smoke", "version": 1}
STAGES = ("import", "device", "load", "build", "move", "warmup", "steps", "reference", "compare")
LEARNING_RATE = 1e-3
HERE = os.path.dirname(os.path.abspath(__file__))


def sibling(filename: str, name: str) -> Any:
    """A module beside this script, loaded by its path, never by name: this folder leaves
    sys.path (open_channel), and a module the target's start-up code put in sys.modules under
    that name must never stand in for it."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, filename))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


judge = sibling("smoke_compare.py", "neuronctl_smoke_compare")
reaper = sibling("descendants.py", "neuronctl_smoke_descendants")
leaves, compare = judge.leaves, judge.compare
OWN_FILES = (os.path.abspath(__file__), judge.__file__, reaper.__file__)
"""Where a traceback's frames are this script's own, not the model's (see where())."""


class BadInput(Exception):
    """The model named cannot be used as given: the user's mistake, reported as such."""


class Mismatch(Exception):
    def __init__(self, message: str, comparisons: Dict[str, Any]) -> None:
        super().__init__(message)
        self.comparisons = comparisons


def emitter(channel: IO[str]) -> Callable[..., None]:
    def emit(kind: str, **fields: Any) -> None:
        channel.write(json.dumps(dict(fields, type=kind)) + "\n")
        channel.flush()
    return emit


def moved(value: Any, device: str, torch: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return type(value)((key, moved(item, device, torch)) for key, item in value.items())
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(moved(item, device, torch) for item in value)
    return value


def call(fn: Callable[..., Any], inputs: Any) -> Any:
    if isinstance(inputs, dict):
        return fn(**inputs)
    if isinstance(inputs, (list, tuple)):
        return fn(*inputs)
    return fn(inputs)


class SmokeRun:
    def __init__(self, emit: Callable[..., None], request: Dict[str, Any]) -> None:
        self.emit = emit
        self.request = request
        self.stage = ""
        self.step = 0
        self.torch: Any = None
        self.device = str(request["device"])

    def begin(self, stage: str) -> None:
        self.stage, self.step = stage, 0
        self.emit("stage", stage=stage)

    def run(self) -> Dict[str, Any]:
        self.begin("import")
        if self.request["compile"]:
            # A graph that fails to compile must raise, not run eager and be timed as compiled
            # (AWS's default for torch.compile(backend="neuron")); the user's value is reported.
            user = os.environ.get("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION")
            os.environ["TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"] = "1"
            if user is not None:
                self.emit("info", fallback_execution=user[:40])
        torch = self.torch = importlib.import_module("torch")
        self.emit("info", torch=str(torch.__version__))
        self.begin("device")
        self.device = self.pick_device()
        self.emit("info", device=self.device)
        self.begin("load")
        factory = self.load_factory()
        self.begin("build")
        model, inputs, _tokens = self.build(factory)
        self.begin("move")
        reference, reference_inputs = copy.deepcopy(model), copy.deepcopy(inputs)
        model, inputs = model.to(self.device), moved(inputs, self.device, torch)
        fn, optimizer = self.prepare(model)
        self.begin("warmup")
        self.reset_peak_memory()
        first: Optional[Dict[str, List[Tuple[str, Any]]]] = None
        for _ in range(int(self.request["warmup"])):
            output = self.timed_step("warmup", fn, model, inputs, optimizer)
            if first is None:
                first = self.snapshot(model, output)
        self.begin("steps")
        for _ in range(int(self.request["steps"])):
            self.timed_step("timed", fn, model, inputs, optimizer)
        peak = self.peak_memory()
        self.begin("reference")
        reference_fn, reference_optimizer = self.prepare(reference)
        reference_output = self.one_step(reference_fn, reference, reference_inputs, reference_optimizer)
        expected = self.snapshot(reference, reference_output)
        self.begin("compare")
        assert first is not None
        comparisons = {key: compare(first[key], expected[key], torch) for key in expected}
        failed = [key for key, result in comparisons.items() if not result["ok"]]
        if failed:
            raise Mismatch(" and ".join(failed) + " differ from CPU", comparisons)
        return {"compare": comparisons, "peak_memory_bytes": peak}

    def pick_device(self) -> str:
        """The device, from what AWS documents: `import torch` autoloads torch_neuronx (an
        explicit import only with TORCH_DEVICE_BACKEND_AUTOLOAD=0), which creates torch.neuron;
        torch.neuron.is_available() and device_count() say whether there is a device."""
        torch, want = self.torch, self.device
        autoload = os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD")
        installed = importlib.util.find_spec("torch_neuronx") is not None
        if want in ("auto", "neuron") and not hasattr(torch, "neuron") and installed:
            if autoload is None or autoload == "1":
                raise RuntimeError("torch_neuronx is installed but `import torch` did not create "
                                   "torch.neuron (autoload on): `neuronctl probe` says why")
            importlib.import_module("torch_neuronx")  # autoload off: the documented explicit import
        neuron = getattr(torch, "neuron", None)
        usable = neuron is not None and bool(neuron.is_available()) and int(neuron.device_count()) > 0
        if want == "auto":
            return "neuron" if usable else ("cuda" if torch.cuda.is_available() else "cpu")
        if want == "neuron" and not usable:
            raise RuntimeError(self.no_neuron(neuron, installed))
        if want == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(f"CUDA not available in this torch {torch.__version__}")
        return want

    def no_neuron(self, neuron: Any, installed: bool) -> str:
        """Why --device neuron cannot run here."""
        if neuron is not None:
            return (f"no Neuron device: torch.neuron.is_available() is {neuron.is_available()}, "
                    f"device_count() is {neuron.device_count()}")
        taken = self.torch._C._get_privateuse1_backend_name()
        if taken not in ("privateuseone", "neuron"):
            return (f"no Neuron device: another PrivateUse1 backend, {taken!r}, was registered "
                    "first, so torch.neuron was not created")
        if not installed:
            return (f"no Neuron device: torch-neuronx is not installed for {sys.executable} "
                    "(torch.neuron does not exist)")
        return "no Neuron device: torch_neuronx did not create torch.neuron"

    def load_factory(self) -> Callable[..., Any]:
        origin, script, spec = self.request["origin"], self.request["script"], self.request["model"]
        if script:
            if not os.path.isfile(script):
                raise BadInput(f"{origin} {script}: no such file")
            sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
            # Not "__main__": the script's own `if __name__ == "__main__":` training must not run.
            namespace = runpy.run_path(script, run_name="__neuronctl_smoke__")
            factory = namespace.get("make")
            what = f"{origin} {script}: make"
            if factory is None:
                raise BadInput(f"{origin} {script}: the script defines no make()")
        elif spec:
            factory, what = self.import_factory(origin, spec), f"{origin} {spec}"
        else:
            module = sibling("reference_model.py", "neuronctl_reference_model")
            factory, what = module.make, "the built-in reference model"
        if not callable(factory):
            raise BadInput(f"{what} is {describe(factory)}, not a callable")
        return factory  # type: ignore[no-any-return]

    def import_factory(self, origin: str, spec: str) -> Any:
        module_name, _, attribute = spec.partition(":")
        sys.path.insert(0, os.getcwd())  # as `python -m` does: the user's project is importable
        try:
            target = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if missing and (module_name == missing or module_name.startswith(missing + ".")):
                raise BadInput(f"{origin} {spec}: no module named {missing!r} (looked in the current "
                               f"directory and {sys.executable}'s sys.path)") from None
            raise  # the module exists, and its own imports fail: the model's error
        for part in attribute.split("."):
            if not hasattr(target, part):
                owner = getattr(target, "__name__", module_name)
                raise BadInput(f"{origin} {spec}: {owner} has no attribute {part!r}")
            target = getattr(target, part)
        return target

    def build(self, factory: Callable[..., Any]) -> Tuple[Any, Any, Optional[int]]:
        torch = self.torch
        torch.manual_seed(0)
        made = factory()
        shape = "(model, example_inputs) or (model, example_inputs, tokens_per_step)"
        if not isinstance(made, (tuple, list)) or len(made) not in (2, 3):
            raise BadInput(f"the factory returned {describe(made)}; expected {shape}")
        model, inputs = made[0], made[1]
        tokens = made[2] if len(made) == 3 else None
        if not isinstance(model, torch.nn.Module):
            raise BadInput(f"the factory's model is {describe(model)}; expected a torch.nn.Module")
        if isinstance(inputs, torch.Tensor):
            inputs = (inputs,)
        if not isinstance(inputs, (tuple, list, dict)):
            raise BadInput(f"the factory's example_inputs is {describe(inputs)}; expected a tensor, a "
                           "tuple or list of positional arguments, or a dict of keyword arguments")
        if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1):
            raise BadInput(f"the factory's tokens_per_step is {describe(tokens)}; expected a whole "
                           "number above 0")
        parameters = list(model.parameters())
        dtype = str(parameters[0].dtype).replace("torch.", "") if parameters else None
        self.emit("info", params=sum(int(p.numel()) for p in parameters), dtype=dtype,
                  tokens_per_step=tokens)
        return model, inputs, tokens

    def prepare(self, model: Any) -> Tuple[Callable[..., Any], Any]:
        torch, train = self.torch, bool(self.request["train"])
        model.train(train)
        optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE) if train else None
        fn = model
        if self.request["compile"] and self.stage != "reference":
            fn = torch.compile(model, backend="neuron" if self.device == "neuron" else "inductor")
        return fn, optimizer

    def one_step(self, fn: Callable[..., Any], model: Any, inputs: Any, optimizer: Any) -> Any:
        torch = self.torch
        if optimizer is None:
            with torch.no_grad():
                return call(fn, inputs)
        optimizer.zero_grad(set_to_none=True)
        output = call(fn, inputs)
        floats = [t for _, t in leaves(output, "output", torch) if t.is_floating_point() and t.requires_grad]
        if not floats:
            raise BadInput("with --train the model's output must hold a floating-point tensor that "
                           "requires grad (the loss is the sum of their means)")
        loss = floats[0].float().mean()
        for tensor in floats[1:]:
            loss = loss + tensor.float().mean()
        loss.backward()
        optimizer.step()  # plain SGD leaves .grad as it is: the snapshot after it still sees it
        return output

    def timed_step(self, phase: str, fn: Callable[..., Any], model: Any, inputs: Any,
                   optimizer: Any) -> Any:
        self.step += 1
        started = time.perf_counter()
        output = self.one_step(fn, model, inputs, optimizer)
        self.synchronize(output)
        self.emit("step", phase=phase, i=self.step, ms=round((time.perf_counter() - started) * 1000, 3))
        return output

    def snapshot(self, model: Any, output: Any) -> Dict[str, List[Tuple[str, Any]]]:
        outputs = leaves(output, "output", self.torch)
        taken = {"outputs": [(path, t.detach().cpu().clone()) for path, t in outputs]}
        if self.request["train"]:
            taken["gradients"] = [(name, None if p.grad is None else p.grad.detach().cpu().clone())
                                  for name, p in model.named_parameters()]
        return taken

    def backend_call(self, name: str) -> Any:
        """The device module's `name` (torch.neuron, torch.cuda); torch.accelerator's only where
        it is the device under test: with another accelerator present (AWS: torch.accelerator
        resolves to neuron only when there is none), its memory and its synchronize are not
        this device's."""
        owners = [getattr(self.torch, self.device, None)]
        accelerator = getattr(self.torch, "accelerator", None)
        try:
            current = accelerator.current_accelerator() if accelerator is not None else None
        except Exception:
            current = None
        if current is not None and current.type == self.device:
            owners.append(accelerator)
        failure: Exception = AttributeError(f"{name}: not offered by the {self.device} backend")
        for owner in owners:
            function = getattr(owner, name, None)
            if callable(function):
                try:
                    return function()
                except Exception as exc:
                    failure = exc
        raise failure

    def synchronize(self, output: Any) -> None:
        """Wait for the device to finish the step (its ops are queued, not done, when they return)."""
        if self.device == "cpu":
            return
        try:
            self.backend_call("synchronize")
        except AttributeError:  # no synchronize anywhere: reading a value back waits as well
            for _, tensor in leaves(output, "output", self.torch)[:1]:
                tensor.reshape(-1)[:1].cpu()

    def reset_peak_memory(self) -> None:
        if self.device != "cpu":
            with contextlib.suppress(Exception):  # not every backend keeps memory statistics
                self.backend_call("reset_peak_memory_stats")

    def peak_memory(self) -> Optional[int]:
        if self.device == "cpu":
            return None
        try:
            return int(self.backend_call("max_memory_allocated"))
        except Exception:
            return None


def describe(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} item(s)"
    name = type(value).__name__
    return "None" if value is None else f"{'an' if name[0] in 'aeiouAEIOU' else 'a'} {name}"


def error_text(exc: BaseException) -> str:
    inner = getattr(exc, "inner_exception", None)  # dynamo's BackendCompilerFailed: the backend's
    if isinstance(inner, BaseException):
        return f"{type(exc).__name__}: {error_text(inner)}"[:500]
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return (f"{type(exc).__name__}: {first}" if first else type(exc).__name__)[:500]


def where(exc: BaseException) -> Optional[str]:
    """file:line of the innermost frame outside this script and its helpers (usually the model's
    own code)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename not in OWN_FILES]
    return f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else None


def open_channel(argv: List[str]) -> IO[str]:
    """The private channel named in argv, hidden from the code under test: not inherited by
    what it starts, not in its sys.argv, and this folder not on its sys.path."""
    fd = int(argv[1])
    os.set_inheritable(fd, False)
    del sys.argv[1:]
    if sys.path and os.path.abspath(sys.path[0] or ".") == HERE:
        del sys.path[0]
    return os.fdopen(fd, "w", encoding="utf-8")


def main() -> int:
    reaper.become_subreaper()
    import atexit

    atexit.register(reaper.end_descendants)  # the first registered runs last
    request = json.loads(sys.argv[2])
    emit = emitter(open_channel(sys.argv))
    emit("hello", **HELLO)
    smoke = SmokeRun(emit, request)
    try:
        emit("result", result="ok", **smoke.run())
    except BadInput as exc:
        emit("result", result="bad-input", error=str(exc)[:500])
    except Mismatch as exc:
        emit("result", result="fail", error=str(exc), compare=exc.comparisons)
    except BaseException as exc:  # the model may raise anything, SystemExit included
        emit("result", result="fail", error=error_text(exc), where=where(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
