# ruff: noqa: UP006, UP035, UP045  (runs on Python 3.6+, where builtin generics cannot be subscripted)
"""The device probe tiers, run inside the target interpreter (see probes/device.py).

argv: CHANNEL_FD DEVICE COMPILE(0|1). Writes a hello line, then one JSON line per tier to the
channel, each flushed at once, so a hang or a crash still leaves the tiers before it. Tiers stop
at the first one that does not pass.

The Neuron verdict follows AWS's "torch.neuron and torch.accelerator" reference: `import torch`
autoloads torch_neuronx (an explicit import is needed only with TORCH_DEVICE_BACKEND_AUTOLOAD=0),
which creates `torch.neuron`; `torch.neuron.is_available()` and `device_count()` are the check.
The PrivateUse1 backend name is read only to name a competing backend that took it first.
`backend_verdict` decides from the facts gathered, with no torch of its own (tests call it).
"""

import importlib
import importlib.util
import json
import os
import re
import sys
import time
from typing import IO, Any, Callable, Dict, List, Optional, Tuple

HELLO = {"probe": "neuronctl-device-probe", "version": 1}
TierResult = Tuple[str, str, Dict[str, Any]]
"""A tier's status, detail and extra fields (parsed back into probes.device.TierResult)."""
AUTOLOAD = "TORCH_DEVICE_BACKEND_AUTOLOAD"
FALLBACK_EXECUTION = "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"
EXTENSION_FAILED = re.compile(r"Failed to load the backend extension: ([A-Za-z0-9_.\-]{1,100})\. ")


def autoload_on(value: Optional[str]) -> bool:
    """What torch decides from TORCH_DEVICE_BACKEND_AUTOLOAD: on unless set to anything but 1."""
    return value is None or value == "1"


def backend_verdict(f: Dict[str, Any]) -> Tuple[str, str, str, List[str]]:
    """(status, detail, device, warnings) from the facts the backend tier gathered: want,
    registered (torch.neuron exists), autoloaded (it did right after `import torch`), autoload
    (the variable's value), installed (torch-neuronx's version, "" if unknown, None if absent),
    import_error, privateuse1, rival_entry_points, accelerator, cuda."""
    want, warnings = f["want"], []  # type: str, List[str]
    if f["registered"] and want in ("auto", "neuron"):
        if not f["autoloaded"] and autoload_on(f["autoload"]):
            return "fail", (
                "the neuron device registers only on an explicit `import torch_neuronx`: with "
                f"{AUTOLOAD} {describe_autoload(f['autoload'])}, `import torch` alone should load it "
                "(its torch.backends entry point is missing or broken), so `import torch; "
                "x.to('neuron')` fails in code that does not import torch_neuronx"), "neuron", []
        if not f["autoloaded"]:
            warnings.append(f"{AUTOLOAD}={f['autoload']}: torch does not autoload torch_neuronx, so "
                            "code must `import torch_neuronx` before using the neuron device")
        accelerator = f["accelerator"]
        if accelerator != "neuron":
            warnings.append(f"torch.accelerator resolves to {accelerator or 'nothing'}, not neuron "
                            "(AWS: it resolves to neuron only when no other accelerator is present): "
                            f"code written against torch.accelerator {picks(accelerator)}")
        return "pass", f"torch.neuron present {how_loaded(f)}, torch.accelerator: " \
                       f"{accelerator or 'none'}", "neuron", warnings
    trouble = neuron_trouble(f)
    if trouble is not None and (want == "neuron" or (want == "auto" and f["installed"] is not None)):
        return "fail", trouble, "neuron", []
    if want == "neuron":
        return "fail", "no 'neuron' device: torch-neuronx is not installed in this environment", \
                       "neuron", []
    device = want if want != "auto" else ("cuda" if f["cuda"] else "cpu")
    if device == "cuda" and not f["cuda"]:
        return "fail", "CUDA not available", "cuda", []
    why = "" if device != "cpu" or want == "cpu" else " (no Neuron backend and no CUDA here)"
    return "pass", f"device {device}{why}, torch.accelerator: {f['accelerator'] or 'none'}", device, []


def neuron_trouble(f: Dict[str, Any]) -> Optional[str]:
    """Why torch.neuron does not exist, when torch-neuronx is installed or another backend holds
    PrivateUse1; None when there is nothing Neuron to blame."""
    name = f["privateuse1"]
    if name not in ("privateuseone", "neuron"):
        entries = ", ".join(f"{entry} ({dist})" if dist else entry
                            for entry, dist in f["rival_entry_points"])
        return (f"another PrivateUse1 backend, {name!r}, was registered first"
                + (f" (torch.backends entry points: {entries})" if entries else "")
                + ": torch_neuronx leaves the device registration to it and torch.neuron is not "
                  "created; remove that backend or keep it from loading before torch_neuronx")
    if f["installed"] is None:
        return None
    version = f["installed"] or "(version unknown)"
    if f["import_error"]:
        if "WRONG PACKAGE" in f["import_error"]:
            return f"torch-neuronx {version} is the PyPI placeholder, not Neuron's package " \
                   f"(import torch_neuronx: {f['import_error']})"
        return f"import torch_neuronx fails: {f['import_error']}"
    return f"torch-neuronx {version} is installed but registers no 'neuron' device (no torch.neuron)"


def describe_autoload(value: Optional[str]) -> str:
    return "unset (autoload on)" if value is None else f"={value} (autoload on)"


def how_loaded(f: Dict[str, Any]) -> str:
    if f["autoloaded"]:
        return "after `import torch` (autoload)"
    return f"after an explicit `import torch_neuronx` ({AUTOLOAD}={f['autoload']})"


def picks(accelerator: Optional[str]) -> str:
    if accelerator is None:
        return "finds no device"
    return f"picks {accelerator}, not the Neuron device"


class Probe:
    def __init__(self, channel: IO[str], want: str, do_compile: bool) -> None:
        self.channel = channel
        self.want = want
        self.do_compile = do_compile
        self.torch: Any = None
        self.device = want
        self.generator: Any = None
        self.autoloaded = False
        self.user_fallback = os.environ.get(FALLBACK_EXECUTION)
        # The probe's own run: a graph that fails to compile must raise, never run eager and
        # pass as compiled (AWS's default; the user's value is reported by the compile tier).
        os.environ[FALLBACK_EXECUTION] = "1"

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
        record = {"tier": tier, "status": status, "detail": detail[:600],
                  "ms": round((time.perf_counter() - t0) * 1000, 1)}
        record.update(extra)
        self.emit(record)
        return status == "pass"

    def tier_import(self) -> TierResult:
        try:
            self.torch = importlib.import_module("torch")
        except RuntimeError as exc:
            found = EXTENSION_FAILED.search(str(exc))
            if found is None:
                raise
            return autoload_crash(found.group(1), exc.__cause__)
        self.autoloaded = hasattr(self.torch, "neuron")
        version = str(self.torch.__version__)
        return "pass", f"torch {version}", {"torch": version}

    def tier_backend(self) -> TierResult:
        torch, want = self.torch, self.want
        competing = backend_entry_points()
        facts = {"want": want, "autoload": os.environ.get(AUTOLOAD), "autoloaded": self.autoloaded,
                 "installed": installed_version(), "import_error": None,
                 "rival_entry_points": competing}  # type: Dict[str, Any]
        if not hasattr(torch, "neuron") and want in ("auto", "neuron") and facts["installed"] is not None:
            try:  # whether an explicit import would have registered it (autoload off or broken)
                importlib.import_module("torch_neuronx")
            except BaseException as exc:
                facts["import_error"] = f"{type(exc).__name__}: {first_sentence(exc)}"[:300]
        facts.update(registered=hasattr(torch, "neuron"), cuda=bool(torch.cuda.is_available()),
                     privateuse1=str(torch._C._get_privateuse1_backend_name()),
                     accelerator=current_accelerator(torch))
        status, detail, device, warnings = backend_verdict(facts)
        self.device = device
        extra = {"device": device, "autoload": facts["autoload"], "autoloaded": self.autoloaded,
                 "privateuse1": facts["privateuse1"], "accelerator": facts["accelerator"],
                 "torch_neuronx": facts["installed"], "warnings": warnings,
                 "competing": [dist for _, dist in competing if dist]}
        return status, detail, extra

    def tier_device_count(self) -> TierResult:
        torch, device = self.torch, self.device
        if device == "cpu":
            return "pass", "1 cpu device", {"count": 1}
        if device == "cuda":
            count = int(torch.cuda.device_count())
        else:
            available, count = bool(torch.neuron.is_available()), int(torch.neuron.device_count())
            if not available or count < 1:
                return "fail", (f"torch.neuron.is_available() is {available}, device_count() is "
                                f"{count}: torch_neuronx sees no Neuron device (AWS's first checks: "
                                "`neuron-ls` lists the devices; the neuron driver is loaded)"), \
                    {"count": max(count, 0)}
        if count < 1:
            return "fail", f"{device}: 0 devices visible", {"count": 0}
        via = "torch.neuron.device_count()" if device == "neuron" else "torch.cuda.device_count()"
        return "pass", f"{count} {device} device(s) ({via})", {"count": count}

    def tier_allocate(self) -> TierResult:
        x = self.torch.ones(4, 4, device=self.device)
        where = x.device.type
        flag = getattr(x, "is_" + self.device, None) if self.device != "cpu" else None
        if where != self.device or flag is False:
            return "fail", f"torch.ones(device={self.device!r}) made a tensor on {x.device}" + (
                f" (x.is_{self.device} is False)" if flag is False else ""), {}
        shown = f", x.is_{self.device} True" if flag else ""
        return "pass", f"allocated {tuple(x.shape)} on {x.device}{shown}", {}

    def tier_op(self) -> TierResult:
        torch, device = self.torch, self.device
        g = self.generator = torch.Generator().manual_seed(0)
        a = torch.randn(64, 64, generator=g)
        b = torch.randn(64, 64, generator=g)
        result = a.to(device) @ b.to(device) + 1
        if result.device.type != device:
            return "fail", f"the matmul's result is on {result.device}, not {device}", {}
        got, ref = result.cpu(), a @ b + 1
        err = (got - ref).abs().max().item()
        if not torch.allclose(got, ref, rtol=1e-2, atol=1e-2):
            return "fail", f"matmul on {device} differs from CPU (max abs error {err:.3g})", {}
        return "pass", (f"matmul result on {device} matches CPU (max abs error {err:.2g}); this "
                        "proves the result, not where each op ran (a CPU fallback is the "
                        "backend's business)"), {}

    def tier_autograd(self) -> TierResult:
        torch = self.torch
        x = torch.randn(8, 8, generator=self.generator)
        xd = x.to(self.device).requires_grad_(True)
        (xd * xd).sum().backward()
        if not torch.allclose(xd.grad.cpu(), 2 * x, rtol=1e-2, atol=1e-2):
            return "fail", "gradient differs from CPU", {}
        return "pass", "backward() matches CPU", {}

    def tier_compile(self) -> TierResult:
        user = self.user_fallback
        extra = {"fallback_execution": user}  # type: Dict[str, Any]
        if not self.do_compile:
            return "skip", "opt-in (--compile)", extra
        torch, device = self.torch, self.device
        backend = "neuron" if device == "neuron" else "inductor"
        fn = torch.compile(lambda t: torch.nn.functional.gelu(t) * 2, backend=backend)
        x = torch.randn(16, 16, generator=self.generator)
        try:
            got = fn(x.to(device)).cpu()
        except Exception as exc:
            inner = getattr(exc, "inner_exception", None) or exc  # dynamo's BackendCompilerFailed
            return "fail", (f"torch.compile(backend={backend!r}) failed: {type(inner).__name__}: "
                            f"{first_sentence(inner)}"[:400]
                            + (f" ({FALLBACK_EXECUTION}=1 for the probe)" if backend == "neuron"
                               else "")), extra
        if not torch.allclose(got, torch.nn.functional.gelu(x) * 2, rtol=1e-2, atol=1e-2):
            return "fail", f"torch.compile(backend={backend!r}) result differs", extra
        detail = f"torch.compile(backend={backend!r}) matches eager"
        if backend == "neuron" and user is not None and user.strip().lower() in ("0", "false"):
            extra["warnings"] = [f"{FALLBACK_EXECUTION}={user} in this environment: a graph that "
                                 "fails to compile runs eager there, silently; the probe ran with 1"]
        return "pass", detail + f" ({FALLBACK_EXECUTION}=1 for the probe)" * (backend == "neuron"), \
            extra

    def tiers(self) -> List[Tuple[str, Callable[[], TierResult]]]:
        return [("import", self.tier_import), ("backend", self.tier_backend),
                ("device_count", self.tier_device_count), ("allocate", self.tier_allocate),
                ("op", self.tier_op), ("autograd", self.tier_autograd),
                ("compile", self.tier_compile)]


def autoload_crash(package: str, cause: Optional[BaseException]) -> TierResult:
    """`import torch` failed because a backend extension raised while torch autoloaded it."""
    said = f"{type(cause).__name__}: {first_sentence(cause)}" if cause is not None else "an error"
    return "fail", (f"{package} raised while torch autoloaded it ({said[:200]}): the failure is "
                    f"{package}'s, not torch's; to see its own error, run with {AUTOLOAD}=0 and "
                    f"`import torch; import {package}`"), {"extension": package}


def installed_version() -> Optional[str]:
    """torch-neuronx's version from its metadata; "" if only the module is found; None if neither."""
    try:
        from importlib import metadata  # Python 3.8+
        return str(metadata.version("torch-neuronx"))[:64]
    except Exception:
        pass
    return "" if importlib.util.find_spec("torch_neuronx") is not None else None


def backend_entry_points() -> List[Tuple[str, str]]:
    """The torch.backends entry points other than torch_neuronx's (what may take PrivateUse1),
    each with its distribution's name ("" where this Python cannot say)."""
    try:
        from importlib import metadata
        found = metadata.entry_points()  # type: Any
        group = found.select(group="torch.backends") if hasattr(found, "select") \
            else found.get("torch.backends", [])
        pairs = {(str(e.name)[:60], str(getattr(getattr(e, "dist", None), "name", "") or "")[:60])
                 for e in group if e.name != "torch_neuronx"}
        return sorted(pairs)[:5]
    except Exception:
        return []


def current_accelerator(torch: Any) -> Optional[str]:
    if not hasattr(torch, "accelerator"):
        return None
    try:
        current = torch.accelerator.current_accelerator()
    except Exception:
        return None
    return str(current.type) if current is not None else None


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
