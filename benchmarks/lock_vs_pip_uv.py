"""neuronctl lock vs pip's dry-run resolution vs `uv pip compile --generate-hashes`, for the same
Neuron stack on the same loopback indexes, with a large compiler wheel the Neuron-like index
serves without a metadata sidecar (the case where pip downloads the whole wheel).

    .venv/bin/python benchmarks/lock_vs_pip_uv.py [--size-mb 100] [--runs 3] [--baseline DIR|EXE]
        [--latency-ms 20]

Prints median wall time and bytes served per tool, and the ratios against pip and uv (of the
medians, and uv's run by run: each run times every tool, in a rotating order). --baseline adds
another neuronctl to the same runs (a checkout, installed as a wheel like this one, or an
executable): the before and after of a change, measured side by side.
--latency-ms answers every request that much later, as a real index's round trip does: on
loopback a request costs well under a millisecond, so the ratios there are start-up and CPU
alone, and --latency-ms shows how each tool's rounds of requests add up over a real network.
Targets (issue 4): neuronctl's bytes <= 1% of pip's; wall time <= 50% of pip's. Issue 36: wall
time <= 1.0x uv's, bytes <= 1.5x uv's.

"libraries only" is neuronctl's own interpreter importing the libraries `lock` is built on
(LOCK_LIBRARIES) and nothing else, timed in the same rotation: the floor under any Python `lock`
that uses them, printed as a ratio to uv's whole run and as what neuronctl adds above it.
"stdlib HTTP only" (LOCK_MINIMUM) is the floor under any Python `lock` on click at all: requests
replaced by the standard library's http.client, no PEP 751 reader. Where it is near x1.0 uv
before any request is made, issue 36's `lock` target (x1.0 uv's wall) is out of reach of a
Python `lock`, whatever its HTTP client.
"""

from __future__ import annotations

import argparse
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

from support.universe import build_universe, running  # noqa: E402
from support.wheels import find_python  # noqa: E402

PINS = ["torch==2.14.0", "torch-neuronx==2.14.3.0", "neuronx-cc==2.28.7631.0", "nki==0.7.0"]
# What `lock` cannot do without: the CLI, HTTP, the resolver and the PEP 751 reader.
LOCK_LIBRARIES = "import click, requests, resolvelib, packaging.pylock"
# The least any Python `lock` on click could import: an HTTP client written by hand on the
# standard library's http.client and ssl in place of requests, no PEP 751 reader, and only what
# reading an index and a wheel's metadata needs (versions, tags, email headers, zip, hashes).
LOCK_MINIMUM = ("import click, msgspec, resolvelib, packaging.specifiers, packaging.tags, "
                "packaging.utils, email.parser, http.client, ssl, zipfile, hashlib, json, "
                "concurrent.futures")
FLOORS = {"libraries only": LOCK_LIBRARIES, "stdlib HTTP only": LOCK_MINIMUM}


def clean_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "NEURONCTL_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", UV_NO_CONFIG="1",
               XDG_CACHE_HOME=str(tmp / "xdg"))
    return env


def install_neuronctl(tmp: Path, root: Path = ROOT, name: str = "nctl-venv") -> Path:
    """neuronctl as users get it (a wheel install), not the dev venv's editable import hooks."""
    venv = tmp / name
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(root)], check=True,
                   capture_output=True)
    return venv / "bin" / "neuronctl"


def python_of(neuronctl: Path) -> str:
    """The interpreter neuronctl runs on (its venv's), for the libraries-only floor."""
    beside = neuronctl.parent / "python"
    return str(beside) if beside.exists() else sys.executable


def neuronctl_options(parser: argparse.ArgumentParser) -> None:
    """--neuronctl and --baseline, as every benchmark that measures a neuronctl spells them."""
    parser.add_argument("--neuronctl", type=Path, help="neuronctl to measure (default: a fresh wheel "
                        "install of this checkout)")
    parser.add_argument("--baseline", type=Path, help="also measure this neuronctl in the same runs: "
                        "a checkout directory (installed as a wheel) or an executable")


def neuronctls(tmp: Path, args: argparse.Namespace) -> tuple[Path, Path | None]:
    """The neuronctl to measure (--neuronctl, else this checkout as a wheel) and --baseline's."""
    return args.neuronctl or install_neuronctl(tmp), baseline_neuronctl(tmp, args.baseline)


def ran(argv: list[str], env: dict[str, str]) -> None:
    """Run a set-up step; a failure ends the benchmark with the step's own words."""
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv[:3])} ... failed ({proc.returncode}):\n{proc.stderr[-2000:]}")


def baseline_neuronctl(tmp: Path, given: Path | None) -> Path | None:
    """--baseline: a checkout (installed as a wheel, as this one is) or a neuronctl executable."""
    if given is None:
        return None
    if given.is_dir():
        return install_neuronctl(tmp, given.resolve(), "baseline-venv")
    return given


def commands(uni, tmp: Path, run: int, neuronctl: Path, baseline: Path | None = None
             ) -> dict[str, tuple[list[str], dict[str, str]]]:
    bindir = Path(sys.executable).parent
    work = tmp / f"run{run}"
    work.mkdir()
    (work / "req.in").write_text("\n".join(PINS) + "\n")
    env = clean_env(work)
    nctl_env = {**env, "NEURONCTL_CACHE_DIR": str(work / "nctl-cache")}
    uv_env = {**env, "UV_CACHE_DIR": str(work / "uv-cache")}
    before = {} if baseline is None else {
        "baseline lock": ([str(baseline), "lock", *uni.index_flags(), "--python", "3.12",
                           "-o", str(work / "pylock.baseline.toml")],
                          {**nctl_env, "NEURONCTL_CACHE_DIR": str(work / "baseline-cache")})}
    return {
        **before,
        **{name: ([python_of(neuronctl), "-c", imports], env) for name, imports in FLOORS.items()},
        "neuronctl lock": ([str(neuronctl), "lock", *uni.index_flags(), "--python", "3.12",
                            "-o", str(work / "pylock.toml")], nctl_env),
        # pip of a 3.12 interpreter: the target's Requires-Python is its own (pip 23.2 applies
        # --python-version to Requires-Python only without --target, which --platform needs)
        "pip --dry-run": ([find_python("3.12"), "-m", "pip", "install", "--dry-run", "--ignore-installed",
                           "--no-cache-dir", "--quiet", "--report", str(work / "report.json"),
                           # pip 23.2 takes --platform only with --target (--dry-run writes nothing)
                           "--target", str(work / "pip-target"),
                           "--python-version", "3.12", "--platform", "manylinux_2_28_x86_64",
                           "--platform", "manylinux_2_17_x86_64", "--only-binary", ":all:",
                           "--index-url", uni.urls["pypi"], "--extra-index-url", uni.urls["pytorch-cpu"],
                           "--extra-index-url", uni.urls["neuron"], *PINS], env),
        "uv pip compile": ([str(bindir / "uv"), "pip", "compile", "--generate-hashes", "--quiet",
                            "--no-python-downloads", "--python", find_python("3.12"),
                            "--python-version", "3.12", "--python-platform", "x86_64-manylinux_2_28",
                            "--index-url", uni.urls["pypi"], "--extra-index-url", uni.urls["pytorch-cpu"],
                            "--extra-index-url", uni.urls["neuron"], str(work / "req.in"),
                            "-o", str(work / "req.txt")], uv_env),
    }


def warm_up(uni) -> None:
    """Serve every page once, so the servers' own first-time hashing is not charged to a tool."""
    import urllib.request

    for name, state in (("pypi", uni.pypi), ("pytorch-cpu", uni.torch), ("neuron", uni.neuron)):
        for project in state.projects:
            with urllib.request.urlopen(f"{uni.urls[name]}/{project}/") as response:
                response.read()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=0.0,
                        help="each index request answered this much later: a real index's round "
                             "trip (loopback answers in well under a millisecond)")
    neuronctl_options(parser)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nctl-bench-"))
    try:
        neuronctl, baseline = neuronctls(tmp, args)
        wheels = build_universe(tmp / "wheels", big_compiler=args.size_mb * 1024 * 1024)
        results: dict[str, tuple[list[float], list[int]]] = {}
        with running(wheels) as uni:
            warm_up(uni)
            for state in (uni.pypi, uni.torch, uni.neuron):
                state.latency = args.latency_ms / 1000
            for run in range(args.runs):
                cmds = list(commands(uni, tmp, run, neuronctl, baseline).items())
                cmds = cmds[run % len(cmds):] + cmds[:run % len(cmds)]  # no tool always goes first
                for name, (argv, env) in cmds:
                    for state in (uni.pypi, uni.torch, uni.neuron):
                        state.reset_counts()
                    start = time.perf_counter()
                    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
                    wall = time.perf_counter() - start
                    if proc.returncode != 0:
                        sys.exit(f"{name} failed:\n{proc.stderr[-2000:]}")
                    times, sizes = results.setdefault(name, ([], []))
                    times.append(wall)
                    sizes.append(uni.bytes_sent())
        _report(args, results)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _report(args: argparse.Namespace, results: dict[str, tuple[list[float], list[int]]]) -> None:
    base_t = statistics.median(results["pip --dry-run"][0])
    base_b = statistics.median(results["pip --dry-run"][1])
    uv_t = statistics.median(results["uv pip compile"][0])
    uv_b = statistics.median(results["uv pip compile"][1])
    latency = f", {args.latency_ms:g} ms a request" if args.latency_ms else ""
    print(f"compiler wheel: {args.size_mb} MB, no sidecar, Neuron-like index{latency}; {args.runs} runs, "
          "medians")
    print(f"{'tool':<16}{'wall s':>9}{'bytes':>14}{'time/pip':>10}{'bytes/pip':>11}{'time/uv':>9}"
          f"{'bytes/uv':>10}")
    for name, (times, sizes) in results.items():
        t, b = statistics.median(times), statistics.median(sizes)
        print(f"{name:<16}{t:>9.3f}{int(b):>14,}{t / base_t:>10.3f}{b / base_b:>11.4f}{t / uv_t:>9.3f}"
              f"{b / uv_b:>10.3f}")
    for name in ("baseline lock", "neuronctl lock"):
        if name in results:
            paired = sorted(o / u for o, u in zip(results[name][0], results["uv pip compile"][0],
                                                   strict=True))
            print(f"{name} / uv pip compile, run by run: x{statistics.median(paired):.2f} "
                  f"(x{paired[0]:.2f} to x{paired[-1]:.2f})  (target <= 1.0; bytes <= 1.5)")
    _floor(results)


def _floor(results: dict[str, tuple[list[float], list[int]]]) -> None:
    """Each floor's import alone against uv's whole run, and what each neuronctl adds above it
    (run by run: each run times all of them)."""
    uv = results["uv pip compile"][0]
    for floor_name, imports in FLOORS.items():
        floor = results[floor_name][0]
        paired = sorted(f / u for f, u in zip(floor, uv, strict=True))
        print(f"{floor_name} ({imports[len('import '):]}) / uv pip compile, run by run: "
              f"x{statistics.median(paired):.2f} (x{paired[0]:.2f} to x{paired[-1]:.2f})")
        for name in ("baseline lock", "neuronctl lock"):
            if name in results:
                above = sorted(o - f for o, f in zip(results[name][0], floor, strict=True))
                print(f"  {name} above it, run by run: {statistics.median(above):+.3f} s "
                      f"({above[0]:+.3f} to {above[-1]:+.3f} s)")

if __name__ == "__main__":
    main()
