"""neuronctl install --lock vs the raw engines it drives, on the same loopback indexes:
`uv venv && uv pip install -r pylock.toml` and `python -m venv && pip install --require-hashes -r
requirements.txt`. Each run starts from a new venv and empty caches.

    .venv/bin/python benchmarks/install_vs_engines.py [--size-mb 100] [--runs 3]

Prints median wall times and the overhead ratio of neuronctl over each raw engine, with the
after-install doctor (the default) and without it (--no-check). Target (issue 5): <= 1.20.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from lock_vs_pip_uv import clean_env, install_neuronctl, warm_up  # noqa: E402
from universe import build_universe, running  # noqa: E402
from wheels import find_python  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--neuronctl", type=Path)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nctl-bench-"))
    py312 = find_python("3.12")
    uv = str(Path(sys.executable).with_name("uv"))
    try:
        neuronctl = str(args.neuronctl or install_neuronctl(tmp))
        wheels = build_universe(tmp / "wheels", big_compiler=args.size_mb * 1024 * 1024)
        times: dict[str, list[float]] = {}
        with running(wheels) as uni:
            warm_up(uni)
            env = clean_env(tmp)
            env["PATH"] = f"{Path(uv).parent}:{env.get('PATH', '')}"  # the same uv for both sides
            lock, reqs = tmp / "pylock.toml", tmp / "requirements.txt"
            for out in (lock, reqs):
                subprocess.run([neuronctl, "lock", *uni.index_flags(), "--python", "3.12", "-o", str(out)],
                               env=env, check=True, capture_output=True)
            for run in range(args.runs):
                work = tmp / f"run{run}"
                work.mkdir()

                def v(name: str, work: Path = work) -> str:
                    return str(work / name)

                cases = {
                    "neuronctl install (uv)": [[neuronctl, "install", "--lock", str(lock), "--venv", v("a"),
                                                "--venv-python", py312, "--backend", "uv"]],
                    "neuronctl install (uv) --no-check": [[neuronctl, "install", "--lock", str(lock),
                                                           "--venv", v("b"), "--venv-python", py312,
                                                           "--backend", "uv", "--no-check"]],
                    "raw uv": [[uv, "venv", "--python", py312, "--seed", "--no-python-downloads", v("c")],
                               [uv, "pip", "install", "--python", v("c") + "/bin/python", "-r", str(lock)]],
                    "neuronctl install (pip)": [[neuronctl, "install", "--lock", str(lock), "--venv",
                                                 v("d"), "--venv-python", py312, "--backend", "pip"]],
                    "neuronctl install (pip) --no-check": [[neuronctl, "install", "--lock", str(lock),
                                                            "--venv", v("e"), "--venv-python", py312,
                                                            "--backend", "pip", "--no-check"]],
                    "raw pip": [[py312, "-m", "venv", v("f")],
                                [v("f") + "/bin/python", "-m", "pip", "install", "-q", "--no-cache-dir",
                                 "--require-hashes", "-r", str(reqs)]],
                }
                for name, steps in cases.items():
                    case_env = {**env, "NEURONCTL_CACHE_DIR": str(work / f"nc-{len(times.get(name, []))}"
                                                                   f"-{abs(hash(name))}"),
                                "UV_CACHE_DIR": str(work / f"uv-{abs(hash(name))}")}
                    start = time.perf_counter()
                    for argv in steps:
                        proc = subprocess.run(argv, env=case_env, capture_output=True, text=True, check=False)
                        if proc.returncode != 0:
                            sys.exit(f"{name} failed: {' '.join(argv)}\n{proc.stderr[-2000:]}")
                    times.setdefault(name, []).append(time.perf_counter() - start)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{args.size_mb} MB compiler wheel, 7 packages, new venv each run; {args.runs} runs, medians")
        for engine in ("uv", "pip"):
            raw = med[f"raw {engine}"]
            print(f"raw {engine:<40}{raw:>8.3f} s")
            for label in (f"neuronctl install ({engine})", f"neuronctl install ({engine}) --no-check"):
                print(f"{label:<44}{med[label]:>8.3f} s  overhead x{med[label] / raw:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
