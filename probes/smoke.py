"""A model's smoke run in the target interpreter: running it, and reading what it reported.

Running: probes/scripts/smoke_run.py in the target through target_run (a private result
channel, a deadline, the whole process group killed at the end), exactly as the device probe
runs. Parsing (`parse_smoke`): a pure function from the channel's lines and how the interpreter
ended to a report. Every line is validated against what is due next (smoke_records.py: the
stages in order, each step numbered in turn), and a result must agree with what was asked (every
step run, the CPU comparison present); a torch or a model that forges lines cannot make a failed
run pass.
"""

from __future__ import annotations

import json
import math
import os
import signal
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from msgspec import Struct

from neuronctl.devices import CPU_RUN, verdict
from neuronctl.probes.smoke_records import Comparison, Reading, read_channel
from neuronctl.probes.target_run import ScriptExit, TargetScript, last_line
from neuronctl.records import asdict

CHANNEL_CAP = 256 * 1024
MAX_STEPS = 1000
MAX_WARMUP = 100

Outcome = Literal["ok", "failed", "bad-input", "timeout", "crashed", "no-torch", "error"]


class SmokeSpec(Struct, frozen=True):
    """What to run: the model (a factory MODULE:FACTORY, a script defining make(), or neither for
    the built-in reference model), where, and how."""

    model: str | None = None
    script: str | None = None
    origin: str = "--model"
    """The flag or config key that named the model, for messages."""
    device: str = "auto"
    warmup: int = 2
    steps: int = 10
    train: bool = False
    compile: bool = False

    @property
    def label(self) -> str:
        if self.script:
            return f"{self.script}:make"
        return self.model or "built-in reference model"

    def argv(self) -> list[str]:
        return [json.dumps({"model": self.model, "script": self.script, "origin": self.origin,
                            "device": self.device, "warmup": self.warmup, "steps": self.steps,
                            "train": self.train, "compile": self.compile})]


def _p90(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[max(math.ceil(0.9 * len(ordered)) - 1, 0)]  # nearest rank


class SmokeReport(Struct, frozen=True):
    """How a model's smoke run ended: its stage and step, the error's place, timings, comparison."""

    spec: SmokeSpec
    outcome: Outcome
    detail: str
    stage: str | None = None
    """The stage the run ended in: where it failed, or "compare" when it passed."""
    step: int | None = None
    """The warm-up or timed step (from 1) it failed in."""
    where: str | None = None
    """file:line of the innermost frame of the error (usually the model's own code)."""
    torch: str | None = None
    device: str | None = None
    params: int | None = None
    dtype: str | None = None
    tokens_per_step: int | None = None
    warmup_ms: tuple[float, ...] = ()
    step_ms: tuple[float, ...] = ()
    peak_memory_bytes: int | None = None
    comparisons: tuple[Comparison, ...] = ()
    wall_ms: float = 0.0
    fallback_execution: str | None = None
    """With --compile, the user's TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION (the run used 1)."""

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def first_step_ms(self) -> float | None:
        """The first warm-up step: compilation (--compile, or a lazy backend) lands here."""
        return self.warmup_ms[0] if self.warmup_ms else None

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.step_ms) if self.step_ms else None

    @property
    def p90_ms(self) -> float | None:
        return _p90(self.step_ms) if self.step_ms else None

    @property
    def tokens_per_s(self) -> float | None:
        median = self.median_ms
        if not self.tokens_per_step or not median or not self.ok:
            return None
        return self.tokens_per_step / (median / 1000)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("spec")
        data["comparisons"] = {c.what: {k: v for k, v in asdict(c).items() if k != "what"}
                               for c in self.comparisons}
        return {"ok": self.ok, "verdict": verdict(self.ok, self.device), "model": self.spec.label,
                "requested_device": self.spec.device,
                "train": self.spec.train, "compile": self.spec.compile, **data,
                "first_step_ms": self.first_step_ms, "median_ms": self.median_ms,
                "p90_ms": self.p90_ms, "tokens_per_s": self.tokens_per_s}


SmokeExit = ScriptExit
"""How the script's interpreter ended (the shared ScriptExit)."""


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _in_progress(reading: Reading) -> tuple[str | None, int | None]:
    """The stage the run was in and, while stepping, the step it had begun."""
    stage = reading.stage
    if stage == "warmup":
        return stage, len(reading.warmup) + 1
    if stage == "steps":
        return stage, len(reading.steps) + 1
    return stage, None


def position(stage: str | None, step: int | None) -> str:
    """Where a run ended, as a message says it: 'warm-up step 1', 'timed step 3', 'stage build'."""
    if step is not None and stage in ("warmup", "steps"):
        return f"{'warm-up' if stage == 'warmup' else 'timed'} step {step}"
    return f"stage {stage}" if stage else "start-up"


def describe_mismatch(c: Comparison) -> str:
    """'outputs differ from CPU at output[0]: max abs error 0.5, max rel error 0.1 (float32:
    rtol 0.01, atol 0.001)'."""
    if c.problem:
        return f"{c.what} differ from CPU: {c.problem}"
    return (f"{c.what} differ from CPU at {c.worst}: max abs error {c.max_abs:.3g}, max rel error "
            f"{c.max_rel:.3g} ({c.dtype}: rtol {c.rtol:g}, atol {c.atol:g} of the largest value)")


def _finished(reading: Reading, spec: SmokeSpec) -> tuple[Outcome, str]:
    """The outcome of a run that wrote its result line."""
    assert reading.result is not None
    result, error = reading.result["result"], reading.result["error"] or ""
    stage, step = _in_progress(reading)
    if result == "bad-input":
        return "bad-input", error
    if result == "fail":
        if stage == "import" and "No module named 'torch'" in error:
            return "no-torch", "torch is not installed in the target environment"
        mismatch = next((c for c in reading.comparisons if not c.ok), None)
        if mismatch is not None:
            return "failed", describe_mismatch(mismatch)
        where = reading.result["where"]
        return "failed", f"{error} ({position(stage, step)}{f', at {where}' if where else ''})"
    whole = (stage == "compare" and len(reading.warmup) == spec.warmup and len(reading.steps) == spec.steps
             and [c.what for c in reading.comparisons] == (["outputs", "gradients"] if spec.train
                                                           else ["outputs"])
             and all(c.ok for c in reading.comparisons))
    if not whole:
        return "error", "malformed smoke output: a passing result for a run that did not finish"
    device = reading.info.get("device")
    if device == "cpu":
        return "ok", f"{spec.label} ran on cpu and matches its CPU reference: {CPU_RUN}" + (
            "" if spec.device == "cpu" else " (no Neuron or CUDA device found)")
    return "ok", f"{spec.label} ran on {device} and matches CPU"


def parse_smoke(spec: SmokeSpec, lines: Sequence[str], end: SmokeExit) -> SmokeReport:
    """The report from what the script wrote on its channel and how its interpreter ended."""
    reading = read_channel(lines, spec.warmup, spec.steps)
    stage, step = _in_progress(reading)
    here = position(stage, step)
    outcome: Outcome
    if not reading.greeted:
        outcome, detail = "error", (f"the interpreter did not run the smoke script: "
                                    f"{_ended(end)}: {last_line(end.stderr_tail)}")
    elif reading.malformed is not None:
        outcome, detail = "error", f"malformed smoke output ({here}): {reading.malformed}"
    elif reading.result is not None:
        outcome, detail = _finished(reading, spec)
    elif end.channel_overflow:
        outcome, detail = "error", f"the smoke script wrote more than its channel holds ({here})"
    elif end.returncode is None:
        outcome, detail = "timeout", f"timed out after {end.timeout:g}s in {here}"
    elif end.returncode < 0:
        outcome, detail = "crashed", f"the interpreter crashed with {_signal_name(end.returncode)} in {here}"
    else:
        outcome, detail = "error", (f"the interpreter exited {end.returncode} in {here} without a "
                                    f"result: {last_line(end.stderr_tail)}")
    info, result = reading.info, reading.result or {}
    return SmokeReport(
        spec, outcome, detail, stage, None if outcome == "ok" else step, result.get("where"),
        info.get("torch"), info.get("device"), info.get("params"), info.get("dtype"),
        info.get("tokens_per_step"), tuple(reading.warmup), tuple(reading.steps), result.get("peak"),
        reading.comparisons, end.wall_ms, info.get("fallback_execution"))


def _ended(end: SmokeExit) -> str:
    if end.returncode is None:
        return f"no answer within {end.timeout:g}s"
    return f"exit {end.returncode}" if end.returncode >= 0 else _signal_name(end.returncode)


def step_watcher(on_step: Callable[[str, int], None]) -> Callable[[bytes], None]:
    """A channel reader for a live status: calls on_step(phase, i) for each step line the
    script writes. Only for the screen: the report is parsed, validated, from the whole run."""
    pending = bytearray()

    def feed(chunk: bytes) -> None:
        pending.extend(chunk)
        *lines, rest = bytes(pending).split(b"\n")
        pending[:] = rest[:4096]  # a line that never ends is not held whole
        for line in lines:
            if b'"step"' not in line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("type") == "step" and isinstance(
                    event.get("i"), int) and isinstance(event.get("phase"), str):
                on_step(event["phase"][:20], event["i"])

    return feed


def run_smoke_script(python: str, spec: SmokeSpec, timeout: float,
                     env: Mapping[str, str] | None = None, cwd: str | None = None,
                     on_step: Callable[[str, int], None] | None = None) -> SmokeReport:
    """Run the smoke script in `python` (from `cwd`, where MODULE:FACTORY is imported from);
    `on_step(phase, i)` hears of each step as it ends."""
    proc_env = dict(os.environ if env is None else env)
    proc_env.setdefault("PYTHONUNBUFFERED", "1")
    try:
        script = TargetScript(python, "smoke_run.py", spec.argv(), env=proc_env, cwd=cwd,
                              contain=True)
    except OSError as exc:
        return SmokeReport(spec, "error", f"cannot run {python}: {exc.strerror or exc}")
    run = script.collect(timeout, CHANNEL_CAP, None if on_step is None else step_watcher(on_step))
    return parse_smoke(spec, run.channel_lines(), run.ending(timeout))
