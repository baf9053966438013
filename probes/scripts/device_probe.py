# ruff: noqa: UP006, UP035  (runs on Python 3.6+, where builtin generics cannot be subscripted)
"""The device probe tiers, run inside the target interpreter (see probes/device.py).

argv: CHANNEL_FD DEVICE COMPILE(0|1). Writes a hello line, then one JSON line per tier to the
channel, each flushed at once, so a hang or a crash still leaves the tiers before it. Tiers stop
at the first one that does not pass.
"""

import importlib
import importlib.util
import json
import os
import sys
import time
from typing import IO, Any, Callable, Dict, List, Tuple

HELLO = {"probe": "neuronctl-device-probe", "version": 1}
TierResult = Tuple[str, str, Dict[str, Any]]
"""A tier's status, detail and extra fields (parsed back into probes.device.TierResult)."""


class Probe:
    def __init__(self, channel: IO[str], want: str, do_compile: bool) -> None:
        self.channel = channel
        self.want = want
        self.do_compile = do_compile
        self.torch: Any = None
        self.device = want
        self.accelerator: Any = None
        self.generator: Any = None

    def emit(self, record: Dict[str, Any]) -> None:
        self.channel.write(json.dumps(record) + "\n")
        self.channel.flush()

    def run(self, tier: str, body: Callable[[], TierResult]) -> bool:
        """One tier: its line is written at once; False ends the probe."""
        t0 = time.perf_counter()
        try:
            status, detail, extra = body()
        except BaseException as exc:  # torch may raise anything, SystemExit included
            status, detail, extra = "fail", f"{type(exc).__name__}: {first_sentence(exc)}"[:300], {}
        record = {"tier": tier, "status": status, "detail": detail,
                  "ms": round((time.perf_counter() - t0) * 1000, 1)}
        record.update(extra)
        self.emit(record)
        return status == "pass"

    def tier_import(self) -> TierResult:
        self.torch = importlib.import_module("torch")
        version = str(self.torch.__version__)
        return "pass", f"torch {version}", {"torch": version}

    def tier_backend(self) -> TierResult:
        torch, want = self.torch, self.want
        name = torch._C._get_privateuse1_backend_name()
        if name != "neuron" and want in ("auto", "neuron") and importlib.util.find_spec("torch_neuronx"):
            importlib.import_module("torch_neuronx")  # autoload may be off (TORCH_DEVICE_BACKEND_AUTOLOAD=0)
            name = torch._C._get_privateuse1_backend_name()
        if hasattr(torch, "accelerator"):
            try:
                current = torch.accelerator.current_accelerator()
                self.accelerator = current.type if current is not None else None
            except Exception as exc:
                self.accelerator = f"error: {exc}"
        device = want
        if want == "auto":
            device = "neuron" if name == "neuron" else ("cuda" if torch.cuda.is_available() else "cpu")
        self.device = device
        backend = ("the Neuron backend" if name == "neuron"
                   else f"no Neuron backend (torch's extra backend: {name})")
        info = f"device {device}, {backend}, torch.accelerator: {self.accelerator or 'none'}"
        if device == "neuron" and name != "neuron":
            return "fail", f"no 'neuron' backend registered ({info})", {"device": device}
        if device == "cuda" and not torch.cuda.is_available():
            return "fail", f"CUDA not available ({info})", {"device": device}
        return "pass", info, {"device": device}

    def tier_device_count(self) -> TierResult:
        torch, device = self.torch, self.device
        if device == "cpu":
            count = 1
        elif device == "cuda":
            count = torch.cuda.device_count()
        else:
            module = getattr(torch, "neuron", None)
            if hasattr(torch, "accelerator") and self.accelerator == "neuron":
                count = torch.accelerator.device_count()
            elif module is not None and hasattr(module, "device_count"):
                count = module.device_count()
            else:
                raise RuntimeError("no device_count() for the neuron backend")
        if count < 1:
            return "fail", f"{device}: 0 devices visible", {}
        return "pass", f"{count} {device} device(s)", {"count": int(count)}

    def tier_allocate(self) -> TierResult:
        x = self.torch.ones(4, 4, device=self.device)
        return "pass", f"allocated {tuple(x.shape)} on {x.device}", {}

    def tier_op(self) -> TierResult:
        torch, device = self.torch, self.device
        g = self.generator = torch.Generator().manual_seed(0)
        a = torch.randn(64, 64, generator=g)
        b = torch.randn(64, 64, generator=g)
        got = (a.to(device) @ b.to(device) + 1).cpu()
        ref = a @ b + 1
        err = (got - ref).abs().max().item()
        if not torch.allclose(got, ref, rtol=1e-2, atol=1e-2):
            return "fail", f"matmul differs from CPU (max abs error {err:.3g})", {}
        return "pass", f"matmul matches CPU (max abs error {err:.2g})", {}

    def tier_autograd(self) -> TierResult:
        torch = self.torch
        x = torch.randn(8, 8, generator=self.generator)
        xd = x.to(self.device).requires_grad_(True)
        (xd * xd).sum().backward()
        if not torch.allclose(xd.grad.cpu(), 2 * x, rtol=1e-2, atol=1e-2):
            return "fail", "gradient differs from CPU", {}
        return "pass", "backward() matches CPU", {}

    def tier_compile(self) -> TierResult:
        if not self.do_compile:
            return "skip", "opt-in (--compile)", {}
        torch, device = self.torch, self.device
        backend = "neuron" if device == "neuron" else "inductor"
        fn = torch.compile(lambda t: torch.nn.functional.gelu(t) * 2, backend=backend)
        x = torch.randn(16, 16, generator=self.generator)
        got = fn(x.to(device)).cpu()
        if not torch.allclose(got, torch.nn.functional.gelu(x) * 2, rtol=1e-2, atol=1e-2):
            return "fail", f"torch.compile(backend={backend!r}) result differs", {}
        return "pass", f"torch.compile(backend={backend!r}) matches eager", {}

    def tiers(self) -> List[Tuple[str, Callable[[], TierResult]]]:
        return [("import", self.tier_import), ("backend", self.tier_backend),
                ("device_count", self.tier_device_count), ("allocate", self.tier_allocate),
                ("op", self.tier_op), ("autograd", self.tier_autograd),
                ("compile", self.tier_compile)]


def first_sentence(exc: BaseException) -> str:
    text = str(exc).strip()
    text = text.splitlines()[0] if text else ""
    cut = text.find(". ", 40)
    return text[:cut + 1] if cut > 0 else text


def open_channel(argv: List[str]) -> IO[str]:
    """The private channel named in argv, hidden from the code under test: not inherited by
    what it starts, not in its sys.argv, and this folder not on its sys.path."""
    fd = int(argv[1])
    os.set_inheritable(fd, False)
    del sys.argv[1:]
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        del sys.path[0]
    return os.fdopen(fd, "w", encoding="utf-8")


def main() -> int:
    want, do_compile = sys.argv[2], sys.argv[3] == "1"
    probe = Probe(open_channel(sys.argv), want, do_compile)
    probe.emit(HELLO)
    for tier, body in probe.tiers():
        if not probe.run(tier, body):
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
