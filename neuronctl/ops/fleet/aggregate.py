"""One drift report over many nodes' doctor documents: pure, no I/O.

Nodes are grouped by an identical stack fingerprint; the largest group is the baseline and every
other node is described by exactly the fingerprint fields where it differs from it. The
fingerprint holds a digest of the node's whole distribution set (every name and version), so a
leftover package is drift however the doctor grades it, and the packages that differ are listed.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from functools import cached_property
from typing import Any

from msgspec import Struct, field

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
    # multi-node: the same collectives and libfabric on every node, EFA on each (issue 27;
    # libfabric and the EFA count come from network.efa, which the doctor runs at every level
    # in a step over more than one node: levels.MULTI_NODE_CHECKS)
    "collectives": ("hardware", "collectives"),
    "libfabric": ("efa", "libfabric"),
    "efa_devices": ("efa", "devices"),
    "chip": ("hardware", "chip"),
    "devices": ("hardware", "devices"),
    "instance_type": ("hardware", "instance_type"),
}
FINGERPRINT_FIELDS: tuple[str, ...] = (*FINGERPRINT_PATHS, "distributions", "failed_checks",
                                        "warned_checks")
MAX_VALUE_CHARS = 200
MALFORMED = "(malformed)"
NOT_INSTALLED = "(not installed)"
MAX_DISTRIBUTIONS = 20_000
DIST_NAME = re.compile(r"[a-z0-9](?:[a-z0-9._-]{0,198}[a-z0-9])?")  # a canonical PEP 503 name


class NodeResult(Struct, frozen=True):
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


def check_ids(document: dict[str, Any], status: str) -> list[str]:
    checks = document.get("checks")
    if not isinstance(checks, list):
        return []
    return sorted(_text(c.get("id")) for c in checks
                  if isinstance(c, dict) and c.get("status") == status)


def failed_check_ids(document: dict[str, Any]) -> list[str]:
    return check_ids(document, "fail")


def distributions(document: dict[str, Any]) -> dict[str, str] | None:
    """The node's installed distributions (canonical name -> version); None when its doctor
    reports none; MALFORMED's mapping when what it reports is not a bounded name -> version
    table (the node's document is untrusted)."""
    table = _dig(document, ("distributions",))
    if table is None:
        return None
    ok = isinstance(table, dict) and len(table) <= MAX_DISTRIBUTIONS and all(
        isinstance(k, str) and DIST_NAME.fullmatch(k) and isinstance(v, str)
        and 0 < len(v) <= MAX_VALUE_CHARS and v.isprintable() for k, v in table.items())
    return dict(sorted(table.items())) if ok else {MALFORMED: MALFORMED}


def _digest(table: dict[str, str] | None) -> str:
    if table is None:
        return NOT_REPORTED
    if MALFORMED in table:
        return MALFORMED
    text = "".join(f"{name}=={version}\n" for name, version in table.items())
    return f"sha256:{hashlib.sha256(text.encode()).hexdigest()[:16]} ({len(table)})"


def fingerprint(document: dict[str, Any]) -> dict[str, str]:
    """The facts that must agree across a cluster, as short printable strings."""
    out = {name: _text(_dig(document, path)) for name, path in FINGERPRINT_PATHS.items()}
    out["distributions"] = _digest(distributions(document))
    out["failed_checks"] = ",".join(failed_check_ids(document)) or "none"
    out["warned_checks"] = ",".join(check_ids(document, "warn")) or "none"
    return out


def package_differences(baseline: dict[str, str] | None, mine: dict[str, str] | None
                        ) -> dict[str, tuple[str, str]]:
    """name -> (baseline's version, this node's), for every distribution that differs."""
    if baseline is None or mine is None or MALFORMED in baseline or MALFORMED in mine:
        return {}
    names = sorted(set(baseline) | set(mine))
    return {n: (baseline.get(n, NOT_INSTALLED), mine.get(n, NOT_INSTALLED)) for n in names
            if baseline.get(n) != mine.get(n)}


def node_passed(result: NodeResult) -> bool:
    if result.document is None:
        return False
    summary = result.document.get("summary")
    verdict = summary.get("verdict") if isinstance(summary, dict) else None
    return verdict in ("pass", "warn") and result.exit_code in (0, None)


class FleetReport(Struct, dict=True):
    """The fleet doctor's nodes grouped by stack fingerprint, with how each differs."""

    nodes: list[NodeResult]
    groups: list[tuple[dict[str, str], list[str]]]  # (fingerprint, node names), baseline first
    differences: dict[str, dict[str, tuple[str, str]]]  # node -> field -> (baseline, node's)
    not_answering: dict[str, str] = field(default_factory=dict)  # node -> reason
    packages: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    """node -> distribution -> (baseline's version, node's), where the distribution sets differ."""

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
                "packages": {node: {name: {"baseline": b, "node": v}
                                        for name, (b, v) in diff.items()}
                             for node, diff in self.packages.items()},
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
    packages: dict[str, dict[str, tuple[str, str]]] = {}
    documents = {r.node: r.document for r in results if r.document is not None}
    if groups:
        base = groups[0][0]
        base_dists = distributions(documents[groups[0][1][0]])
        for _fp, names in groups[1:]:
            for name in names:
                mine = prints[name]
                differences[name] = {k: (base[k], mine[k]) for k in FINGERPRINT_FIELDS
                                     if mine[k] != base[k]}
                if "distributions" in differences[name]:
                    packages[name] = package_differences(base_dists,
                                                         distributions(documents[name]))
    return FleetReport(sorted(results, key=lambda r: r.node), groups, differences, not_answering,
                       packages)
