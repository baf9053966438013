"""Device probes, run in the target interpreter as a subprocess with a timeout.

Tiers stop at the first failure: import torch; backend registered; device count; allocate;
an op checked against CPU; autograd; torch.compile (opt-in). A hang, crash or missing torch is a
result, never a hung or crashed neuronctl: each tier's line is flushed as soon as it is known.

Two halves: running (probes/scripts/device_probe.py in the target, through target_run: a private
channel, a deadline, the process group killed at the end) and parsing (`parse_probe`, a pure
function from the lines read and how the interpreter ended to a report). Only the channel is
read for tiers, and every line on it is validated: a torch that prints forged tier lines on
stdout cannot pass a probe, and a malformed line is a failed tier.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from msgspec import Struct, field

from neuronctl.devices import CPU_RUN, verdict
from neuronctl.errors import InputError
from neuronctl.probes.target_run import (
    CHANNEL_CAP,
    ScriptExit,
    TargetScript,
    json_record,
    last_line,
    printable,
)
from neuronctl.records import asdict
from neuronctl.torch_neuronx import classify

TIERS: tuple[str, ...] = ("import", "backend", "device_count", "allocate", "op", "autograd", "compile")

Status = Literal["pass", "fail", "skip"]
Outcome = Literal["ok", "failed", "timeout", "crashed", "no-torch", "error"]


class TierResult(Struct, frozen=True):
    """One tier of the device probe (import, allocate, op, ...): its status, detail and time."""

    tier: str
    status: Status
    detail: str
    ms: float


class ProbeFacts(Struct, frozen=True):
    """What the backend and compile tiers recorded beside their verdict (None: not reported)."""

    autoload: str | None = None
    """TORCH_DEVICE_BACKEND_AUTOLOAD as the target saw it (None: unset, autoload on)."""
    autoloaded: bool | None = None
    """Whether `import torch` alone created torch.neuron."""
    privateuse1: str | None = None
    """torch's PrivateUse1 backend name (names a competing backend; never the verdict)."""
    accelerator: str | None = None
    """torch.accelerator.current_accelerator()'s type."""
    torch_neuronx: str | None = None
    """The installed torch-neuronx's version ("" when its metadata gave none)."""
    extension: str | None = None
    """The backend extension whose autoload made `import torch` fail."""
    fallback_execution: str | None = None
    """The user's TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION (the probe runs with 1)."""
    competing: tuple[str, ...] = ()
    """The distributions of the other torch.backends entry points (a backend that may take
    PrivateUse1 before torch_neuronx)."""


class ProbeReport(Struct, frozen=True):
    """What the device probe found: the device and torch, each tier's result, how it ended."""

    requested: str
    device: str | None
    torch: str | None
    tiers: tuple[TierResult, ...]
    outcome: Outcome
    detail: str
    wall_ms: float
    facts: ProbeFacts = ProbeFacts()
    warnings: tuple[str, ...] = ()
    """What passed but will bite: autoload off, torch.accelerator not neuron, eager fallback on."""

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def failed_tier(self) -> TierResult | None:
        return next((t for t in self.tiers if t.status == "fail"), None)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        data["verdict"] = verdict(self.ok, self.device)
        return data


HELLO = {"probe": "neuronctl-device-probe", "version": 1}
"""The probe script's first line: proof that the interpreter ran it (keep in step with it)."""
LINE_CAP = 4096
NAME = re.compile(r"[A-Za-z0-9_.\-]{1,100}")
"""A backend, accelerator or package name as the target reports it (validated: it reaches a fix)."""


def _device(value: Any) -> str:
    if value not in ("neuron", "cuda", "cpu"):
        raise MalformedLine("device is not neuron, cuda or cpu")
    return str(value)


def _text(limit: int, what: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not (isinstance(value, str) and len(value) <= limit):
            raise MalformedLine(f"{what} is not a short string")
        return printable(value, limit)
    return check


def _name(what: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not (isinstance(value, str) and NAME.fullmatch(value)):
            raise MalformedLine(f"{what} is not a name")
        return value
    return check


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise MalformedLine("autoloaded is not true or false")
    return value


def _count(value: Any) -> int:
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        raise MalformedLine("count is not a whole number")
    return int(value)


def _warnings(value: Any) -> tuple[str, ...]:
    if not (isinstance(value, list) and len(value) <= 5 and all(isinstance(v, str) for v in value)):
        raise MalformedLine("warnings is not a short list of strings")
    return tuple(printable(v, 400) for v in value)


def _names(value: Any) -> tuple[str, ...]:
    if not (isinstance(value, list) and len(value) <= 5
            and all(isinstance(v, str) and NAME.fullmatch(v) for v in value)):
        raise MalformedLine("competing is not a short list of names")
    return tuple(value)


def _torch(value: Any) -> str:
    if not (isinstance(value, str) and 0 < len(value) <= 64):
        raise MalformedLine("torch version is not a short string")
    return printable(value)


# Beyond tier, status, detail and ms, the fields each tier may report, each with its check.
FIELDS: Mapping[str, Mapping[str, Callable[[Any], Any]]] = {
    "import": {"torch": _torch, "extension": _name("extension")},
    "backend": {"device": _device, "autoload": _text(40, "autoload"), "autoloaded": _flag,
                "privateuse1": _name("privateuse1"), "accelerator": _name("accelerator"),
                "torch_neuronx": _text(64, "torch_neuronx"), "warnings": _warnings,
                "competing": _names},
    "device_count": {"count": _count},
    "compile": {"fallback_execution": _text(40, "fallback_execution"), "warnings": _warnings},
}


ProbeExit = ScriptExit
"""How the script's interpreter ended (the shared ScriptExit)."""


class MalformedLine(ValueError):
    """A line on the probe's channel that is not the tier record due next."""


def parse_tier_line(line: str, expected: str) -> tuple[TierResult, dict[str, Any]]:
    """One tier record, validated: the tier due next, a known status, typed fields, bounded; and
    its extra fields, each checked (a field reported as null is left out)."""
    record = json_record(line, LINE_CAP, MalformedLine)
    fields = FIELDS.get(expected, {})
    allowed = {"tier", "status", "detail", "ms", *fields}
    if not set(record) <= allowed:
        raise MalformedLine(f"unexpected field {printable(str(min(set(record) - allowed)), 40)!r}")
    if record.get("tier") != expected:
        raise MalformedLine(f"tier {printable(str(record.get('tier')), 40)!r} where {expected} was due")
    status, detail, ms = record.get("status"), record.get("detail"), record.get("ms")
    if status not in ("pass", "fail", "skip") or (status == "skip" and expected != "compile"):
        raise MalformedLine(f"status {printable(str(status), 40)!r} for tier {expected}")
    if not isinstance(detail, str):
        raise MalformedLine("detail is not a string")
    if isinstance(ms, bool) or not isinstance(ms, int | float) or not 0 <= ms <= 1e9:
        raise MalformedLine("ms is not a duration")
    extra = {key: check(record[key]) for key, check in fields.items() if record.get(key) is not None}
    return TierResult(expected, status, printable(detail, 600), float(ms)), extra


class _Reading(Struct):
    """What the probe's channel has said so far, while its lines are read and validated."""

    tiers: list[TierResult]
    greeted: bool = False
    values: dict[str, Any] = field(default_factory=dict)
    """The tiers' extra fields, checked."""
    warnings: list[str] = field(default_factory=list)

    @property
    def device(self) -> str | None:
        return self.values.get("device")

    @property
    def torch(self) -> str | None:
        return self.values.get("torch")

    def facts(self) -> ProbeFacts:
        known = set(ProbeFacts.__struct_fields__)
        return ProbeFacts(**{k: v for k, v in self.values.items() if k in known})


def _read_tiers(lines: Sequence[str]) -> _Reading:
    reading = _Reading([])
    with contextlib.suppress(ValueError, RecursionError):
        reading.greeted = bool(lines) and json.loads(lines[0]) == HELLO
    if not reading.greeted:
        return reading
    for line in lines[1:]:
        tiers = reading.tiers
        if len(tiers) == len(TIERS) or (tiers and tiers[-1].status != "pass"):
            break  # the probe stops at the first tier that does not pass: nothing after it counts
        expected = TIERS[len(tiers)]
        try:
            result, extra = parse_tier_line(line, expected)
        except MalformedLine as exc:
            tiers.append(TierResult(expected, "fail", f"malformed probe output: {exc}", 0.0))
            break
        reading.warnings.extend(extra.pop("warnings", ()))
        tiers.append(_named(result, extra.get("torch_neuronx")))
        reading.values.update(extra)
    return reading


def _named(result: TierResult, installed: str | None) -> TierResult:
    """A failed backend tier over a legacy XLA or placeholder torch-neuronx says which it is
    (neuronctl's classification, from the version the target reported)."""
    if result.tier != "backend" or result.status != "fail" or not installed:
        return result
    try:
        kind = classify(installed)
    except InputError:
        return result
    if kind.flavour == "xla":
        what = (f"legacy XLA build {kind.version} of torch-neuronx (PyTorch/XLA for torch "
                f"{kind.torch}: its device is 'xla', it creates no torch.neuron)")
    elif kind.flavour == "placeholder":
        what = f"PyPI placeholder torch-neuronx {kind.version}, not Neuron's package"
    else:
        return result
    return TierResult(result.tier, result.status, f"{what}: {result.detail}", result.ms)


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def parse_probe(requested: str, lines: Sequence[str], end: ProbeExit) -> ProbeReport:
    """The report from what the probe wrote on its channel and how its interpreter ended."""
    reading = _read_tiers(lines)
    tiers, wall = reading.tiers, end.wall_ms
    next_tier = TIERS[len(tiers)] if len(tiers) < len(TIERS) else None

    def report(outcome: Outcome, detail: str, tier_detail: str | None = None) -> ProbeReport:
        if tier_detail is not None and next_tier is not None:
            tiers.append(TierResult(next_tier, "fail", tier_detail, wall))
        torch = None if outcome == "no-torch" else reading.torch
        return ProbeReport(requested, reading.device, torch, tuple(tiers), outcome, detail, wall,
                           reading.facts(), tuple(reading.warnings))

    failed = next((t for t in tiers if t.status == "fail"), None)
    if failed is not None:
        if failed.tier == "import" and "No module named 'torch'" in failed.detail:
            return report("no-torch", "torch is not installed in the target environment")
        return report("failed", f"tier {failed.tier} failed: {failed.detail}")
    if end.channel_overflow:
        return report("error", "the probe wrote more than its channel holds",
                      "probe output exceeded its size limit")
    if end.returncode is None:
        where = f"in tier {next_tier}" if next_tier else "at exit, after the last tier"
        return report("timeout", f"probe timed out after {end.timeout:g}s {where}",
                      f"timed out after {end.timeout:g}s")
    if end.returncode < 0:
        what = _signal_name(end.returncode)
        return report("crashed", f"probe crashed with {what} in tier {next_tier or 'exit'}",
                      f"process killed by {what}")
    last = last_line(end.stderr_tail)
    if not reading.greeted:
        return report("error", f"the interpreter did not run the probe (is it Python 3.6+?): "
                               f"exit {end.returncode}: {last}", f"probe did not start: {last}")
    if end.returncode != 0 or next_tier is not None:
        return report("error", f"probe exited {end.returncode} before tier {next_tier}: {last}"
                      if next_tier else f"probe exited {end.returncode}: {last}",
                      f"exit {end.returncode}: {last}")
    if reading.device == "cpu":
        return report("ok", f"all tiers passed on cpu: {CPU_RUN}")
    return report("ok", f"all tiers passed on {reading.device}")


def tier_watcher(on_tier: Callable[[str], None]) -> Callable[[bytes], None]:
    """A channel reader for a live status: calls on_tier(next tier) as each tier's line comes.
    Only for the screen: the report is parsed, validated, from the whole run."""
    pending = bytearray()

    def feed(chunk: bytes) -> None:
        pending.extend(chunk)
        *lines, rest = bytes(pending).split(b"\n")
        pending[:] = rest[:4096]  # a line that never ends is not held whole
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            tier = record.get("tier") if isinstance(record, dict) else None
            if tier in TIERS and TIERS.index(tier) + 1 < len(TIERS):
                on_tier(TIERS[TIERS.index(tier) + 1])

    return feed


def run_device_probe(python: str, device: str = "auto", timeout: float = 120.0,
                     compile_tier: bool = False, env: Mapping[str, str] | None = None,
                     on_tier: Callable[[str], None] | None = None) -> ProbeReport:
    """The tiers in `python`; `on_tier(tier)` hears which tier runs next, as the run goes."""
    proc_env = dict(os.environ if env is None else env)
    proc_env.setdefault("PYTHONUNBUFFERED", "1")
    try:
        script = TargetScript(python, "device_probe.py", [device, "1" if compile_tier else "0"],
                              env=proc_env, contain=True)
    except OSError as exc:
        return ProbeReport(device, None, None, (), "error",
                           f"cannot run {python}: {exc.strerror or exc}", 0.0)
    if on_tier is not None:
        on_tier(TIERS[0])
    run = script.collect(timeout, CHANNEL_CAP, None if on_tier is None else tier_watcher(on_tier))
    return parse_probe(device, run.channel_lines(), run.ending(timeout))
