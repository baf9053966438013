"""`neuronctl migrate` over 10,000 generated files, timed against a plain `ast.parse` of the same
files (read and parsed, nothing else: the least any Python-aware scanner spends), in the same
run. Two trees: a repository as one looks (most files hold no trigger word, some CUDA code, a
little XLA code, requirement and CI files), and the worst case, where every file holds a trigger
word so that the pre-filter lets every one through to the parser and the rules. The target is a
ratio of at most 3x (issue 34).

Run: .venv/bin/python benchmarks/migrate_scan.py [--files 10000] [--runs 5]
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.migrate_fixtures import DEVICE_ONLY, TRAIN_XLA

from neuronctl.ops.migrate import MigrateRequest, migrate, native_versions
from neuronctl.release.manifest import load_bundled_manifest

PLAIN = '''\
"""Utilities for module {i}."""
from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass
class Record{i}:
    name: str
    size: int = 0

    def to_json(self) -> str:
        return json.dumps({{"name": self.name, "size": self.size}})


def load_{i}(path):
    with open(path) as fh:
        return [Record{i}(**row) for row in json.load(fh)]


def total_{i}(records):
    return sum(r.size for r in records if r.size > 0)
'''

CUDA = '''\
import torch


def step_{i}(model, batch, optimizer):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = model.to(device)
    x, y = (t.to(device) for t in batch)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()
'''

OTHER = {"requirements-{i}.txt": "torch-neuronx==2.1.2\nnumpy\n",
         "ci-{i}.yml": "env:\n  PJRT_DEVICE: NEURON\nsteps:\n  - run: pytest\n",
         "run-{i}.sh": "#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py\n"}


def make_tree(root: Path, files: int, worst: bool) -> None:
    for i in range(files):
        folder = root / f"pkg{i // 100}"
        folder.mkdir(exist_ok=True)
        kind = i % 20
        if kind < 14 and not worst:
            (folder / f"mod{i}.py").write_text(PLAIN.format(i=i))
        elif kind < 14:  # a trigger word in a comment: parsed, nothing found
            (folder / f"mod{i}.py").write_text("# runs on cuda or neuron\n" + PLAIN.format(i=i))
        elif kind < 18:
            (folder / f"mod{i}.py").write_text(CUDA.format(i=i))
        elif kind == 18:
            (folder / f"mod{i}.py").write_text(TRAIN_XLA if i % 2 else DEVICE_ONLY)
        else:
            name, text = list(OTHER.items())[i % 3]
            (folder / name.format(i=i)).write_text(text)


def parse_all(root: Path) -> int:
    """The baseline: every .py file read and parsed with ast.parse."""
    count = 0
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(".py"):
                ast.parse(Path(folder, name).read_bytes())
                count += 1
    return count


def once(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(base: Callable[[], object], scan: Callable[[], object], runs: int
                ) -> tuple[float, float, float]:
    """Medians of the baseline and the scan, and the median of their run-by-run ratio (each
    scan timed right after its baseline: the fairer figure on a host whose load drifts)."""
    pairs = [(once(base), once(scan)) for _ in range(runs)]
    return (statistics.median(b for b, _ in pairs), statistics.median(s for _, s in pairs),
            statistics.median(s / b for b, s in pairs))


def measure(files: int, runs: int, worst: bool) -> None:
    versions = native_versions(load_bundled_manifest())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_tree(root, files, worst)
        request = MigrateRequest((root,), versions)
        outcome = migrate(request)  # warm: the page cache, the rules' first use
        parsed_py = parse_all(root)
        base, scan, ratio = interleaved(lambda: parse_all(root), lambda: migrate(request), runs)
    label = "worst case (every file a candidate)" if worst else "typical repository"
    print(f"{label}: {files} files ({parsed_py} .py), {outcome.parsed} parsed by migrate, "
          f"{len(outcome.findings)} findings")
    print(f"  ast.parse of every .py: {base:.2f} s ({files / base:,.0f} files/s)")
    print(f"  neuronctl migrate:      {scan:.2f} s ({files / scan:,.0f} files/s)")
    print(f"  ratio migrate / ast.parse: {scan / base:.2f}x of the medians, {ratio:.2f}x run by run "
          "(target <= 3x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for worst in (False, True):
        measure(args.files, args.runs, worst)


if __name__ == "__main__":
    main()
