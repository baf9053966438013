"""The records the smoke script writes on its channel (probes/scripts/smoke_run.py), read and
validated one by one against what is due next: the hello line, the stages in order, each step
numbered in turn within the steps asked for, the facts of an info record each checked, one result
last. A torch or a model that forges lines gets a MalformedLine, never a record out of place.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from msgspec import Struct, field

from neuronctl.probes.target_run import json_record, printable

STAGES: tuple[str, ...] = ("import", "device", "load", "build", "move", "warmup", "steps",
                           "reference", "compare")
"""The script's stages, in order (keep in step with probes/scripts/smoke_run.py)."""
HELLO = {"type": "hello", "smoke": "neuronctl-smoke", "version": 1}
BAD_INPUT_STAGES = ("load", "build", "warmup")
LINE_CAP = 8192


class Comparison(Struct, frozen=True):
    """The device's first step against the same step on CPU: outputs, or (--train) gradients."""

    what: str
    ok: bool
    max_abs: float
    max_rel: float
    """max abs error over the reference tensor's largest finite magnitude."""
    worst: str | None
    tensors: int
    dtype: str | None
    rtol: float | None
    atol: float | None
    """A fraction of the reference tensor's largest magnitude."""
    problem: str | None


class MalformedLine(ValueError):
    """A line on the channel that is not a record due at that point."""


def _text(value: object, what: str, limit: int = 500, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise MalformedLine(f"{what} is not a string of at most {limit} characters")
    return printable(value, limit)


def _count(value: object, what: str, *, optional: bool = False, low: int = 0) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 2**63:
        raise MalformedLine(f"{what} is not a whole number")
    return value


def _number(value: object, what: str, *, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1e30:
        raise MalformedLine(f"{what} is not a number")
    return float(value)


def _fields(record: Mapping[str, Any], allowed: set[str]) -> None:
    extra = set(record) - allowed - {"type"}
    if extra:
        raise MalformedLine(f"unexpected field {printable(str(min(extra)), 40)!r}")


COMPARISON_KEYS = {"ok", "max_abs", "max_rel", "worst", "tensors", "dtype", "rtol", "atol", "problem"}


def _comparison(what: str, raw: object) -> Comparison:
    if not isinstance(raw, dict) or set(raw) != COMPARISON_KEYS or not isinstance(raw["ok"], bool):
        raise MalformedLine(f"the {what} comparison is not a comparison record")
    return Comparison(
        what, raw["ok"], _number(raw["max_abs"], "max_abs") or 0.0,
        _number(raw["max_rel"], "max_rel") or 0.0, _text(raw["worst"], "worst", 200, optional=True),
        _count(raw["tensors"], "tensors") or 0, _text(raw["dtype"], "dtype", 40, optional=True),
        _number(raw["rtol"], "rtol", optional=True), _number(raw["atol"], "atol", optional=True),
        _text(raw["problem"], "problem", 500, optional=True))


class Reading(Struct):
    """What the smoke run's channel has said so far, while its lines are read and validated."""

    greeted: bool = False
    stages: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    warmup: list[float] = field(default_factory=list)
    steps: list[float] = field(default_factory=list)
    result: dict[str, Any] | None = None
    comparisons: tuple[Comparison, ...] = ()
    malformed: str | None = None

    @property
    def stage(self) -> str | None:
        return self.stages[-1] if self.stages else None


def _device(value: object) -> str:
    if value not in ("neuron", "cuda", "cpu"):
        raise MalformedLine("device is not neuron, cuda or cpu")
    return str(value)


INFO: dict[str, Callable[[object], object]] = {
    "torch": lambda v: _text(v, "torch", 64),
    "device": _device,
    "params": lambda v: _count(v, "params"),
    "dtype": lambda v: _text(v, "dtype", 40, optional=True),
    "tokens_per_step": lambda v: _count(v, "tokens_per_step", optional=True, low=1),
    "fallback_execution": lambda v: _text(v, "fallback_execution", 40),
}
"""The facts an info record may carry, each with its validator."""


def _take(reading: Reading, record: Mapping[str, Any], warmup: int, steps: int) -> None:
    kind = record.get("type")
    if kind == "stage":
        _fields(record, {"stage"})
        due = STAGES[len(reading.stages)] if len(reading.stages) < len(STAGES) else None
        if due is None or record.get("stage") != due:
            raise MalformedLine(f"stage {printable(str(record.get('stage')), 40)!r} where {due} was due")
        reading.stages.append(due)
    elif kind == "info":
        _fields(record, set(INFO))
        reading.info.update({key: INFO[key](value) for key, value in record.items() if key != "type"})
    elif kind == "step":
        _step(reading, record, warmup, steps)
    elif kind == "result":
        _result(reading, record)
    else:
        raise MalformedLine(f"a record of type {printable(str(kind), 40)!r}")


def _step(reading: Reading, record: Mapping[str, Any], warmup: int, steps: int) -> None:
    _fields(record, {"phase", "i", "ms"})
    phase = {"warmup": "warmup", "steps": "timed"}.get(reading.stage or "")
    times, limit = (reading.warmup, warmup) if phase == "warmup" else (reading.steps, steps)
    if phase is None or record.get("phase") != phase:
        raise MalformedLine(f"a {printable(str(record.get('phase')), 40)} step in stage {reading.stage}")
    if record.get("i") != len(times) + 1 or len(times) >= limit:
        raise MalformedLine(f"step {printable(str(record.get('i')), 20)} where {len(times) + 1} was due")
    times.append(_number(record.get("ms"), "ms") or 0.0)


def _result(reading: Reading, record: Mapping[str, Any]) -> None:
    _fields(record, {"result", "error", "where", "compare", "peak_memory_bytes"})
    result = record.get("result")
    if result not in ("ok", "fail", "bad-input"):
        raise MalformedLine(f"result {printable(str(result), 40)!r}")
    if result == "bad-input" and reading.stage not in BAD_INPUT_STAGES:
        raise MalformedLine(f"a bad-input result in stage {reading.stage}")
    compare = record.get("compare")
    if compare is not None:
        if not isinstance(compare, dict) or not set(compare) <= {"outputs", "gradients"}:
            raise MalformedLine("compare is not a table of outputs and gradients")
        reading.comparisons = tuple(_comparison(k, compare[k]) for k in ("outputs", "gradients")
                                    if k in compare)
    reading.result = {"result": result,
                      "error": _text(record.get("error"), "error", optional=result == "ok"),
                      "where": _text(record.get("where"), "where", 300, optional=True),
                      "peak": _count(record.get("peak_memory_bytes"), "peak_memory_bytes", optional=True)}


def read_channel(lines: Sequence[str], warmup: int, steps: int) -> Reading:
    """What the channel's lines say, read up to the first that is not due (`malformed` then
    says why); `warmup` and `steps` are how many of each step the run was asked for."""
    reading = Reading()
    with contextlib.suppress(ValueError, RecursionError):
        reading.greeted = bool(lines) and json.loads(lines[0]) == HELLO
    if not reading.greeted:
        return reading
    for line in lines[1:]:
        try:
            if reading.result is not None:
                raise MalformedLine("a line after the result")
            _take(reading, json_record(line, LINE_CAP, MalformedLine), warmup, steps)
        except MalformedLine as exc:
            reading.malformed = str(exc)
            break
    return reading
