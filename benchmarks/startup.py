"""Start-up cost: median wall time of `neuronctl --version` as a ratio to `python -c pass`.

Run: .venv/bin/python benchmarks/startup.py [--runs 21]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _timing import median_wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    base = median_wall([sys.executable, "-c", "pass"], args.runs)
    version = median_wall([sys.executable, "-m", "neuronctl", "--version"], args.runs)
    helped = median_wall([sys.executable, "-m", "neuronctl", "--help"], args.runs)
    print(f"python -c pass          {base * 1000:8.1f} ms  1.00x")
    print(f"neuronctl --version     {version * 1000:8.1f} ms  {version / base:.2f}x")
    print(f"neuronctl --help        {helped * 1000:8.1f} ms  {helped / base:.2f}x")


if __name__ == "__main__":
    main()
