"""Start-up cost: `neuronctl --version` and `--help` against `python -c pass` and against a bare
`python -c "import click"` (the CLI library every command loads: issue 36 holds start-up at the
ratio it had to it) and `import click, msgspec`, each on neuronctl's own interpreter, runs
interleaved, medians and the ratio run by run.

Run: .venv/bin/python benchmarks/startup.py [--runs 21] [--neuronctl EXE] [--baseline DIR|EXE]

As the other benchmarks, it measures neuronctl installed as a wheel (a fresh install of this
checkout unless --neuronctl names one), not the dev venv's editable import hooks.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lock_vs_pip_uv import neuronctl_options, neuronctls, python_of

PEERS = {"python -c pass": "pass", "import click": "import click",
         "click, msgspec": "import click, msgspec"}
"""The peers, each on neuronctl's interpreter: Python alone; the CLI library; and it with the
library the package's records are made with (msgspec, which every command but --version and
--help loads for its records anyway: what start-up cannot go below while the settings and the
output it reads are records)."""


def commands(neuronctl: Path, baseline: Path | None) -> dict[str, list[str]]:
    python = python_of(neuronctl)
    measured = {"neuronctl --version": [str(neuronctl), "--version"],
                "neuronctl --help": [str(neuronctl), "--help"]}
    if baseline is not None:
        measured["baseline --version"] = [str(baseline), "--version"]
    return {**{name: [python, "-c", code] for name, code in PEERS.items()}, **measured}


def measure(argvs: dict[str, list[str]], runs: int) -> dict[str, list[float]]:
    """Each command once a run, in a rotating order (no command always goes first)."""
    times: dict[str, list[float]] = {name: [] for name in argvs}
    order = list(argvs.items())
    for run in range(runs):
        for name, argv in order[run % len(order):] + order[:run % len(order)]:
            start = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append(time.perf_counter() - start)
    return times


def _paired(wall: list[float], peer: list[float]) -> float:
    return statistics.median(w / p for w, p in zip(wall, peer, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    neuronctl_options(parser)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nctl-startup-"))
    try:
        neuronctl, baseline = neuronctls(tmp, args)
        times = measure(commands(neuronctl, baseline), args.runs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{args.runs} runs, interleaved; medians, and each against its peers run by run")
    print(f"{'':<22}{'ms':>8}" + "".join(f"{'/ ' + peer:>18}" for peer in PEERS))
    for name, wall in times.items():
        ratios = "".join(f"{'x' + format(_paired(wall, times[peer]), '.2f'):>18}" for peer in PEERS)
        print(f"{name:<22}{statistics.median(wall) * 1000:>8.1f}{ratios}")


if __name__ == "__main__":
    main()
