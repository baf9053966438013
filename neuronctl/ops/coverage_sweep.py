"""`neuronctl coverage --all` and `neuronctl coverage table`, as operations.

The sweep runs every causal-LM architecture the target's transformers knows, each in a child
forked from one interpreter that imported torch and transformers once (coverage_run.py's sweep):
each child's address space is bounded and its time limited; one that cannot be built (a required
config field, an optional dependency) is counted apart, with why. `coverage table` writes, from
the backend installed in a target, the table that `--table` reads elsewhere.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from msgspec import Struct

from neuronctl.errors import EXIT_FAILED, EXIT_OK, InputError
from neuronctl.ops.coverage import (
    ModelCoverage,
    check_common,
    model_coverage,
)
from neuronctl.ops.coverage_table import table_document
from neuronctl.ops.reporter import Reporter, status
from neuronctl.probes.coverage import ModelRun, run_coverage_script

DEFAULT_ARCH_TIMEOUT = 300.0
DEFAULT_MEMORY_MB = 16 * 1024
TABLE_TIMEOUT = 300.0


class SweepRequest(Struct, frozen=True):
    """What `coverage --all` was asked: how to build each architecture, which, and the bounds."""

    python: str
    layers: int = 2
    tiny: bool = False
    train: bool = False
    dtype: str = "float32"
    table: Path | None = None
    limit: int | None = None
    arch_filter: str | None = None
    arch_timeout: float = DEFAULT_ARCH_TIMEOUT
    memory_mb: int = DEFAULT_MEMORY_MB
    strict: bool = False


class ArchResult(Struct, frozen=True):
    """One architecture of the sweep: its coverage, or why it has none."""

    name: str
    outcome: str
    detail: str
    coverage: ModelCoverage | None = None
    wall_ms: float | None = None

    @property
    def verdict(self) -> str:
        """fully-native / fallback / unsupported / unknown for one that ran, else its outcome."""
        if self.coverage is None:
            return self.outcome
        s = self.coverage.summary
        if s.unsupported:
            return "unsupported"
        if s.unknown:
            return "unknown"
        return "fallback" if s.cpu_fallback else "native"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "outcome": self.outcome, "detail": self.detail,
                                "verdict": self.verdict, "wall_ms": self.wall_ms}
        if self.coverage is not None:
            data.update(summary=self.coverage.summary.to_json(),
                        not_native=[o.op for o in self.coverage.operators if o.klass != "native"])
        return data


class SweepOutcome(Struct, frozen=True):
    """How the sweep ended: each architecture's result, and where the classes came from."""

    outcome: str
    detail: str
    archs: tuple[ArchResult, ...] = ()
    source: dict[str, Any] | None = None
    torch: str | None = None
    transformers: str | None = None
    strict: bool = False

    def counts(self) -> dict[str, int]:
        keys = ("ran", "unbuildable", "failed", "native", "fallback", "unsupported", "unknown")
        counts = dict.fromkeys(keys, 0)
        for arch in self.archs:
            if arch.coverage is not None:
                counts["ran"] += 1
                counts[arch.verdict] += 1
            elif arch.outcome == "unbuildable":
                counts["unbuildable"] += 1
            else:
                counts["failed"] += 1
        return {"total": len(self.archs), **counts}

    @property
    def failure(self) -> str | None:
        if self.outcome != "ok":
            return f"coverage --all {self.outcome}: {self.detail}"
        counts = self.counts()
        if counts["unsupported"]:
            return f"{counts['unsupported']} architecture(s) hit an unsupported operator"
        if self.strict and counts["fallback"]:
            return f"{counts['fallback']} architecture(s) fall back to the CPU (--strict)"
        return None

    @property
    def exit_code(self) -> int:
        return EXIT_FAILED if self.failure else EXIT_OK

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "detail": self.detail, "torch": self.torch,
                "transformers": self.transformers, "counts": self.counts(),
                "source": self.source, "archs": [a.to_json() for a in self.archs]}


def _arch(run: ModelRun, request: SweepRequest, found: Any, table: Any) -> ArchResult:
    name = run.name or "?"
    if run.outcome != "ok":
        return ArchResult(name, run.outcome, run.detail, wall_ms=run.wall_ms)
    coverage = model_coverage(run, table, found, request.train, request.dtype)
    return ArchResult(name, "ok", coverage.verdict(), coverage, run.wall_ms)


def run_sweep(request: SweepRequest, reporter: Reporter) -> SweepOutcome:
    """Every causal-LM architecture of the target's transformers, one child each."""
    table = check_common(request.layers, request.dtype, request.table)
    if request.arch_filter is not None:
        try:
            re.compile(request.arch_filter)
        except re.error as exc:
            raise InputError(f"--arch-filter {request.arch_filter!r}: not a regular expression "
                             f"({exc})") from None
    if request.limit is not None and request.limit < 1:
        raise InputError(f"--limit {request.limit}: expected 1 or more")
    body = {"mode": "sweep", "layers": request.layers, "tiny": request.tiny,
            "train": request.train, "dtype": request.dtype, "device": "cpu", "origin": "--arch",
            "limit": request.limit, "arch_filter": request.arch_filter,
            "arch_timeout": request.arch_timeout, "memory_mb": request.memory_mb}
    reporter.emit(status("coverage: importing torch and transformers in the target"))

    def on_arch(i: int, n: int, name: str) -> None:
        reporter.emit(status(f"coverage: {i} of {n} architectures done ({name})", i, n))

    budget = request.arch_timeout * (request.limit or 1000) + 120
    found = run_coverage_script(request.python, body, budget, on_arch=on_arch)
    archs = tuple(_arch(run, request, found, table) for run in found.sweep)
    source = None
    if archs and any(a.coverage for a in archs):
        source = next(a.coverage.source.to_json() for a in archs if a.coverage is not None)
    return SweepOutcome(found.outcome, found.detail, archs, source, found.torch,
                        found.transformers, request.strict)


class TableOutcome(Struct, frozen=True):
    """`coverage table`'s result: the table document, or why there is none."""

    outcome: str
    detail: str
    document: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.document is not None else EXIT_FAILED

    def to_json(self) -> dict[str, Any]:
        doc = self.document or {}
        return {"outcome": self.outcome, "detail": self.detail,
                "torch_neuronx": doc.get("torch_neuronx"), "torch": doc.get("torch"),
                "ops": len(doc.get("ops", {}))}


def make_table(python: str, reporter: Reporter, timeout: float = TABLE_TIMEOUT) -> TableOutcome:
    """The table of the Neuron backend installed in `python` (every ATen overload: Y, CPU_FALLBACK
    or N, as its dispatcher routes a neuron tensor)."""
    reporter.emit(status(f"coverage table: reading the dispatcher in {python}"))
    found = run_coverage_script(python, {"mode": "table"}, timeout)
    if found.outcome != "ok":
        return TableOutcome(found.outcome, found.detail)
    version = found.backend.torch_neuronx if found.backend else None
    document = table_document(found.table, version, found.torch)
    native = sum(1 for v in found.table.values() if v == "Y")
    fallback = sum(1 for v in found.table.values() if v == "CPU_FALLBACK")
    return TableOutcome("ok", f"{len(found.table)} operators: {native} Y, {fallback} CPU_FALLBACK, "
                              f"{len(found.table) - native - fallback} N "
                              f"(torch-neuronx {version or 'version not published'})", document)
