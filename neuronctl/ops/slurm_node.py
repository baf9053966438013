"""`doctor --slurm-drain`: drain this node on failure, resume it when neuronctl drained it and it
passes again, and never touch a node drained for any other reason (LBNL NHC's rule).

The decision is pure (`decide`); `apply_slurm_drain` reads the node with `scontrol show node`,
decides, and runs `scontrol update` through the runner it is given.
"""

from __future__ import annotations

import re
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from neuronctl.errors import FaultError, InputError

REASON_PREFIX = "neuronctl:"
MAX_REASON_CHARS = 200
NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
CHECK_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")

# (argv, seconds) -> (exit code, stdout, stderr)
ScontrolRunner = Callable[[list[str], float], tuple[int, str, str]]


@dataclass(frozen=True)
class NodeState:
    """A Slurm node's state and reason, as scontrol shows them."""

    state: str  # scontrol's State=, e.g. IDLE, IDLE+DRAIN, MIXED+DRAIN
    reason: str  # Reason= without scontrol's " [user@time]" suffix; "" when none

    @property
    def drained(self) -> bool:
        return "DRAIN" in self.state.upper()


@dataclass(frozen=True)
class DrainOutcome:
    """What the doctor did to its Slurm node (drain, resume or nothing) and why."""

    node: str
    action: str  # "drain", "resume", "none"
    why: str


def drain_reason(failed_ids: list[str]) -> str:
    ids = [i for i in failed_ids if CHECK_ID.match(i)] or ["doctor failed"]
    return f"{REASON_PREFIX} {','.join(ids)}"[:MAX_REASON_CHARS]


def decide(state: NodeState, failed: bool, failed_ids: list[str]) -> tuple[str, str]:
    ours = state.reason.startswith(REASON_PREFIX)
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


def parse_show_node(text: str) -> NodeState:
    state = re.search(r"\bState=(\S+)", text)
    # Reason= runs to the end of its line, with " [user@time]" appended by slurmctld.
    reason = re.search(r"\bReason=(.*?)(?: \[[^\]]*\])?\s*$", text, flags=re.M)
    if state is None:
        raise FaultError("scontrol show node: no State= in its output")
    value = reason.group(1).strip() if reason else ""
    return NodeState(state.group(1), "" if value == "(null)" else value)


def scontrol(argv: list[str], limit: float) -> tuple[int, str, str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                              timeout=limit, check=False, stdin=subprocess.DEVNULL)
    except FileNotFoundError as exc:
        raise FaultError("scontrol: not found on PATH", hint="--slurm-drain runs on a Slurm node") from exc
    except subprocess.TimeoutExpired as exc:
        raise FaultError(f"{' '.join(argv[:3])}: no answer within {limit:g}s") from exc
    return done.returncode, done.stdout, done.stderr


def this_node() -> str:
    """SLURMD_NODENAME when slurmd runs us (HealthCheckProgram, a job), else the short host name."""
    import os

    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def apply_slurm_drain(report_failed_ids: list[str], failed: bool, node: str | None,
                      runner: ScontrolRunner = scontrol) -> DrainOutcome:
    name = node or this_node()
    if not NODE_NAME.match(name):
        raise InputError(f"slurm node name {name!r}: not a valid node name")
    code, out, err = runner(["scontrol", "show", "node", name], 15.0)
    if code != 0:
        raise FaultError(f"scontrol show node {name}: {(err.strip() or out.strip())[:300]}")
    action, why = decide(parse_show_node(out), failed, report_failed_ids)
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
