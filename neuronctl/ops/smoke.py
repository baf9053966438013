"""`neuronctl smoke` as an operation: a model's smoke run on the device, checked against CPU.

The request is checked here, before anything runs (a MODULE:FACTORY that cannot be a module
path, a --script that is not a file, step counts out of range: exit 2). Whether the module
imports, the factory exists and returns the right shape is decided in the target interpreter,
where the user's code lives; the script reports that as "bad-input", which is exit 2 as well.
The doctor's level 3 calls `run_smoke` with the config's `model`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from msgspec import Struct

from neuronctl.devices import DEVICES
from neuronctl.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, InputError
from neuronctl.ops.reporter import Reporter, StepDone, StepStarted, status
from neuronctl.probes.smoke import MAX_STEPS, MAX_WARMUP, SmokeReport, SmokeSpec, run_smoke_script
from neuronctl.safety import expand_user

DEFAULT_TIMEOUT = 600.0
"""Ten minutes: a first Neuron compilation of a real model takes minutes."""
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
MODEL_SPEC = re.compile(rf"(?P<module>{_DOTTED}):(?P<factory>{_DOTTED})")


class SmokeStarted(StepStarted, frozen=True):
    """The smoke run begins: which model, on which device. Declared here, with the one
    operation that emits it, so no other command creates the class (issue 36)."""

    model: str = ""
    device: str = ""


class SmokeDone(StepDone, frozen=True):
    """The smoke run ended, with its outcome label (ok, failed, bad-input, timeout...)."""

    outcome: str = ""


class SmokeRequest(Struct, frozen=True):
    """What `neuronctl smoke` was asked: the model, the device, the steps to run."""

    python: str
    """The target interpreter (already resolved: neuronctl.probes.pyenv.resolve_python)."""
    model: str | None = None
    """MODULE:FACTORY, imported from `cwd` and the target's sys.path."""
    script: Path | None = None
    """A file defining make(); with neither, the built-in reference model runs."""
    origin: str = "--model"
    """Where `model` came from, for messages: "--model", or "config model" for the doctor."""
    device: str = "auto"
    steps: int = 10
    warmup: int = 2
    train: bool = False
    compile: bool = False
    timeout: float = DEFAULT_TIMEOUT
    env: Mapping[str, str] | None = None
    cwd: Path | None = None
    """Where the target runs (MODULE:FACTORY is importable from there); default: ours."""


class SmokeOutcome(Struct, frozen=True):
    """A smoke run's report, with the exit code it means."""

    report: SmokeReport

    @property
    def ok(self) -> bool:
        return self.report.ok

    @property
    def bad_input(self) -> bool:
        return self.report.outcome == "bad-input"

    @property
    def exit_code(self) -> int:
        """0 passed; 2 the model named cannot be used (bad input); 1 any other failure."""
        return EXIT_OK if self.ok else EXIT_USAGE if self.bad_input else EXIT_FAILED

    def to_json(self) -> dict[str, Any]:
        return self.report.to_json()


def check_model_spec(spec: str, origin: str = "--model") -> str:
    """MODULE:FACTORY as given, or exit 2 saying what is wrong with it."""
    if not MODEL_SPEC.fullmatch(spec):
        raise InputError(f"{origin} {spec!r}: expected MODULE:FACTORY, e.g. mypkg.models:make "
                         "(a dotted module path, a colon, and the name of a function in it)")
    return spec


def _spec(request: SmokeRequest) -> SmokeSpec:
    if request.model is not None and request.script is not None:
        raise InputError("--model and --script: give one of them")
    if request.device not in DEVICES:
        raise InputError(f"--device {request.device!r}: expected one of {', '.join(DEVICES)}")
    if not 1 <= request.steps <= MAX_STEPS:
        raise InputError(f"--steps {request.steps}: expected 1 to {MAX_STEPS}")
    if not 1 <= request.warmup <= MAX_WARMUP:
        raise InputError(f"--warmup {request.warmup}: expected 1 to {MAX_WARMUP} (the first "
                         "warm-up step is the one compared with CPU)")
    script = None
    if request.script is not None:
        path = expand_user(request.script, "--script")
        if not path.is_file():
            raise InputError(f"--script {request.script}: no such file")
        script = str(path.resolve())
    model = check_model_spec(request.model, request.origin) if request.model is not None else None
    return SmokeSpec(model=model, script=script, origin="--script" if script else request.origin,
                     device=request.device, warmup=request.warmup, steps=request.steps,
                     train=request.train, compile=request.compile)


def run_smoke(request: SmokeRequest, reporter: Reporter) -> SmokeOutcome:
    """Run the model in the target interpreter and compare it with CPU. Raises InputError only
    for a request that is wrong on its face; everything the run finds is in the outcome."""
    spec = _spec(request)
    mode = "a training step" if spec.train else "inference"
    reporter.emit(SmokeStarted(f"smoke: {spec.label}, {mode} on {spec.device} in {request.python}",
                               "smoke", model=spec.label, device=spec.device))
    def on_step(phase: str, i: int) -> None:  # the script counts each phase from 1
        warm = phase == "warmup"
        total = request.warmup if warm else request.steps
        reporter.emit(status(f"smoke: {'warm-up step' if warm else 'step'} {i} of {total}", i,
                             total))

    reporter.emit(status(f"smoke: starting {spec.label} in the target"))
    report = run_smoke_script(request.python, spec, request.timeout, request.env,
                              None if request.cwd is None else str(request.cwd), on_step)
    reporter.emit(SmokeDone(f"smoke: {report.outcome}: {report.detail}", "smoke",
                            outcome=report.outcome))
    return SmokeOutcome(report)
