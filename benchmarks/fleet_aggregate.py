"""Fleet report at 1,000 nodes: reading one srun step's labelled output, grouping by stack
fingerprint and diffing against the baseline, timed against json.loads of the same documents
(the least any reader of those documents must spend), measured in the same run.

Run: .venv/bin/python benchmarks/fleet_aggregate.py [--nodes 1000] [--runs 5]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from neuronctl.cli.fleet_report import render_text
from neuronctl.ops.fleet.aggregate import NodeResult, aggregate
from neuronctl.ops.fleet.srun import MARK, parse_step, read_document

CHECK_IDS = ("python.version", "packages.torch-neuronx", "packages.legacy-xla",
             "packages.placeholders", "packages.coherence", "hardware.chip", "hardware.driver",
             "runtime.compat", "device.probe")


def document(i: int) -> dict[str, Any]:
    """A doctor document the size of a real one (~5 KB): 9 checks with details."""
    doc: dict[str, Any] = {
        "schema": 1, "command": "doctor", "tool": {"name": "neuronctl", "version": "0.1.0"},
        "summary": {"verdict": "pass", "exit_code": 0},
        "checks": [{"id": c, "title": c, "status": "pass", "message": f"{c} fine on node {i}",
                    "fix": None, "duration_ms": 12.5,
                    "details": [f"evidence line {k} for {c}" for k in range(4)]} for c in CHECK_IDS],
        "environment": {"manifest": "bundled manifest", "sysroot": "/",
                        "python": {"version": "3.12.8", "executable": "/fsx/venv/bin/python",
                                   "venv": True, "platform": "linux-x86_64"},
                        "release": {"version": "2.33.0", "backend": "native", "reason": "newest"},
                        "hardware": {"chip": "trn2", "devices": 16, "instance_type": "trn2.48xlarge",
                                     "driver": "2.31.7.0", "runtime": "2.35.30.0"}}}
    if i % 50 == 7:  # 2% on an older driver
        doc["environment"]["hardware"]["driver"] = "2.30.1.0"
    if i % 200 == 3:  # 0.5% with a leftover legacy package
        doc = copy.deepcopy(doc)
        doc["checks"][2]["status"] = "fail"
        doc["summary"] = {"verdict": "fail", "exit_code": 1}
    return doc


def step_output(nodes: int) -> str:
    """What `srun --label` prints for the whole step (tasks' lines interleaved is no harder)."""
    lines = []
    for i in range(nodes):
        name = f"trn2-{i:04d}"
        body = json.dumps(document(i), indent=2).splitlines()
        lines += [f"{i:4d}: {MARK} begin {name}", *(f"{i:4d}: {b}" for b in body),
                  f"{i:4d}: ", f"{i:4d}: {MARK} end {name} 0"]
    return "\n".join(lines) + "\n"


def best_of(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    out = step_output(args.nodes)
    texts = [json.dumps(document(i), indent=2) for i in range(args.nodes)]  # as doctor prints
    parsed = parse_step(out)
    results = [read_document(node, text, code) for node, (text, code) in parsed.items()]
    results += [NodeResult(f"down-{k}", error="not available to Slurm: state down*")
                for k in range(10)]

    peer = best_of(args.runs, lambda: [json.loads(t) for t in texts])
    read = best_of(args.runs, lambda: [read_document(n, t, c) for n, (t, c) in parse_step(out).items()])
    group = best_of(args.runs, lambda: aggregate(results))
    render = best_of(args.runs, lambda: render_text(aggregate(results)))
    report = aggregate(results)
    print(f"{args.nodes} nodes, {len(out) / 1e6:.1f} MB of srun output; "
          f"{len(report.groups)} groups, {len(report.differences)} drifted, "
          f"{len(report.not_answering)} not answering")
    print(f"json.loads of the documents (peer)   {peer * 1000:8.1f} ms  1.00x")
    print(f"read the srun step (split + parse)   {read * 1000:8.1f} ms  {read / peer:.2f}x")
    print(f"group + diff (aggregate)             {group * 1000:8.1f} ms  {group / peer:.2f}x")
    print(f"aggregate + text report              {render * 1000:8.1f} ms  {render / peer:.2f}x")


if __name__ == "__main__":
    main()
