# ruff: noqa: UP006, UP035, UP045  (runs in the target interpreter: whatever Python its torch needs, 3.8 on)
"""`neuronctl coverage` inside the target interpreter (see probes/coverage.py, which parses it).

argv: CHANNEL_FD REQUEST_FILE (JSON, neuronctl's private file). The request's `mode`:
- "one": build one model (coverage_model.py), record the operators of one step on CPU, classify
  them from the installed Neuron backend if there is one, and with device "neuron" run the same
  step on the device and compare it with the CPU run;
- "sweep": the same for each causal-LM architecture, each in a child forked from this process
  (which has imported torch and transformers once), its address space bounded and its time
  limited; one {"type": "arch"} line each;
- "table": every ATen operator the installed backend has a kernel for, or sends to its fallback.

Writes a hello line, {"type": "info"} facts, then {"type": "result"}: "ok", "fail" or
"bad-input" (the model asked for cannot be used: exit 2). Classification asks PyTorch's
dispatcher, never the backend's own words (Routes): a kernel registered for PrivateUse1 is
native; what reaches a PrivateUse1 backend fallback runs on the CPU; the rest is unsupported.
The product never registers a backend itself.
"""

import copy
import importlib
import importlib.util
import json
import os
import re
import resource
import select
import signal
import sys
import time
from typing import IO, Any, Callable, Dict, List, Optional

HELLO = {"coverage": "neuronctl-coverage", "version": 1}
HERE = os.path.dirname(os.path.abspath(__file__))
COMPOSITE_KEYS = ("CompositeExplicitAutogradNonFunctional", "CompositeExplicitAutograd",
                  "CompositeImplicitAutograd")
CHILD_CAP = 8 * 1024 * 1024


def sibling(filename: str, name: str) -> Any:
    """A module beside this script, loaded by path (this folder leaves sys.path)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, filename))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = sibling("coverage_model.py", "neuronctl_coverage_model")
judge = sibling("smoke_compare.py", "neuronctl_coverage_compare")


def emitter(channel: IO[str]) -> Callable[..., None]:
    def emit(kind: str, **fields: Any) -> None:
        channel.write(json.dumps(dict(fields, type=kind)) + "\n")
        channel.flush()
    return emit


def backend(torch: Any) -> Optional[Dict[str, Any]]:
    """The Neuron backend as the dispatcher sees it, or None: PyTorch autoloads torch_neuronx on
    `import torch`; where autoload is off it is imported here (the issue of the device verdict
    judges that; coverage only needs the registrations)."""
    name = torch._C._get_privateuse1_backend_name()
    error = None
    if name != "neuron" and importlib.util.find_spec("torch_neuronx") is not None:
        try:
            importlib.import_module("torch_neuronx")
        except Exception as exc:
            error = build.error_text(exc)
        name = torch._C._get_privateuse1_backend_name()
    if name != "neuron":
        return {"present": False, "error": error, "privateuse1": name} if error else None
    key = torch._C.DispatchKey.PrivateUse1
    return {"present": True, "torch_neuronx": dist_version("torch-neuronx", "torch_neuronx"),
            "fallback": bool(torch._C._dispatch_has_backend_fallback(key))}


def dist_version(dist: str, module: str) -> Optional[str]:
    try:
        return str(importlib.import_module("importlib.metadata").version(dist))
    except Exception:
        loaded = sys.modules.get(module)
        version = getattr(loaded, "__version__", None)
        return str(version) if version is not None else None


class Routes:
    """How PyTorch's dispatcher routes each ATen overload for a PrivateUse1 tensor (the order
    of torch/_ops.py's resolve_key): a kernel of the backend's own is native. A composite kernel
    (CompositeExplicitAutograd[NonFunctional]) runs on any backend, but a structured or factory
    op's composite redispatches to its out= overload's backend kernel (aten::cos -> aten::cos.out,
    aten::arange -> aten::arange.start_out, aten::nll_loss_forward -> its .output): native only
    where the backend has those kernels.
    (An out= overload that is itself composite, generated around the functional op, is not one
    of them: aten::empty_like.out.) What reaches the backend's fallback runs on the CPU; anything
    else is unsupported."""

    def __init__(self, torch: Any, fallback: bool) -> None:
        self.has = torch._C._dispatch_has_kernel_for_dispatch_key
        self.fallback = fallback
        self.outs: Dict[str, List[str]] = {}
        for name in torch._C._dispatch_get_all_op_names():
            base, _, overload = name.partition(".")
            try:  # an out= overload by its schema (aten::nll_loss_forward.output is one)
                schema = torch._C._get_schema(base, overload)
            except RuntimeError:
                continue
            if any(argument.is_out for argument in schema.arguments):
                self.outs.setdefault(base, []).append(name)

    def own(self, name: str) -> bool:
        try:
            return bool(self.has(name, "PrivateUse1"))
        except RuntimeError:  # no such operator in this torch
            return False

    def off_device(self) -> str:
        return "cpu_fallback" if self.fallback else "unsupported"

    def __call__(self, name: str) -> str:
        if self.own(name):
            return "native"
        try:
            composite = any(self.has(name, key) for key in COMPOSITE_KEYS)
        except RuntimeError:
            return "unsupported"
        if not composite:
            return self.off_device()
        outs = [out for out in self.outs.get(name.partition(".")[0], []) if out != name
                and not any(self.has(out, key) for key in COMPOSITE_KEYS)]
        return self.off_device() if any(not self.own(out) for out in outs) else "native"


def classified(ops: List[Dict[str, Any]], found: Optional[Dict[str, Any]], torch: Any) -> None:
    if found and found.get("present"):
        routes = Routes(torch, bool(found["fallback"]))
        for entry in ops:
            entry["class"] = routes(entry["op"])


def make_model(request: Dict[str, Any], torch: Any) -> Any:
    torch.manual_seed(0)
    if request.get("arch") or request.get("config") is not None:
        return build.hf_model(request, torch)
    return build.factory_model(request, torch)


def timed(fn: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    value = fn()
    return value, round((time.perf_counter() - started) * 1000, 3)


def snapshot(model: Any, output: Any, train: bool, torch: Any) -> Dict[str, Any]:
    logits = getattr(output, "logits", None)
    leaves = judge.leaves(logits if logits is not None else output, "output", torch)
    taken = {"outputs": [(p, t.detach().cpu().clone()) for p, t in leaves]}
    if train:
        taken["gradients"] = [(n, None if p.grad is None else p.grad.detach().cpu().clone())
                              for n, p in model.named_parameters()]
    return taken


def on_device(model: Any, inputs: Any, request: Dict[str, Any], cpu: Dict[str, Any],
              torch: Any) -> Dict[str, Any]:
    """The same step on the neuron device, compared with the CPU run (smoke's tolerances)."""
    device, train = request["device"], bool(request["train"])
    moved = model.to(device)
    if callable(getattr(moved, "tie_weights", None)):
        # A backend whose tensors cannot take a CPU parameter's place gives .to() new parameters,
        # untying shared ones (GPT-2's lm_head and wte); transformers ties them again.
        moved.tie_weights()
    moved_inputs = judge_moved(inputs, device, torch)
    output, ms = timed(lambda: build.run_step(moved, moved_inputs, train, torch))
    sync = getattr(getattr(torch, device, None), "synchronize", None)
    if callable(sync):
        sync()
    got = snapshot(moved, output, train, torch)
    compared = {key: judge.compare(got[key], cpu[key], torch) for key in cpu}
    return {"device": device, "device_ms": ms, "compare": compared}


def without_dropout(model: Any, torch: Any) -> Any:
    """Dropout off (p=0) for the comparison: two random masks never match; the recording keeps
    the dropout the model really runs."""
    for module in model.modules():
        if isinstance(module, torch.nn.modules.dropout._DropoutNd):
            module.p = 0.0
    return model


def confirm(reference: Any, request: Dict[str, Any], torch: Any) -> Dict[str, Any]:
    """One step of untouched copies on CPU and on the device, both timed, compared."""
    train = bool(request["train"])
    cpu_model, cpu_inputs = copy.deepcopy(reference)
    device_model, device_inputs = reference
    cpu_model, device_model = without_dropout(cpu_model, torch), without_dropout(device_model, torch)
    torch.manual_seed(0)
    output, cpu_ms = timed(lambda: build.run_step(cpu_model, cpu_inputs, train, torch))
    expected = snapshot(cpu_model, output, train, torch)
    torch.manual_seed(0)
    result = on_device(device_model, device_inputs, request, expected, torch)
    result["cpu_ms"] = cpu_ms
    return result


def judge_moved(value: Any, device: str, torch: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return type(value)((k, judge_moved(v, device, torch)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return type(value)(judge_moved(v, device, torch) for v in value)
    return value


def one(request: Dict[str, Any], torch: Any, found: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """One model's operators (and with a device, its comparison): the result's fields."""
    if request["device"] != "cpu" and not (found and found.get("present")):
        raise RuntimeError(f"--device {request['device']}: no Neuron backend registered in "
                           f"{sys.executable} (privateuse1 backend "
                           f"{torch._C._get_privateuse1_backend_name()!r})")
    try:
        model, inputs, label = make_model(request, torch)
    except build.Unbuildable as exc:
        return {"result": "unbuildable", "error": str(exc)[:500]}
    train = bool(request["train"])
    params = sum(int(p.numel()) for p in model.parameters())
    reference = copy.deepcopy((model, inputs)) if request["device"] != "cpu" else None
    ops, cpu_ms = timed(lambda: build.record(model, inputs, train, torch))
    classified(ops, found, torch)
    result = {"result": "ok", "model": label, "params": params, "operators": ops, "cpu_ms": cpu_ms}
    if reference is not None:
        result["confirm"] = confirm(reference, request, torch)
    return result


def child_run(request: Dict[str, Any], torch: Any, found: Optional[Dict[str, Any]], fd: int,
              memory_mb: int) -> None:
    """In a forked child: bound the address space, run one architecture, write its result."""
    extra = memory_mb * 1024 * 1024
    with open("/proc/self/statm") as statm:  # what the parent already maps stays allowed
        mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (mapped + extra, mapped + extra))
    try:
        result = one(request, torch, found)
    except build.BadInput as exc:
        result = {"result": "unbuildable", "error": str(exc)[:500]}
    except BaseException as exc:
        result = {"result": "fail", "error": build.error_text(exc)}
        if build.out_of_memory(exc):
            result["error"] = f"out of memory: the child's bound, --memory-mb {memory_mb}, was reached"
    with os.fdopen(fd, "wb") as out:
        out.write(json.dumps(result).encode()[:CHILD_CAP])
    os._exit(0)


def wait_child(pid: int, fd: int, timeout: float) -> Dict[str, Any]:
    """The child's result, or why there is none (its time ran out, it died)."""
    deadline, chunks = time.monotonic() + timeout, []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(fd)
            return {"result": "timeout", "error": f"no result within {timeout:g}s"}
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    try:
        return dict(json.loads(b"".join(chunks)))
    except ValueError:
        if os.WIFSIGNALED(status):
            return {"result": "crashed", "error": f"killed by signal {os.WTERMSIG(status)}"}
        return {"result": "crashed", "error": "ended without a result"}


def sweep(request: Dict[str, Any], torch: Any, found: Optional[Dict[str, Any]],
          emit: Callable[..., None]) -> Dict[str, Any]:
    importlib.import_module("transformers")  # once, here: each fork finds it imported
    names = build.causal_archs()
    if request.get("arch_filter"):
        pattern = re.compile(request["arch_filter"])
        names = [n for n in names if pattern.search(n)]
    if request.get("limit"):
        names = names[:int(request["limit"])]
    emit("info", archs=len(names))
    build.warm(names)
    for i, name in enumerate(names, 1):
        read, write = os.pipe()
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child never returns into this loop, whatever happens in it
            try:
                os.close(read)
                child_run(dict(request, arch=name), torch, found, write, int(request["memory_mb"]))
            finally:
                os._exit(1)
        os.close(write)
        result = wait_child(pid, read, float(request["arch_timeout"]))
        result.update(name=name, i=i, n=len(names),
                      wall_ms=round((time.perf_counter() - started) * 1000, 1))
        emit("arch", **result)
    return {"result": "ok"}


def table(torch: Any, found: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    if not found or not found.get("present"):
        why = f" ({found['error']})" if found and found.get("error") else ""
        return {"result": "fail", "error": f"no Neuron backend in {sys.executable}: torch_neuronx "
                                           f"is not installed or did not register 'neuron'{why}"}
    ops, routes = {}, Routes(torch, bool(found["fallback"]))
    for name in sorted(torch._C._dispatch_get_all_op_names()):
        if not name.startswith("aten::"):
            continue
        key = name if "." in name.partition("::")[2] else name + ".default"
        ops[key] = {"native": "Y", "cpu_fallback": "CPU_FALLBACK", "unsupported": "N"}[routes(name)]
    return {"result": "ok", "ops": ops}


def open_channel(argv: List[str]) -> IO[str]:
    fd = int(argv[1])
    os.set_inheritable(fd, False)
    del sys.argv[1:]
    if sys.path and os.path.abspath(sys.path[0] or ".") == HERE:
        del sys.path[0]
    return os.fdopen(fd, "w", encoding="utf-8")


def main() -> int:
    with open(sys.argv[2], encoding="utf-8") as handle:  # written by neuronctl, read once
        request = json.load(handle)
    emit = emitter(open_channel(sys.argv))
    emit("hello", **HELLO)
    try:
        torch = importlib.import_module("torch")
        found = backend(torch)
        emit("info", torch=str(torch.__version__), backend=found,
             transformers=dist_version("transformers", "transformers"))
        mode = request["mode"]
        if mode == "table":
            emit("result", **table(torch, found))
        elif mode == "sweep":
            emit("result", **sweep(request, torch, found, emit))
        else:
            emit("result", **one(request, torch, found))
    except build.BadInput as exc:
        emit("result", result="bad-input", error=str(exc)[:500])
    except BaseException as exc:  # the model may raise anything, SystemExit included
        emit("result", result="fail", error=build.error_text(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
