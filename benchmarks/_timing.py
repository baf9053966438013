"""Shared timing helper for the benchmark scripts: median wall time of a command."""

from __future__ import annotations

import os
import statistics
import subprocess
import time


def median_wall(argv: list[str], runs: int, env: dict[str, str] | None = None) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                       env=env or dict(os.environ))
        times.append(time.perf_counter() - start)
    return statistics.median(times)
