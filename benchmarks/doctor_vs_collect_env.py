"""`neuronctl env` and `neuronctl doctor --no-device-probe` against torch's own collect_env.

Run: .venv/bin/python benchmarks/doctor_vs_collect_env.py [--runs 5]
Target: doctor without the device probe at most 0.25x of `python -m torch.utils.collect_env`.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _timing import median_wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true")
    peer = median_wall([sys.executable, "-m", "torch.utils.collect_env"], args.runs, env)
    dump = median_wall([sys.executable, "-m", "neuronctl", "env"], args.runs, env)
    doctor = median_wall([sys.executable, "-m", "neuronctl", "doctor", "--no-device-probe"],
                         args.runs, env)
    print(f"python -m torch.utils.collect_env   {peer * 1000:8.1f} ms  1.00x")
    print(f"neuronctl env                       {dump * 1000:8.1f} ms  {dump / peer:.2f}x")
    print(f"neuronctl doctor --no-device-probe  {doctor * 1000:8.1f} ms  {doctor / peer:.2f}x"
          f"  (target <= 0.25x: {'met' if doctor / peer <= 0.25 else 'NOT met'})")


if __name__ == "__main__":
    main()
