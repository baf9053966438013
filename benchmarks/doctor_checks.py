"""The doctor's checks one after another on one thread (while each is quick) against a thread
each, and what that is worth to an install with nothing to do.

    .venv/bin/python benchmarks/doctor_checks.py [--runs 15] [--baseline DIR|EXE]

- "doctor, target known": a fresh interpreter makes the doctor an install makes after nothing was
  to do (the target's inspection given, the hardware known, the default level) and runs it
  (`DoctorRun(...).finish()`), timing its wall and CPU; the peer, in the same runs, is the same
  run with every check on a thread of its own at once (`run_checks(one_by_one=False)`, the way
  all checks ran before issue 36's change, and the way `neuronctl doctor` still runs them).
- "install, nothing to do": `neuronctl install --lock` into a venv that already holds the lock,
  with the doctor (the default) and with --no-check (its control: the doctor is all they differ
  by), wall and the process tree's CPU (`getrusage(RUSAGE_CHILDREN)`).

Each pair runs interleaved, in alternating order. --baseline adds another neuronctl (a checkout,
installed as a wheel as this one is, or an executable) to the installs: before and after in the
same runs. On a small host whose speed drifts, the CPU columns and the --no-check control say
more than one wall time.
"""

from __future__ import annotations

import argparse
import resource
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

from lock_vs_pip_uv import clean_env, neuronctl_options, neuronctls, python_of, ran, warm_up  # noqa: E402
from support.universe import build_universe, running  # noqa: E402
from support.wheels import find_python  # noqa: E402

DOCTOR = """
import sys, time
import neuronctl.ops.doctor.run as run
from neuronctl.ops.doctor.run import DoctorRequest, DoctorRun, Known
from neuronctl.probes.hardware import detect_hardware
from neuronctl.probes.pyenv import inspect_python
from neuronctl.probes.sysroot import SysRoot
from neuronctl.release.manifest import load_default_manifest
if sys.argv[2] == "thread-each":
    real = run.run_checks
    run.run_checks = lambda checks, total=None, progress=None, **_: real(
        checks, total, progress, one_by_one=False)
manifest = load_default_manifest()
hardware = detect_hardware(SysRoot.from_env(None))
env = inspect_python(sys.argv[1], timeout=30, tags=False)
release = manifest.releases[0].version
wall, cpu = time.perf_counter(), time.process_time()
report = DoctorRun(DoctorRequest(manifest, release=release, device_probe=False,
                                 known=Known(python=sys.argv[1], hardware=hardware, env=env))).finish()
print((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000, len(report.checks))
"""


def _doctor(python: str, target: str, runs: int) -> dict[str, tuple[list[float], list[float]]]:
    found: dict[str, tuple[list[float], list[float]]] = {"one by one": ([], []),
                                                         "thread each": ([], [])}
    for run in range(runs):
        modes = ["one by one", "thread each"]
        for mode in modes if run % 2 == 0 else modes[::-1]:
            # -I: not the checkout's own neuronctl/ from the working directory
            out = subprocess.run([python, "-I", "-c", DOCTOR, target, mode.replace(" ", "-")],
                                 check=True, capture_output=True, text=True).stdout.split()
            found[mode][0].append(float(out[0]))
            found[mode][1].append(float(out[1]))
    return found


def _installs(tools: dict[str, Path], runs: int, tmp: Path) -> dict[str, tuple[list[float],
                                                                              list[float]]]:
    found: dict[str, tuple[list[float], list[float]]] = {}
    wheels = build_universe(tmp / "wheels", big_compiler=20 * 1024 * 1024)
    with running(wheels) as uni:
        warm_up(uni)
        env = clean_env(tmp)
        first = str(next(iter(tools.values())))
        lock = tmp / "pylock.toml"
        ran([first, "lock", *uni.index_flags(), "--python", "3.12", "-o", str(lock)], env)
        uv = str(Path(sys.executable).with_name("uv"))  # the engine, as install_vs_engines.py has it
        env = {**env, "NEURONCTL_CACHE_DIR": str(tmp / "nc"), "UV_CACHE_DIR": str(tmp / "uv"),
               "PATH": f"{Path(uv).parent}:{env.get('PATH', '')}"}
        subprocess.run([uv, "venv", "--python", find_python("3.12"), str(tmp / "v")], env=env,
                       check=True, capture_output=True)
        base = [first, "install", "--lock", str(lock), "--python", str(tmp / "v"), "--engine", "uv"]
        ran(base, env)
        names = list(tools)
        for run in range(runs):
            for name in names if run % 2 == 0 else names[::-1]:
                for extra in ([], ["--no-check"]):
                    argv = [str(tools[name]), *base[1:], *extra]
                    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
                    ran(argv, env)
                    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                    walls, cpus = found.setdefault(f"{name}{' --no-check' if extra else ''}",
                                                   ([], []))
                    walls.append(wall * 1000)
                    cpus.append(cpu * 1000)
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    neuronctl_options(parser)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nctl-doctor-checks-"))
    try:
        neuronctl, baseline = neuronctls(tmp, args)
        target = tmp / "target"
        subprocess.run([find_python("3.12"), "-m", "venv", "--without-pip", str(target)], check=True)
        doctor = _doctor(python_of(neuronctl), str(target / "bin" / "python"), args.runs)
        tools = {"this tree": neuronctl, **({"baseline": baseline} if baseline else {})}
        installs = _installs(tools, args.runs, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{args.runs} runs each, interleaved; medians in ms")
    print(f"{'':<44}{'wall':>8}{'cpu':>8}")
    for name, (walls, cpus) in {**{f"doctor, target known: {k}": v for k, v in doctor.items()},
                                **{f"install, nothing to do: {k}": v for k, v in installs.items()}
                                }.items():
        print(f"{name:<44}{statistics.median(walls):>8.1f}{statistics.median(cpus):>8.1f}")
    one, each = doctor["one by one"], doctor["thread each"]
    print(f"doctor, one by one / thread each, run by run: wall x{_paired(one[0], each[0]):.2f}, "
          f"cpu x{_paired(one[1], each[1]):.2f}")
    for name in tools:
        check, control = installs[name], installs[f"{name} --no-check"]
        print(f"install, nothing to do ({name}): the doctor adds "
              f"{_above(check[0], control[0]):+.1f} ms wall, {_above(check[1], control[1]):+.1f} ms "
              "cpu above --no-check, run by run")


def _paired(ours: list[float], peer: list[float]) -> float:
    return statistics.median(o / p for o, p in zip(ours, peer, strict=True))


def _above(ours: list[float], control: list[float]) -> float:
    return statistics.median(o - c for o, c in zip(ours, control, strict=True))


if __name__ == "__main__":
    main()
