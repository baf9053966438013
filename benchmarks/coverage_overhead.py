"""`neuronctl coverage`'s two costs, each against a peer measured in the same run.

1. The recorder (a TorchDispatchMode counting every ATen call, plus module hooks) against a plain
   CPU forward of the same model, in one process: the median of several steps each.
   Target: at most 2x.
2. `neuronctl coverage --all --tiny --limit N` (one forked child per architecture) against one
   plain process that builds and runs the same N architectures one after another.
   Target: at most 2x.

Run: .venv/bin/python benchmarks/coverage_overhead.py [--limit 8] [--runs 9]
(HF_HUB_OFFLINE=1 and a temporary HF_HOME are set here: nothing is downloaded.)
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "probes", "scripts", "coverage_model.py")

PEER = """
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("m", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
import transformers
for name in m.causal_archs()[:int(sys.argv[2])]:
    request = {"arch": name, "layers": 2, "tiny": True, "train": False, "dtype": "float32"}
    try:
        model, inputs, _ = m.hf_model(request, torch)
        m.run_step(model, inputs, False, torch)
    except Exception as exc:
        print(name, type(exc).__name__, file=sys.stderr)
"""


def _model_module() -> Any:
    spec = importlib.util.spec_from_file_location("coverage_model", MODEL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recorder_ratio(runs: int, tiny: bool) -> None:
    """Plain and recorded steps taken in turn (a host whose speed drifts drifts for both), each
    after one warm-up of its own; medians."""
    import torch

    m = _model_module()
    request = {"arch": "llama", "layers": 2, "tiny": tiny, "train": False, "dtype": "float32"}
    model, inputs, _ = m.hf_model(request, torch)
    m.run_step(model, inputs, False, torch)
    m.record(model, inputs, False, torch)
    nothing = _nothing_mode()
    plain_ms, recorded_ms, floor_ms = [], [], []
    for _ in range(runs):
        start = time.perf_counter()
        m.run_step(model, inputs, False, torch)
        plain_ms.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        m.record(model, inputs, False, torch)
        recorded_ms.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        with nothing():
            m.run_step(model, inputs, False, torch)
        floor_ms.append((time.perf_counter() - start) * 1000)
    plain, recorded = statistics.median(plain_ms), statistics.median(recorded_ms)
    floor = statistics.median(floor_ms)
    label = "tiny widths" if tiny else "configured widths"
    ratio = recorded / plain
    print(f"llama, 2 layers, {label}: plain forward {plain:8.1f} ms, recorded {recorded:8.1f} ms"
          f"  {ratio:.2f}x  (target <= 2x: {'met' if ratio <= 2 else 'NOT met'}); a dispatch mode "
          f"that does nothing: {floor:.1f} ms, {floor / plain:.2f}x")


def _nothing_mode() -> Any:
    """The floor of any dispatch-level recorder: a TorchDispatchMode that only calls through."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Nothing(TorchDispatchMode):  # type: ignore[misc]
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            return func(*args, **(kwargs or {}))

    return Nothing


def sweep_ratio(limit: int) -> None:
    python = sys.executable
    start = time.perf_counter()
    subprocess.run([python, "-c", PEER, MODEL, str(limit)], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peer = time.perf_counter() - start
    start = time.perf_counter()
    subprocess.run([python, "-m", "neuronctl", "coverage", "--all", "--tiny", "--limit",
                    str(limit), "--python", python, "--json"], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ours = time.perf_counter() - start
    ratio = ours / peer
    print(f"{limit} architectures: one plain process {peer:6.1f} s, coverage --all {ours:6.1f} s"
          f"  {ratio:.2f}x  (target <= 2x: {'met' if ratio <= 2 else 'NOT met'})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--limit", type=int, default=8)
    args = parser.parse_args()
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                      HF_HOME=tempfile.mkdtemp(prefix="neuronctl-bench-hf-"))
    recorder_ratio(args.runs, tiny=False)
    recorder_ratio(args.runs, tiny=True)
    sweep_ratio(args.limit)


if __name__ == "__main__":
    main()
