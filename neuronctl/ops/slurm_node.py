"""`doctor --slurm-drain`: drain this node on failure, resume it when neuronctl drained it and it
passes again, and never touch a node drained for any other reason (LBNL NHC's rule).

The decision is pure (`decide`); `apply_slurm_drain` reads the node with `scontrol show node`,
decides, and runs `scontrol update` through the runner it is given.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from msgspec import Struct

from neuronctl import proc
from neuronctl.errors import FaultError, InputError

if TYPE_CHECKING:
    from neuronctl.ops.doctor.runner import CheckResult

REASON_PREFIX = "neuronctl:"
MAX_REASON_CHARS = 200
# Matched with fullmatch: `$` would also match before a trailing newline.
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
CHECK_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
# A reason neuronctl wrote, and only that (drain_reason, cut at MAX_REASON_CHARS): a drain whose
# reason merely starts with "neuronctl:" is another admin's, and never resumed.
OUR_REASON = re.compile(r"neuronctl: (?:doctor failed|[a-z0-9][a-z0-9._-]*(?:,[a-z0-9][a-z0-9._-]*)*,?)")

DRAIN_ON = ("drain", "fail", "warn")
"""What drains the node (--drain-on, config `drain_on`): `drain` (the default) only outcomes of
severity drain (hardware errors, no driver, devices missing: DCGM's rule that the severity, not
the mere failure, decides the action); `fail` every failing check (and, with --strict, every
warning), as before severities; `warn` every failing or warning check."""
DEFAULT_DRAIN_ON = "drain"


def drain_on_value(flag: str | None, config_value: object) -> str:
    """--drain-on, else config `drain_on`, else `drain`; anything else is exit 2."""
    chosen = flag if flag is not None else config_value if config_value is not None \
        else DEFAULT_DRAIN_ON
    if chosen not in DRAIN_ON:
        where = "--drain-on" if flag is not None else "config drain_on"
        raise InputError(f"{where}: must be one of {', '.join(DRAIN_ON)}, got {chosen!r}")
    return str(chosen)


def drain_triggers(checks: Iterable[CheckResult], drain_on: str, strict: bool = False) -> list[str]:
    """The checks whose outcome drains the node under `drain_on` (pure)."""
    if drain_on not in DRAIN_ON:
        raise InputError(f"drain_on must be one of {', '.join(DRAIN_ON)}, got {drain_on!r}")
    out = []
    for c in checks:
        if drain_on == "drain":
            hit = c.status in ("fail", "warn") and c.severity == "drain"
        elif drain_on == "warn":
            hit = c.status in ("fail", "warn")
        else:
            hit = c.status == "fail" or (strict and c.status == "warn")
        if hit:
            out.append(c.id)
    return out


# (argv, seconds) -> (exit code, stdout, stderr)
ScontrolRunner = Callable[[list[str], float], tuple[int, str, str]]


class NodeState(Struct, frozen=True):
    """A Slurm node's state and reason, as scontrol shows them."""

    state: str  # scontrol's State=, e.g. IDLE, IDLE+DRAIN, MIXED+DRAIN
    reason: str  # Reason= without scontrol's " [user@time]" suffix; "" when none

    @property
    def drained(self) -> bool:
        return "DRAIN" in self.state.upper()


class DrainOutcome(Struct, frozen=True):
    """What the doctor did to its Slurm node (drain, resume or nothing) and why."""

    node: str
    action: str  # "drain", "resume", "none"
    why: str


def drain_reason(failed_ids: list[str]) -> str:
    ids = [i for i in failed_ids if CHECK_ID.fullmatch(i)] or ["doctor failed"]
    return f"{REASON_PREFIX} {','.join(ids)}"[:MAX_REASON_CHARS]


def decide(state: NodeState, failed: bool, failed_ids: list[str]) -> tuple[str, str]:
    ours = len(state.reason) <= MAX_REASON_CHARS and OUR_REASON.fullmatch(state.reason) is not None
    if failed:
        wanted = drain_reason(failed_ids)
        if state.drained and not ours:
            return "none", f"already drained for another reason ({state.reason or 'none given'})"
        if state.drained and state.reason == wanted:
            return "none", "already drained by neuronctl for the same checks"
        return "drain", wanted
    if state.drained and ours:
        return "resume", f"passes again (was: {state.reason})"
    if state.drained:
        return "none", f"drained for another reason ({state.reason or 'none given'}); left alone"
    return "none", "healthy and not drained"


# `scontrol show node NAME` (Slurm 22.05-24.x) prints one record: "NodeName=NAME k=v ..." at
# column 0, then field lines indented by exactly three spaces, each holding space-separated
# KEY=VALUE tokens, except the free-text fields below, whose value is the rest of the line.
# slurmctld indents a multi-line Reason's further lines deeper; Comment and Extra (set by any
# admin) and the node's features are printed raw, so their text can hold a line that looks like
# "   State=IDLE" or "   Reason=neuronctl: ...". A record in which State or Reason appears twice,
# or a second record, is therefore refused, never guessed at.
FREE_TEXT = ("OS", "Reason", "Comment", "Extra")
FIELD_INDENT = "   "
MAX_SHOW_CHARS = 1 << 20
STATE = re.compile(r"[A-Z0-9_]+(?:[*~#!%$@^-]*)(?:\+[A-Z0-9_]+[*~#!%$@^-]*)*")
SUFFIX = re.compile(r" \[[^\s\[\]]*@[^\s\[\]]*\]$")  # slurmctld's " [user@time]"


class ShowNodeError(FaultError):
    """`scontrol show node` printed something that is not one unambiguous node record."""


def _fields(text: str, node: str | None) -> tuple[list[tuple[str, str]], list[str]]:
    """The record's (key, value) pairs in order, and the Reason's continuation lines."""
    lines = text.split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    if not lines or not lines[0].startswith("NodeName="):
        raise ShowNodeError("scontrol show node: output does not start with NodeName=")
    pairs: list[tuple[str, str]] = []
    continuation: list[str] = []
    for number, line in enumerate(lines):
        if number and line.startswith(FIELD_INDENT + " ") and pairs and pairs[-1][0] == "Reason":
            continuation.append(line.strip())
            continue
        if number and not line.startswith(FIELD_INDENT):
            raise ShowNodeError(f"scontrol show node: line {number + 1} is not a field of one node "
                                "record (a second record, or text that looks like one)")
        body = line[len(FIELD_INDENT):] if number else line
        key, eq, value = body.partition("=")
        if eq and key in FREE_TEXT:
            pairs.append((key, value))
            continue
        for token in body.split():
            key, eq, value = token.partition("=")
            pairs.append((key, value) if eq else ("", token))
    if node is not None and pairs[0] != ("NodeName", node):
        raise ShowNodeError(f"scontrol show node {node}: the record is for {pairs[0][1]!r}")
    return pairs, continuation


def parse_show_node(text: str, node: str | None = None) -> NodeState:
    """The node's State= and Reason= as `scontrol show node` prints them; ShowNodeError where
    the record is not exactly one node's or names State or Reason other than once."""
    if len(text) > MAX_SHOW_CHARS:
        raise ShowNodeError(f"scontrol show node: output over {MAX_SHOW_CHARS} characters")
    pairs, continuation = _fields(text, node)
    states = [v for k, v in pairs if k == "State"]
    reasons = [v for k, v in pairs if k == "Reason"]
    if len(states) != 1 or len(reasons) > 1:
        raise ShowNodeError(f"scontrol show node: {len(states)} State= and {len(reasons)} Reason= "
                            "fields; one record has one State and at most one Reason")
    if not STATE.fullmatch(states[0]):
        raise ShowNodeError(f"scontrol show node: State={states[0][:80]!r} is not a Slurm state")
    reason = SUFFIX.sub("", reasons[0].rstrip()) if reasons else ""
    reason = "\n".join([reason, *continuation]) if continuation else reason
    return NodeState(states[0], "" if reason == "(null)" else reason)


def scontrol(argv: list[str], limit: float) -> tuple[int, str, str]:
    # Bounded: more than 4 bytes a character of MAX_SHOW_CHARS is refused as over it anyway.
    keep = proc.Keep(4 * MAX_SHOW_CHARS + 4)
    try:
        done = proc.run(argv, proc.Bounds(limit), stdout=keep, stderr=keep)
    except FileNotFoundError as exc:
        raise FaultError("scontrol: not found on PATH", hint="--slurm-drain runs on a Slurm node") from exc
    if done.returncode is None:
        raise FaultError(f"{proc.shown(argv[:3])}: no answer within {limit:g}s")
    return done.returncode, done.stdout.text(), done.stderr.text()


def this_node() -> str:
    """SLURMD_NODENAME when slurmd runs us (HealthCheckProgram, a job), else the short host name."""
    import os

    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def apply_slurm_drain(report_failed_ids: list[str], failed: bool, node: str | None,
                      runner: ScontrolRunner = scontrol) -> DrainOutcome:
    name = node or this_node()
    if not NODE_NAME.fullmatch(name):
        raise InputError(f"slurm node name {name!r}: not a valid node name")
    code, out, err = runner(["scontrol", "show", "node", name], 15.0)
    if code != 0:
        raise FaultError(f"scontrol show node {name}: {(err.strip() or out.strip())[:300]}")
    action, why = decide(parse_show_node(out, name), failed, report_failed_ids)
    if action == "drain":
        argv = ["scontrol", "update", f"NodeName={name}", "State=DRAIN", f"Reason={why}"]
    elif action == "resume":
        argv = ["scontrol", "update", f"NodeName={name}", "State=RESUME"]
    else:
        return DrainOutcome(name, "none", why)
    code, out, err = runner(argv, 15.0)
    if code != 0:
        raise FaultError(f"scontrol update NodeName={name} ({action}): "
                         f"{(err.strip() or out.strip())[:300]}")
    return DrainOutcome(name, action, why)
