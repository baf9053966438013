"""Device probes, run in the target interpreter as a subprocess with a timeout.

Tiers stop at the first failure: import torch; backend registered; device count; allocate;
an op checked against CPU; autograd; torch.compile (opt-in). A hang, crash or missing torch is a
result, never a hung or crashed neuronctl: each tier's line is flushed as soon as it is known.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

TIERS: tuple[str, ...] = ("import", "backend", "device_count", "allocate", "op", "autograd", "compile")
DEVICES: tuple[str, ...] = ("auto", "neuron", "cuda", "cpu")

PROBE_SCRIPT = r"""
import json, sys, time
want, do_compile = sys.argv[1], sys.argv[2] == "1"
S = {}  # what later tiers need from earlier ones: torch, device, accelerator, generator


def emit(tier, status, detail, t0, **extra):
    rec = {"tier": tier, "status": status, "detail": detail,
           "ms": round((time.perf_counter() - t0) * 1000, 1)}
    rec.update(extra)
    print(json.dumps(rec), flush=True)


def run(tier, body):
    # One tier: its outcome line is flushed at once; a failure or an exception ends the probe.
    t0 = time.perf_counter()
    try:
        status, detail, extra = body()
    except BaseException as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        cut = text.find(". ", 40)
        if cut > 0:
            text = text[:cut + 1]
        emit(tier, "fail", f"{type(exc).__name__}: {text}"[:300], t0)
        sys.exit(0)
    emit(tier, status, detail, t0, **extra)
    if status != "pass":
        sys.exit(0)


def tier_import():
    import torch
    S["torch"] = torch
    return "pass", f"torch {torch.__version__}", {"torch": torch.__version__}


def tier_backend():
    import importlib.util
    torch = S["torch"]
    name = torch._C._get_privateuse1_backend_name()
    if name != "neuron" and want in ("auto", "neuron") and importlib.util.find_spec("torch_neuronx"):
        import torch_neuronx  # autoload may be off (TORCH_DEVICE_BACKEND_AUTOLOAD=0)
        name = torch._C._get_privateuse1_backend_name()
    acc = None
    if hasattr(torch, "accelerator"):
        try:
            cur = torch.accelerator.current_accelerator()
            acc = cur.type if cur is not None else None
        except Exception as exc:
            acc = f"error: {exc}"
    device = want
    if want == "auto":
        device = "neuron" if name == "neuron" else ("cuda" if torch.cuda.is_available() else "cpu")
    S["device"], S["acc"] = device, acc
    info = f"privateuse1 backend {name!r}, torch.accelerator {acc!r}, device {device}"
    if device == "neuron" and name != "neuron":
        return "fail", f"no 'neuron' backend registered ({info})", {"device": device}
    if device == "cuda" and not torch.cuda.is_available():
        return "fail", f"CUDA not available ({info})", {"device": device}
    return "pass", info, {"device": device}


def tier_device_count():
    torch, device = S["torch"], S["device"]
    if device == "cpu":
        count = 1
    elif device == "cuda":
        count = torch.cuda.device_count()
    else:
        mod = getattr(torch, "neuron", None)
        if hasattr(torch, "accelerator") and S["acc"] == "neuron":
            count = torch.accelerator.device_count()
        elif mod is not None and hasattr(mod, "device_count"):
            count = mod.device_count()
        else:
            raise RuntimeError("no device_count() for the neuron backend")
    if count < 1:
        return "fail", f"{device}: 0 devices visible", {}
    return "pass", f"{count} {device} device(s)", {"count": count}


def tier_allocate():
    x = S["torch"].ones(4, 4, device=S["device"])
    return "pass", f"allocated {tuple(x.shape)} on {x.device}", {}


def tier_op():
    torch, device = S["torch"], S["device"]
    g = S["gen"] = torch.Generator().manual_seed(0)
    a = torch.randn(64, 64, generator=g)
    b = torch.randn(64, 64, generator=g)
    got = (a.to(device) @ b.to(device) + 1).cpu()
    ref = a @ b + 1
    err = (got - ref).abs().max().item()
    if not torch.allclose(got, ref, rtol=1e-2, atol=1e-2):
        return "fail", f"matmul differs from CPU (max abs error {err:.3g})", {}
    return "pass", f"matmul matches CPU (max abs error {err:.2g})", {}


def tier_autograd():
    torch = S["torch"]
    x = torch.randn(8, 8, generator=S["gen"])
    xd = x.to(S["device"]).requires_grad_(True)
    (xd * xd).sum().backward()
    if not torch.allclose(xd.grad.cpu(), 2 * x, rtol=1e-2, atol=1e-2):
        return "fail", "gradient differs from CPU", {}
    return "pass", "backward() matches CPU", {}


def tier_compile():
    if not do_compile:
        return "skip", "opt-in (--compile)", {}
    torch, device = S["torch"], S["device"]
    backend = "neuron" if device == "neuron" else "inductor"
    fn = torch.compile(lambda t: torch.nn.functional.gelu(t) * 2, backend=backend)
    x = torch.randn(16, 16, generator=S["gen"])
    got = fn(x.to(device)).cpu()
    if not torch.allclose(got, torch.nn.functional.gelu(x) * 2, rtol=1e-2, atol=1e-2):
        return "fail", f"torch.compile(backend={backend!r}) result differs", {}
    return "pass", f"torch.compile(backend={backend!r}) matches eager", {}


for tier, body in (("import", tier_import), ("backend", tier_backend),
                   ("device_count", tier_device_count), ("allocate", tier_allocate),
                   ("op", tier_op), ("autograd", tier_autograd), ("compile", tier_compile)):
    run(tier, body)
"""

Status = Literal["pass", "fail", "skip"]


@dataclass(frozen=True)
class TierResult:
    tier: str
    status: Status
    detail: str
    ms: float


@dataclass(frozen=True)
class ProbeReport:
    requested: str
    device: str | None
    torch: str | None
    tiers: tuple[TierResult, ...]
    outcome: Literal["ok", "failed", "timeout", "crashed", "no-torch", "error"]
    detail: str
    wall_ms: float

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def failed_tier(self) -> TierResult | None:
        return next((t for t in self.tiers if t.status == "fail"), None)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        return data


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def run_device_probe(python: str, device: str = "auto", timeout: float = 120.0,
                     compile_tier: bool = False, env: Mapping[str, str] | None = None) -> ProbeReport:
    start = time.perf_counter()
    argv = [python, "-c", PROBE_SCRIPT, device, "1" if compile_tier else "0"]
    proc_env = dict(os.environ if env is None else env)
    proc_env.setdefault("PYTHONUNBUFFERED", "1")
    try:
        # A new session so that a hung probe's whole process group can be killed.
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True, env=proc_env,
                                start_new_session=True)
    except OSError as exc:
        return ProbeReport(device, None, None, (), "error", f"cannot run {python}: {exc}", 0.0)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        out, err = proc.communicate()
    wall = round((time.perf_counter() - start) * 1000, 1)
    tiers: list[TierResult] = []
    chosen, torch_version = None, None
    for line in out.splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(rec, dict) or rec.get("tier") not in TIERS:
            continue
        tiers.append(TierResult(rec["tier"], rec["status"], str(rec.get("detail", "")),
                                float(rec.get("ms", 0.0))))
        chosen = rec.get("device", chosen)
        torch_version = rec.get("torch", torch_version)
    next_tier = TIERS[len(tiers)] if len(tiers) < len(TIERS) else None
    if timed_out:
        if next_tier:
            tiers.append(TierResult(next_tier, "fail", f"timed out after {timeout:g}s", wall))
        return ProbeReport(device, chosen, torch_version, tuple(tiers), "timeout",
                           f"probe timed out after {timeout:g}s in tier {next_tier}", wall)
    if proc.returncode and proc.returncode < 0:
        what = _signal_name(proc.returncode)
        if next_tier:
            tiers.append(TierResult(next_tier, "fail", f"process killed by {what}", wall))
        return ProbeReport(device, chosen, torch_version, tuple(tiers), "crashed",
                           f"probe crashed with {what} in tier {next_tier}", wall)
    failed = next((t for t in tiers if t.status == "fail"), None)
    if failed is not None:
        if failed.tier == "import" and "No module named 'torch'" in failed.detail:
            return ProbeReport(device, chosen, None, tuple(tiers), "no-torch",
                               "torch is not installed in the target environment", wall)
        return ProbeReport(device, chosen, torch_version, tuple(tiers), "failed",
                           f"tier {failed.tier} failed: {failed.detail}", wall)
    if proc.returncode != 0 or not tiers:
        last = (err.strip().splitlines() or ["no output"])[-1][:300]
        if next_tier:
            tiers.append(TierResult(next_tier, "fail", f"exit {proc.returncode}: {last}", wall))
        return ProbeReport(device, chosen, torch_version, tuple(tiers), "error",
                           f"probe exited {proc.returncode}: {last}", wall)
    return ProbeReport(device, chosen, torch_version, tuple(tiers), "ok",
                       f"all tiers passed on {chosen}", wall)
