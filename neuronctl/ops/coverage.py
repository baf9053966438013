"""`neuronctl coverage` as an operation: which ATen operators a model runs, and which of them the
Neuron backend runs natively, sends to the CPU, or lacks.

The request is checked here, before anything runs (one model source, --model-config's JSON and its
model_type, --table's every line, the numbers in range): exit 2. The model is built and recorded
in the target interpreter (probes/coverage.py). Each operator's class comes from, in order: the
--table given; the Neuron backend installed in the target (its dispatcher registrations); else
`unknown`, never a guess. The sweep (--all) and `coverage table` are in coverage_sweep.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import msgspec
from msgspec import Struct, field

from neuronctl.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, InputError
from neuronctl.ops.coverage_table import HOW_TO_GET, OpTable, read_table
from neuronctl.ops.reporter import Reporter, StepDone, StepStarted, status
from neuronctl.ops.smoke import check_model_spec
from neuronctl.probes.coverage import Backend, CoverageRun, ModelRun, run_coverage_script

DEFAULT_TIMEOUT = 600.0
MAX_CONFIG_BYTES = 4 * 1024 * 1024
MAX_LAYERS = 64
DTYPES = ("float32", "bfloat16")
ARCH = re.compile(r"[A-Za-z0-9_-]{1,80}")
Class = Literal["native", "cpu_fallback", "unsupported", "unknown"]


class CoverageRequest(Struct, frozen=True):
    """What `neuronctl coverage` was asked: one model source, how to build and run it."""

    python: str
    arch: str | None = None
    config: Path | None = None
    model: str | None = None
    script: Path | None = None
    layers: int = 2
    tiny: bool = False
    train: bool = False
    dtype: str = "float32"
    device: str = "cpu"
    """'cpu', or 'neuron' to confirm the CPU run on the device."""
    table: Path | None = None
    strict: bool = False
    timeout: float = DEFAULT_TIMEOUT
    cwd: Path | None = None


class Operator(Struct, frozen=True):
    """One ATen overload the model ran, classified."""

    op: str
    calls: int
    klass: Class
    module: str
    dtypes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "calls": self.calls, "class": self.klass, "module": self.module,
                "dtypes": list(self.dtypes)}


class Source(Struct, frozen=True):
    """Where the classes came from: a table file, the target's backend, or nowhere."""

    kind: Literal["table", "backend", "none"]
    detail: str
    torch_neuronx: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "detail": self.detail, "torch_neuronx": self.torch_neuronx}


class Summary(Struct, frozen=True):
    """How many operators fall in each class."""

    total: int = 0
    native: int = 0
    cpu_fallback: int = 0
    unsupported: int = 0
    unknown: int = 0

    @staticmethod
    def of(operators: tuple[Operator, ...]) -> Summary:
        counts = {k: sum(1 for o in operators if o.klass == k)
                  for k in ("native", "cpu_fallback", "unsupported", "unknown")}
        return Summary(len(operators), **counts)

    def to_json(self) -> dict[str, int]:
        return msgspec.structs.asdict(self)


class ModelCoverage(Struct, frozen=True):
    """One model's operators, classified."""

    model: str
    mode: str
    dtype: str
    operators: tuple[Operator, ...]
    source: Source
    params: int | None = None
    cpu_ms: float | None = None
    confirm: dict[str, Any] | None = None

    @property
    def summary(self) -> Summary:
        return Summary.of(self.operators)

    def named(self, klass: str) -> tuple[Operator, ...]:
        return tuple(o for o in self.operators if o.klass == klass)

    def verdict(self) -> str:
        """'llama, forward, float32: 23 operators: 20 native, 2 cpu fallback (aten::a, aten::b),
        1 unknown'."""
        s, parts = self.summary, []
        for klass, words in (("native", "native"), ("cpu_fallback", "cpu fallback"),
                             ("unsupported", "unsupported"), ("unknown", "unknown")):
            count = getattr(s, klass)
            if not count:
                continue
            named = self.named(klass)
            listed = f" ({', '.join(o.op for o in named[:6])}{', ...' if count > 6 else ''})" \
                if klass in ("cpu_fallback", "unsupported") else ""
            parts.append(f"{count} {words}{listed}")
        return f"{self.model}, {self.mode}, {self.dtype}: {s.total} operators: {', '.join(parts)}"

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "mode": self.mode, "dtype": self.dtype,
                "params": self.params, "operators": [o.to_json() for o in self.operators],
                "summary": self.summary.to_json(), "source": self.source.to_json(),
                "cpu_ms": self.cpu_ms, "confirm": self.confirm}


class CoverageOutcome(Struct, frozen=True):
    """How `neuronctl coverage` ended: the classified model, or why there is none."""

    outcome: str
    detail: str
    strict: bool = False
    coverage: ModelCoverage | None = None
    torch: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def bad_input(self) -> bool:
        return self.outcome == "bad-input"

    @property
    def failure(self) -> str | None:
        """Why the exit code is 1 (None: it is 0 or 2)."""
        if self.coverage is None:
            return None if self.bad_input else f"coverage {self.outcome}: {self.detail}"
        s = self.coverage.summary
        if s.unsupported:
            return f"{s.unsupported} operator(s) not supported by the Neuron backend"
        if self.strict and s.cpu_fallback:
            return f"{s.cpu_fallback} operator(s) fall back to the CPU (--strict)"
        confirm = self.coverage.confirm or {}
        differ = [k for k, v in (confirm.get("compare") or {}).items()
                  if not (isinstance(v, dict) and v.get("ok"))]
        return f"on the device, {' and '.join(differ)} differ from CPU" if differ else None

    @property
    def exit_code(self) -> int:
        if self.bad_input:
            return EXIT_USAGE
        return EXIT_FAILED if self.failure else EXIT_OK

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"outcome": self.outcome, "detail": self.detail, "torch": self.torch}
        if self.coverage is not None:
            data.update(self.coverage.to_json())
        return data


def read_config(path: Path) -> dict[str, Any]:
    """--model-config FILE: a JSON object with a model_type, bounded; else exit 2 in one line."""
    from neuronctl.safety import expand_user, read_regular

    raw = read_regular(expand_user(path, "--model-config"), MAX_CONFIG_BYTES, f"--model-config {path}")
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise InputError(f"--model-config {path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"--model-config {path}:{exc.lineno}: not JSON ({exc.msg})") from None
    except RecursionError:
        raise InputError(f"--model-config {path}: nested too deep") from None
    if not isinstance(data, dict):
        raise InputError(f"--model-config {path}: not a JSON object (a model's config.json is one)")
    model_type = data.get("model_type")
    if not isinstance(model_type, str) or not ARCH.fullmatch(model_type):
        raise InputError(f"--model-config {path}: no \"model_type\" (the architecture, e.g. \"llama\"); "
                         "a model's config.json names it")
    return data


def check_common(layers: int, dtype: str, table: Path | None) -> OpTable | None:
    if not 1 <= layers <= MAX_LAYERS:
        raise InputError(f"--layers {layers}: expected 1 to {MAX_LAYERS}")
    if dtype not in DTYPES:
        raise InputError(f"--dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    return read_table(table) if table is not None else None


def script_request(request: CoverageRequest) -> dict[str, Any]:
    """The script's request for one model, or exit 2 for a request wrong on its face."""
    given = [n for n, v in (("--arch", request.arch), ("--model-config", request.config),
                            ("--model", request.model), ("--script", request.script)) if v]
    if len(given) != 1:
        raise InputError(f"give one of --arch, --model-config, --model, --script, --all (got "
                         f"{', '.join(given) or 'none'})")
    if request.device not in ("cpu", "neuron"):
        raise InputError(f"--device {request.device!r}: expected cpu or neuron")
    body: dict[str, Any] = {"mode": "one", "layers": request.layers, "tiny": request.tiny,
                            "train": request.train, "dtype": request.dtype,
                            "device": request.device, "origin": given[0]}
    if request.arch is not None:
        if not ARCH.fullmatch(request.arch):
            raise InputError(f"--arch {request.arch!r}: not an architecture name (model_type, "
                             "e.g. llama)")
        body["arch"] = request.arch
    elif request.config is not None:
        body["config"], body["config_file"] = read_config(request.config), str(request.config)
    elif request.model is not None:
        body["model"] = check_model_spec(request.model)
    else:
        assert request.script is not None
        from neuronctl.safety import expand_user

        script = expand_user(request.script, "--script")
        if not script.is_file():
            raise InputError(f"--script {request.script}: no such file")
        body["script"] = str(script.resolve())
    return body


def classify(run: ModelRun, table: OpTable | None, backend: Backend | None) -> tuple[
        tuple[Operator, ...], Source]:
    """Each recorded operator's class, from the table, else the backend, else unknown."""
    if table is not None:
        source = Source("table", table.path, table.torch_neuronx)
        return tuple(Operator(r.op, r.calls, table.lookup(r.op), r.module, r.dtypes)  # type: ignore[arg-type]
                     for r in run.operators), source
    if backend is not None and backend.present:
        source = Source("backend", "the Neuron backend installed in the target",
                        backend.torch_neuronx)
        return tuple(Operator(r.op, r.calls, r.backend_class or "unknown", r.module, r.dtypes)  # type: ignore[arg-type]
                     for r in run.operators), source
    why = HOW_TO_GET if backend is None or not backend.error else \
        f"torch_neuronx failed to import ({backend.error}); {HOW_TO_GET}"
    return tuple(Operator(r.op, r.calls, "unknown", r.module, r.dtypes)
                 for r in run.operators), Source("none", why)


def model_coverage(run: ModelRun, table: OpTable | None, found: CoverageRun, train: bool,
                   dtype: str) -> ModelCoverage:
    operators, source = classify(run, table, found.backend)
    return ModelCoverage(run.model or run.name or "model", "train" if train else "forward", dtype,
                         operators, source, run.params, run.cpu_ms,
                         dict(run.confirm) if run.confirm is not None else None)


def run_coverage(request: CoverageRequest, reporter: Reporter) -> CoverageOutcome:
    """Record and classify one model's operators. Raises InputError only for a request wrong on
    its face; what the run finds (a factory that raises included) is in the outcome."""
    table = check_common(request.layers, request.dtype, request.table)
    body = script_request(request)
    label = body.get("arch") or body.get("config_file") or body.get("model") or body.get("script")
    reporter.emit(StepStarted(f"coverage: {label} in {request.python}", "coverage"))
    reporter.emit(status(f"coverage: building and running {label} in the target"))
    found = run_coverage_script(request.python, body, request.timeout,
                                cwd=None if request.cwd is None else str(request.cwd))
    reporter.emit(StepDone(f"coverage: {found.outcome}", "coverage"))
    if found.outcome != "ok" or found.run is None:
        outcome = "bad-input" if found.outcome == "bad-input" else found.outcome
        return CoverageOutcome(outcome, found.detail, request.strict, torch=found.torch)
    coverage = model_coverage(found.run, table, found, request.train, request.dtype)
    return CoverageOutcome("ok", coverage.verdict(), request.strict, coverage, found.torch)
