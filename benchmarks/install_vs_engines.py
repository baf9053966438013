"""neuronctl install --lock vs the raw engines it drives, on the same loopback indexes, from empty
caches, with no network beyond loopback. Two scenarios:

- new venv: neuronctl makes the venv (with pip, from the interpreter's bundled wheel) and installs
  the lock; against `uv venv --seed --no-index --find-links <ensurepip's bundled wheels> --offline`
  + `uv pip install -r pylock.toml`, and `python -m venv` + `pip install --require-hashes -r
  requirements.txt`: the same end state, every step local.
- existing venv: an empty venv made beforehand (not timed), then only the install.
- warm caches: the same, after one untimed install of the lock filled each tool's caches.

    .venv/bin/python benchmarks/install_vs_engines.py [--size-mb 100] [--runs 3]

Prints median wall times and neuronctl's ratio to the raw engine, with the after-install doctor
(the default) and without it (--no-check). Target (issue 5): <= 1.20.

For uv it also prints a floor: `_verified_floor.py`, the least any installer does that downloads
and verifies every file before it applies them from local files (as issue 5 requires), and nothing
else (no inspection, plan, preflight or doctor): its ratio to raw uv is what that design costs by
itself, and neuronctl's ratio to it is neuronctl's own overhead.
"""

from __future__ import annotations

import argparse
import glob
import json
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
    parser.add_argument("--only", default="", help="run only the scenarios whose name contains this")
    parser.add_argument("--verbose", action="store_true", help="print every run's time")
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
            bundled = subprocess.run([py312, "-c", "import ensurepip, os; print(os.path.join("
                                      "os.path.dirname(ensurepip.__file__), '_bundled'))"],
                                     capture_output=True, text=True, check=True).stdout.strip()
            for run in range(args.runs):
                work = tmp / f"run{run}"
                work.mkdir()

                def v(name: str, work: Path = work) -> str:
                    return str(work / name)

                nc_new = [neuronctl, "install", "--lock", str(lock), "--venv-python", py312]
                floor = [py312, str(ROOT / "benchmarks" / "_verified_floor.py"), str(lock)]
                uv_local = [uv, "pip", "install", "--no-deps", "--no-index", "--offline", "--python"]
                uv_new = [uv, "venv", "--python", py312, "--seed", "--no-index", "--find-links", bundled,
                          "--offline", "--no-python-downloads"]
                # name -> (untimed set-up, timed steps)
                cases: dict[str, tuple[list[list[str]], list[list[str]]]] = {
                    "new venv: raw uv": ([], [[*uv_new, v("c")],
                                              [uv, "pip", "install", "--python", v("c"), "-r", str(lock)]]),
                    "new venv: neuronctl (uv)": ([], [[*nc_new, "--venv", v("a"), "--backend", "uv"]]),
                    "new venv: floor (uv)": ([], [[*floor, v("fl-files"), "--alongside", json.dumps(
                        [uv, "venv", "--python", py312, "--no-python-downloads", v("fl")]), "--install",
                        json.dumps([*uv_local, v("fl"), *glob.glob(f"{bundled}/pip-*.whl")])]]),
                    "new venv: neuronctl (uv) --no-check": ([], [[*nc_new, "--venv", v("b"), "--backend",
                                                                  "uv", "--no-check"]]),
                    "existing venv: raw uv": ([[uv, "venv", "--python", py312, v("g")]],
                                              [[uv, "pip", "install", "--python", v("g"), "-r", str(lock)]]),
                    "existing venv: neuronctl (uv)": ([[uv, "venv", "--python", py312, v("h")]],
                                                      [[neuronctl, "install", "--lock", str(lock), "--python",
                                                        v("h"), "--backend", "uv"]]),
                    "existing venv: floor (uv)": ([[uv, "venv", "--python", py312, v("fe")]],
                                                  [[*floor, v("fe-files"), "--install",
                                                    json.dumps([*uv_local, v("fe")])]]),
                    "warm caches: raw uv": ([[uv, "venv", "--python", py312, v("k0")],
                                             [uv, "pip", "install", "--python", v("k0"), "-r", str(lock)],
                                             [uv, "venv", "--python", py312, v("k")]],
                                            [[uv, "pip", "install", "--python", v("k"), "-r", str(lock)]]),
                    "warm caches: neuronctl (uv)": ([[uv, "venv", "--python", py312, v("m0")],
                                                     [neuronctl, "install", "--lock", str(lock), "--python",
                                                      v("m0"), "--backend", "uv", "--no-check"],
                                                     [uv, "venv", "--python", py312, v("m")]],
                                                    [[neuronctl, "install", "--lock", str(lock), "--python",
                                                      v("m"), "--backend", "uv"]]),
                    "new venv: raw pip": ([], [[py312, "-m", "venv", v("f")],
                                               [v("f") + "/bin/python", "-m", "pip", "install", "-q",
                                                "--no-cache-dir", "--require-hashes", "-r", str(reqs)]]),
                    "new venv: neuronctl (pip)": ([], [[*nc_new, "--venv", v("d"), "--backend", "pip"]]),
                    "new venv: neuronctl (pip) --no-check": ([], [[*nc_new, "--venv", v("e"), "--backend",
                                                                   "pip", "--no-check"]]),
                }
                for name, (setup, steps) in cases.items():
                    if args.only not in name:
                        continue
                    case_env = {**env, "NEURONCTL_CACHE_DIR": str(work / f"nc-{abs(hash(name))}"),
                                "UV_CACHE_DIR": str(work / f"uv-{abs(hash(name))}")}
                    for argv in setup:
                        subprocess.run(argv, env=case_env, capture_output=True, check=True)
                    start = time.perf_counter()
                    for argv in steps:
                        proc = subprocess.run(argv, env=case_env, capture_output=True, text=True, check=False)
                        if proc.returncode != 0:
                            sys.exit(f"{name} failed: {' '.join(argv)}\n{proc.stderr[-2000:]}")
                    times.setdefault(name, []).append(time.perf_counter() - start)
                    if args.verbose:
                        print(f"run {run}: {name:<46}{times[name][-1]:>8.3f} s", flush=True)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{args.size_mb} MB compiler wheel, 7 packages; caches empty but in 'warm caches'; "
              f"{args.runs} runs, medians")
        for scenario, engine in (("new venv", "uv"), ("existing venv", "uv"), ("warm caches", "uv"),
                                 ("new venv", "pip")):
            if f"{scenario}: raw {engine}" not in med:
                continue
            raw = med[f"{scenario}: raw {engine}"]
            print(f"{scenario}: raw {engine:<32}{raw:>8.3f} s")
            ours = f"{scenario}: neuronctl ({engine})"
            for label in (ours, f"{ours} --no-check", f"{scenario}: floor ({engine})"):
                if label in med:
                    print(f"{label:<46}{med[label]:>8.3f} s  x{med[label] / raw:.2f}")
            floor_med = med.get(f"{scenario}: floor ({engine})")
            if floor_med and ours in med:
                print(f"{'  neuronctl over the floor':<56}x{med[ours] / floor_med:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
