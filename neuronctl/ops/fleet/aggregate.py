"""One drift report over many nodes' doctor documents: pure, no I/O.

Nodes are grouped by an identical stack fingerprint; the largest group is the baseline and every
other node is described by exactly the fingerprint fields where it differs from it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

NOT_REPORTED = "(not reported)"

# fingerprint field -> where it is read in a doctor JSON document (environment section).
# `packages` and `hardware.tools` are read when the node's doctor reports them; a doctor that does
# not gives NOT_REPORTED, the same on every node, so it never shows up as drift.
FINGERPRINT_PATHS: dict[str, tuple[str, ...]] = {
    "release": ("release", "version"),
    "backend": ("release", "backend"),
    "python": ("python", "version"),
    "torch": ("packages", "torch"),
    "torch-neuronx": ("packages", "torch-neuronx"),
    "neuronx-cc": ("packages", "neuronx-cc"),
    "nki": ("packages", "nki"),
    "driver": ("hardware", "driver"),
    "runtime": ("hardware", "runtime"),
    "tools": ("hardware", "tools"),
    "chip": ("hardware", "chip"),
    "devices": ("hardware", "devices"),
    "instance_type": ("hardware", "instance_type"),
}
FINGERPRINT_FIELDS: tuple[str, ...] = (*FINGERPRINT_PATHS, "failed_checks")
MAX_VALUE_CHARS = 200


@dataclass(frozen=True)
class NodeResult:
    """One node's answer: its parsed doctor document, or why there is none."""

    node: str
    document: dict[str, Any] | None = None
    exit_code: int | None = None
    error: str | None = None  # set when the node did not answer (down, timed out, srun error)

    @property
    def answered(self) -> bool:
        return self.document is not None


def _text(value: Any) -> str:
    if value is None or isinstance(value, (dict, list)):
        return NOT_REPORTED
    text = "".join(ch for ch in str(value) if ch.isprintable())
    return text[:MAX_VALUE_CHARS] or NOT_REPORTED


def _dig(doc: dict[str, Any], path: tuple[str, ...]) -> Any:
    here: Any = doc.get("environment")
    for key in path:
        if not isinstance(here, dict):
            return None
        here = here.get(key)
    return here


def failed_check_ids(document: dict[str, Any]) -> list[str]:
    checks = document.get("checks")
    if not isinstance(checks, list):
        return []
    return sorted(_text(c.get("id")) for c in checks
                  if isinstance(c, dict) and c.get("status") == "fail")


def fingerprint(document: dict[str, Any]) -> dict[str, str]:
    """The facts that must agree across a cluster, as short printable strings."""
    out = {name: _text(_dig(document, path)) for name, path in FINGERPRINT_PATHS.items()}
    out["failed_checks"] = ",".join(failed_check_ids(document)) or "none"
    return out


def node_passed(result: NodeResult) -> bool:
    if result.document is None:
        return False
    summary = result.document.get("summary")
    verdict = summary.get("verdict") if isinstance(summary, dict) else None
    return verdict in ("pass", "warn") and result.exit_code in (0, None)


@dataclass
class FleetReport:
    """The fleet doctor's nodes grouped by stack fingerprint, with how each differs."""

    nodes: list[NodeResult]
    groups: list[tuple[dict[str, str], list[str]]]  # (fingerprint, node names), baseline first
    differences: dict[str, dict[str, tuple[str, str]]]  # node -> field -> (baseline, node's)
    not_answering: dict[str, str] = field(default_factory=dict)  # node -> reason

    @property
    def baseline(self) -> dict[str, str] | None:
        return self.groups[0][0] if self.groups else None

    @cached_property
    def failing(self) -> list[str]:
        return sorted(r.node for r in self.nodes if r.answered and not node_passed(r))

    @property
    def ok(self) -> bool:
        return (bool(self.groups) and not self.not_answering and not self.differences
                and not self.failing)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def summary(self) -> dict[str, Any]:
        return {"verdict": "pass" if self.ok else "fail", "exit_code": self.exit_code,
                "nodes": len(self.nodes), "answered": sum(r.answered for r in self.nodes),
                "not_answering": len(self.not_answering), "groups": len(self.groups),
                "drifted": len(self.differences), "failing": len(self.failing)}

    def drift_json(self) -> dict[str, Any]:
        return {"baseline": {"fingerprint": self.baseline,
                             "nodes": self.groups[0][1] if self.groups else []},
                "groups": [{"fingerprint": fp, "nodes": names} for fp, names in self.groups],
                "differences": {node: {k: {"baseline": b, "node": v} for k, (b, v) in diff.items()}
                                for node, diff in self.differences.items()},
                "not_answering": dict(self.not_answering),
                "failing": self.failing}


def aggregate(results: list[NodeResult]) -> FleetReport:
    """Group answered nodes by fingerprint; the largest group (ties: the one holding the first
    node name) is the baseline; every other node gets exactly the fields it differs in."""
    by_print: dict[tuple[tuple[str, str], ...], list[str]] = defaultdict(list)
    prints: dict[str, dict[str, str]] = {}
    not_answering: dict[str, str] = {}
    for result in sorted(results, key=lambda r: r.node):
        if result.document is None:
            not_answering[result.node] = result.error or "no answer"
            continue
        fp = fingerprint(result.document)
        prints[result.node] = fp
        by_print[tuple(fp.items())].append(result.node)
    ordered = sorted(by_print.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))
    groups = [(dict(key), names) for key, names in ordered]
    differences: dict[str, dict[str, tuple[str, str]]] = {}
    if groups:
        base = groups[0][0]
        for _fp, names in groups[1:]:
            for name in names:
                mine = prints[name]
                differences[name] = {k: (base[k], mine[k]) for k in FINGERPRINT_FIELDS
                                     if mine[k] != base[k]}
    return FleetReport(sorted(results, key=lambda r: r.node), groups, differences, not_answering)
