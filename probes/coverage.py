"""`neuronctl coverage` in the target interpreter: running probes/scripts/coverage_run.py, and
reading what it reported.

Running goes through target_run (a private channel, a deadline, the process group and whatever
the model started killed at the end), as smoke does. Reading validates every line: an operator
record is a bounded name of ATen's shape, a count, dtypes and a module, and a class only of the
four words; a target that writes anything else gets an "error" outcome, never a verdict.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from msgspec import Struct, field

from neuronctl.probes.target_run import ScriptExit, TargetScript, json_record, last_line, printable

CHANNEL_CAP = 16 * 1024 * 1024
LINE_CAP = 8 * 1024 * 1024
MAX_OPS = 5000
OP_NAME = re.compile(r"[a-z_][a-z0-9_]*::[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)?")
CLASSES = ("native", "cpu_fallback", "unsupported", "unknown")
Outcome = Literal["ok", "bad-input", "unbuildable", "failed", "timeout", "crashed", "error"]
RESULTS: dict[str, Outcome] = {"ok": "ok", "bad-input": "bad-input", "unbuildable": "unbuildable",
                               "fail": "failed", "timeout": "timeout", "crashed": "crashed"}


class Malformed(ValueError):
    """A channel line that is not what the script writes."""


class OpRecord(Struct, frozen=True):
    """One ATen overload a model ran: 'aten::mm', 'aten::add.Tensor'."""

    op: str
    calls: int
    dtypes: tuple[str, ...]
    module: str
    backend_class: str | None = None
    """What the target's own Neuron backend says (None: no backend there)."""


class Backend(Struct, frozen=True):
    """The Neuron backend as the target's dispatcher sees it."""

    present: bool
    torch_neuronx: str | None = None
    fallback: bool = False
    error: str | None = None


class ModelRun(Struct, frozen=True):
    """One model's recording: how it ended, and what it ran."""

    outcome: Outcome
    detail: str
    model: str | None = None
    params: int | None = None
    operators: tuple[OpRecord, ...] = ()
    cpu_ms: float | None = None
    confirm: Mapping[str, Any] | None = None
    name: str | None = None
    """The architecture, in a sweep."""
    wall_ms: float | None = None


class CoverageRun(Struct, frozen=True):
    """What the script reported: the target's facts and one run, a sweep's runs, or a table."""

    outcome: Outcome
    detail: str
    torch: str | None = None
    transformers: str | None = None
    backend: Backend | None = None
    run: ModelRun | None = None
    sweep: tuple[ModelRun, ...] = ()
    table: Mapping[str, str] = field(default_factory=dict)


def _text(value: Any, what: str, cap: int = 500) -> str:
    if not isinstance(value, str):
        raise Malformed(f"{what} is not text")
    return printable(value, cap)


def _op(entry: Any) -> OpRecord:
    if not isinstance(entry, dict):
        raise Malformed("an operator is not an object")
    op, calls, dtypes = entry.get("op"), entry.get("calls"), entry.get("dtypes")
    if not isinstance(op, str) or not OP_NAME.fullmatch(op) or len(op) > 200:
        raise Malformed(f"operator name {str(op)[:60]!r}")
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
        raise Malformed(f"{op}: call count")
    if not isinstance(dtypes, list) or len(dtypes) > 32:
        raise Malformed(f"{op}: dtypes")
    klass = entry.get("class")
    if klass is not None and klass not in CLASSES:
        raise Malformed(f"{op}: class {str(klass)[:30]!r}")
    return OpRecord(op, calls, tuple(_text(d, "dtype", 40) for d in dtypes),
                    _text(entry.get("module", ""), "module", 200), klass)


def _model_run(record: dict[str, Any]) -> ModelRun:
    outcome = RESULTS.get(str(record.get("result")))
    if outcome is None:
        raise Malformed(f"result {str(record.get('result'))[:30]!r}")
    ops = record.get("operators", [])
    if not isinstance(ops, list) or len(ops) > MAX_OPS:
        raise Malformed("operators")
    confirm = record.get("confirm")
    if confirm is not None and not isinstance(confirm, dict):
        raise Malformed("confirm")
    params = record.get("params")
    cpu_ms = record.get("cpu_ms")
    return ModelRun(
        outcome, _text(record.get("error") or "", "error"),
        _text(record["model"], "model", 200) if record.get("model") is not None else None,
        params if isinstance(params, int) and not isinstance(params, bool) else None,
        tuple(_op(entry) for entry in ops),
        float(cpu_ms) if isinstance(cpu_ms, (int, float)) else None, confirm,
        _text(record["name"], "name", 100) if record.get("name") is not None else None,
        record.get("wall_ms") if isinstance(record.get("wall_ms"), (int, float)) else None)


def _backend(value: Any) -> Backend | None:
    if not isinstance(value, dict):
        return None
    version = value.get("torch_neuronx")
    return Backend(bool(value.get("present")),
                   _text(version, "torch_neuronx", 60) if isinstance(version, str) else None,
                   bool(value.get("fallback")),
                   _text(value["error"], "error") if isinstance(value.get("error"), str) else None)


def _table(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or len(value) > 50_000:
        raise Malformed("table")
    words = ("Y", "CPU_FALLBACK", "N")
    if not all(isinstance(k, str) and OP_NAME.fullmatch(k) and v in words for k, v in value.items()):
        raise Malformed("a table entry")
    return dict(value)


def parse(lines: Sequence[str], end: ScriptExit) -> CoverageRun:
    """The run from the channel's lines and how the interpreter ended."""
    facts: dict[str, Any] = {}
    sweep: list[ModelRun] = []
    greeted = False
    try:
        for line in lines:
            record = json_record(line, LINE_CAP, Malformed)
            kind = record.get("type")
            if not greeted:
                if record.get("coverage") != "neuronctl-coverage":
                    raise Malformed("no hello")
                greeted = True
            elif kind == "info":
                facts.update(record)
            elif kind == "arch":
                sweep.append(_model_run(record))
            elif kind == "result":
                return _finished(record, facts, tuple(sweep))
    except Malformed as exc:
        return CoverageRun("error", f"malformed coverage output: {exc}")
    if end.returncode is None:
        return CoverageRun("timeout", f"timed out after {end.timeout:g}s", sweep=tuple(sweep))
    why = "crashed" if end.returncode < 0 else f"exited {end.returncode}"
    return CoverageRun("crashed" if end.returncode < 0 else "error",
                       f"the interpreter {why} without a result: {last_line(end.stderr_tail)}",
                       sweep=tuple(sweep))


def _finished(record: dict[str, Any], facts: dict[str, Any], sweep: tuple[ModelRun, ...]) -> CoverageRun:
    run = _model_run(record)
    torch, transformers = facts.get("torch"), facts.get("transformers")
    return CoverageRun(run.outcome, run.detail,
                       _text(torch, "torch", 60) if isinstance(torch, str) else None,
                       _text(transformers, "transformers", 60) if isinstance(transformers, str) else None,
                       _backend(facts.get("backend")), run if run.operators or run.model else None,
                       sweep, _table(record["ops"]) if "ops" in record else {})


def arch_watcher(on_arch: Callable[[int, int, str], None]) -> Callable[[bytes], None]:
    """A channel reader for the sweep's progress: on_arch(i, n, name) as each one ends (only
    for the screen; the report is parsed from the whole run)."""
    pending = bytearray()

    def feed(chunk: bytes) -> None:
        pending.extend(chunk)
        *lines, rest = bytes(pending).split(b"\n")
        pending[:] = rest
        for line in lines:
            if b'"arch"' not in line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("type") == "arch" and isinstance(
                    event.get("i"), int) and isinstance(event.get("n"), int):
                on_arch(event["i"], event["n"], printable(str(event.get("name")), 60))

    return feed


def run_coverage_script(python: str, request: Mapping[str, Any], timeout: float,
                        env: Mapping[str, str] | None = None, cwd: str | None = None,
                        on_arch: Callable[[int, int, str], None] | None = None) -> CoverageRun:
    """Run the coverage script in `python` with `request` (its JSON), at most `timeout` s."""
    proc_env = dict(os.environ if env is None else env)
    proc_env.setdefault("PYTHONUNBUFFERED", "1")
    # The request (a config.json may be megabytes) goes in a private file, not argv: one argument
    # is at most 128 KiB on Linux.
    with tempfile.TemporaryDirectory(prefix="neuronctl-coverage-") as folder:
        path = os.path.join(folder, "request.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(dict(request), handle)
        try:
            script = TargetScript(python, "coverage_run.py", [path], env=proc_env, cwd=cwd,
                                  contain=True)
        except OSError as exc:
            return CoverageRun("error", f"cannot run {python}: {exc.strerror or exc}")
        run = script.collect(timeout, CHANNEL_CAP,
                             None if on_arch is None else arch_watcher(on_arch))
    if run.channel_overflow:
        return CoverageRun("error", "the coverage script wrote more than its channel holds")
    return parse(run.channel_lines(), run.ending(timeout))
