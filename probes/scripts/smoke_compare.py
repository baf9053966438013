# ruff: noqa: UP006, UP035, B905  (runs in the target interpreter: whatever Python its torch needs, 3.8 on)
"""The smoke run's judgement: the device's first step against the same step on CPU, tensor by
tensor, each held to its dtype's tolerance. Loaded by path by smoke_run.py inside the target
interpreter; torch is passed in, never imported here.
"""

from typing import Any, Dict, List, Tuple

# (rtol, atol) per dtype; atol is a fraction of the tensor's largest reference value, so a
# tensor of tiny gradients is held to its own scale. Loose enough for a backend that computes
# float32 matmuls at reduced precision, tight enough that a wrong result never passes.
TOLERANCES = {"float64": (1e-6, 1e-8), "float32": (1e-2, 1e-3), "float16": (1e-2, 5e-3),
              "bfloat16": (5e-2, 2e-2)}
LOOSEST = (1e-1, 1e-1)  # float8 and other narrow types


def leaves(value: Any, path: str, torch: Any) -> List[Tuple[str, Any]]:
    """The tensors in an output or an input (tuples, lists, dicts, nested), with their paths."""
    if isinstance(value, torch.Tensor):
        return [(path, value)]
    if isinstance(value, dict):
        return [leaf for key in value for leaf in leaves(value[key], f"{path}[{key!r}]", torch)]
    if isinstance(value, (list, tuple)):
        return [leaf for i, item in enumerate(value) for leaf in leaves(item, f"{path}[{i}]", torch)]
    return []


def tensor_error(got: Any, want: Any, torch: Any) -> Dict[str, Any]:
    """One pair's max abs and max rel error (relative to the reference's largest finite value),
    and whether it is within its dtype's tolerance (NaN matches NaN, inf the same inf)."""
    name = str(want.dtype).replace("torch.", "")
    rtol, atol = TOLERANCES.get(name, LOOSEST) if want.is_floating_point() else (0.0, 0.0)
    a, b = got.detach().double(), want.detach().double()
    finite = torch.isfinite(b)
    scale = float(b[finite].abs().max()) if bool(finite.any()) else 0.0
    diff = (a - b).abs()[finite & torch.isfinite(a)]
    max_abs = float(diff.max()) if diff.numel() else 0.0
    ok = bool(torch.isclose(a, b, rtol=rtol, atol=atol * scale, equal_nan=True).all())
    return {"ok": ok, "max_abs": max_abs, "max_rel": max_abs / scale if scale > 0 else max_abs,
            "dtype": name, "rtol": rtol, "atol": atol}


def compare(got: List[Tuple[str, Any]], want: List[Tuple[str, Any]], torch: Any) -> Dict[str, Any]:
    """The worst tensor's errors over every pair, and whether every pair is within tolerance;
    the first pair that is not stops the comparison and is the one reported."""
    summary: Dict[str, Any] = {"ok": True, "max_abs": 0.0, "max_rel": 0.0, "worst": None,
                               "tensors": len(want), "dtype": None, "rtol": None, "atol": None,
                               "problem": None}
    if [path for path, _ in got] != [path for path, _ in want]:
        summary.update(ok=False, problem="the device run and the CPU run give different tensors")
        return summary
    for (path, a), (_, b) in zip(got, want):
        if a is None or b is None:
            if (a is None) != (b is None):
                summary.update(ok=False, worst=path, problem=f"{path}: on one side only")
                return summary
            continue
        if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
            summary.update(ok=False, worst=path, problem=f"{path}: {tuple(a.shape)} {a.dtype} on the "
                                                         f"device, {tuple(b.shape)} {b.dtype} on CPU")
            return summary
        error = tensor_error(a, b, torch)
        if not error["ok"] or summary["worst"] is None or error["max_rel"] > summary["max_rel"]:
            summary.update(error, ok=summary["ok"], worst=path)
        if not error["ok"]:
            summary.update(ok=False, problem=None if error["max_abs"] else f"{path}: NaN or inf where the "
                           "other side has a number")
            return summary
    return summary
