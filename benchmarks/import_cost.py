"""Where the time of a short command goes, by kind: `lock`, and `install --lock` with nothing to
do (with the doctor afterwards and with --no-check), each in a fresh interpreter, with counts of
the modules it loads, the dataclasses it creates and the regexes it compiles, and their time.

    .venv/bin/python benchmarks/import_cost.py [--runs 7]

Each command runs in an interpreter that times two standard-library steps before it imports
neuronctl: `dataclasses._process_class` (the class's methods written as source and compiled,
once per `@dataclass`) and `re._compiler.compile` (a pattern compiled the first time; the `re`
cache is per process). These are private names of CPython, read only here to measure; where an
interpreter lacks one, its column says so. The hooks run in the measured process, so its total
is a little above the plain command's, which is timed in the same runs for comparison.
neuronctl's own records are msgspec Structs (issue 36: the dataclasses they were cost a third of
an install with nothing to do); the dataclasses counted now are the libraries' (packaging.pylock).
The set-up (a loopback index, a lock, a venv with the lock installed) is the same as the install
and lock benchmarks'.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from lock_vs_pip_uv import clean_env, install_neuronctl, python_of, ran, warm_up  # noqa: E402
from support.universe import build_universe, running  # noqa: E402
from support.wheels import find_python  # noqa: E402

# Runs in the measured interpreter: hooks first, then neuronctl's own entry point.
HARNESS = """
import atexit, json, os, re, sys, time
start = time.perf_counter()
import dataclasses
spent = {"dataclasses": [0, 0.0], "regexes": [0, 0.0]}
def timed(kind, fn):
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[kind][0] += 1
            spent[kind][1] += time.perf_counter() - t
    return wrapper
hooked = []
if hasattr(dataclasses, "_process_class"):
    dataclasses._process_class = timed("dataclasses", dataclasses._process_class)
    hooked.append("dataclasses")
try:
    import re._compiler as compiler
except ImportError:
    import sre_compile as compiler
if hasattr(compiler, "compile"):
    compiler.compile = timed("regexes", compiler.compile)
    hooked.append("regexes")
def report():
    with open(os.environ["NEURONCTL_BENCH_OUT"], "w") as fh:
        json.dump({"total": time.perf_counter() - start, "modules": len(sys.modules),
                   "hooked": hooked, **{k: v for k, v in spent.items()}}, fh)
atexit.register(report)
from neuronctl.cli.main import run
run(sys.argv[1:])
"""


def measure(python: str, neuronctl: str, argv: list[str], env: dict[str, str], tmp: Path,
            ) -> tuple[float, dict[str, object]]:
    """The plain command's wall time, then the hooked one's figures, each from its own empty
    neuronctl cache (the second must not find what the first fetched). The harness runs as a file
    in `tmp` (not `-c`, whose sys.path starts with the working directory: a checkout's
    neuronctl/ there would be imported instead of the installed one)."""
    caches = tempfile.mkdtemp(prefix="cache-", dir=tmp)
    start = time.perf_counter()
    ran([neuronctl, *argv], {**env, "NEURONCTL_CACHE_DIR": f"{caches}/plain"})
    plain = time.perf_counter() - start
    harness, out = tmp / "harness.py", tmp / "out.json"
    harness.write_text(HARNESS)
    ran([python, str(harness), *argv], {**env, "NEURONCTL_CACHE_DIR": f"{caches}/hooked",
                                         "NEURONCTL_BENCH_OUT": str(out)})
    return plain, json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nctl-bench-"))
    try:
        neuronctl = install_neuronctl(tmp)
        python = python_of(neuronctl)
        wheels = build_universe(tmp / "wheels", big_compiler=1 << 20)
        with running(wheels) as uni:
            warm_up(uni)
            env = clean_env(tmp)
            env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"  # uv for install
            lock, venv = tmp / "pylock.toml", tmp / "v"
            subprocess.run([str(neuronctl), "lock", *uni.index_flags(), "--python-version", "3.12",
                            "-o", str(lock)], env=env, capture_output=True, check=True)
            subprocess.run([str(Path(sys.executable).with_name("uv")), "venv", "--python",
                            find_python("3.12"), str(venv)], env=env, capture_output=True, check=True)
            install = ["install", "--lock", str(lock), "--python", str(venv), "--engine", "uv"]
            subprocess.run([str(neuronctl), *install], env=env, capture_output=True, check=True)
            commands = {
                "lock": ["lock", *uni.index_flags(), "--python-version", "3.12", "-o",
                         str(tmp / "pylock.again.toml")],
                "install, nothing to do": install,
                "install, nothing to do, --no-check": [*install, "--no-check"],
            }
            found: dict[str, list[tuple[float, dict[str, object]]]] = {name: [] for name in commands}
            for _ in range(args.runs):
                for name, argv in commands.items():
                    found[name].append(measure(python, str(neuronctl), argv, env, tmp))
        _report(found, args.runs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _report(found: dict[str, list[tuple[float, dict[str, object]]]], runs: int) -> None:
    print(f"{runs} runs, medians; 'in process' is from the first import to exit, hooks included")
    print(f"{'command':<36}{'wall':>8}{'in process':>12}{'modules':>9}{'dataclasses':>20}{'regexes':>18}")
    for name, rows in found.items():
        wall = statistics.median(r[0] for r in rows)
        total = statistics.median(float(r[1]["total"]) for r in rows)  # type: ignore[arg-type]
        modules = statistics.median(int(r[1]["modules"]) for r in rows)  # type: ignore[call-overload]
        cells = []
        for kind in ("dataclasses", "regexes"):
            if kind not in rows[0][1]["hooked"]:  # type: ignore[operator]
                cells.append(f"{'not measured':>18}")
                continue
            count = statistics.median(r[1][kind][0] for r in rows)  # type: ignore[index]
            ms = statistics.median(r[1][kind][1] for r in rows) * 1000  # type: ignore[index]
            cells.append(f"{count:>5.0f} {ms:>5.1f} ms {ms / total / 10:>3.0f}%")
        print(f"{name:<36}{wall * 1000:>6.0f}ms{total * 1000:>10.0f}ms{modules:>9.0f}  "
              f"{cells[0]}  {cells[1]}")


if __name__ == "__main__":
    if os.environ.get("NEURONCTL_BENCH_OUT"):
        sys.exit("import_cost.py: NEURONCTL_BENCH_OUT is this benchmark's own variable; unset it")
    main()
