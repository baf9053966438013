"""Run `neuronctl doctor --json` on every node in ONE `srun` step and read back each node's document.

Each task prints a begin marker naming its node (`$SLURMD_NODENAME`), the doctor's document, then
an end marker with the doctor's exit code; `srun --label` prefixes every line with the task id,
so interleaved lines from many nodes are told apart by task id, and the marker names the node.
The step's output is read as it streams (stream.py), each node's kept up to MAX_DOC_BYTES.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from msgspec import Struct, field

from neuronctl.errors import FaultError, InputError
from neuronctl.ops.fleet.aggregate import NodeResult
from neuronctl.ops.fleet.select import Selection, node_features, pick
from neuronctl.ops.fleet.stream import (
    MARK,
    MAX_DOC_BYTES,
    NODE_NAME,
    Streamed,
    parse_step,
    stream_step,
)
from neuronctl.probes.tools import run_capped

__all__ = ["MARK", "Completed", "FleetRequest", "fleet_doctor", "parse_step", "srun_argv"]
MAX_OUTPUT_BYTES = 16 * 1024 * 1024  # sinfo's output (one short line a node, 100,000+ nodes)
LAUNCH_FAILED = re.compile(r"^srun: error: .* on node ([A-Za-z0-9._-]+)", flags=re.M)
# How each node runs neuronctl by default: this Python, with the node's working directory (the
# directory srun was started from) dropped from sys.path before anything is imported, so a
# ./neuronctl/ or ./runpy.py there is never run. `-I` would also drop PYTHONPATH and the user's
# site-packages (where neuronctl may be installed); `-P` needs Python 3.11. The working directory
# itself stays: the project's pyproject.toml [tool.neuronctl] is still read.
NEUTRAL_MAIN = ("import sys; sys.path[:1] == [''] and sys.path.pop(0); import runpy; "
                "runpy.run_module('neuronctl', run_name='__main__', alter_sys=True)")
# Slurm node states in which a node cannot run the step (a `*` suffix: not responding).
UNAVAILABLE = ("down", "drain", "drng", "fail", "maint", "unk", "futr", "npc", "pow", "boot",
               "resv")
# The doctor's own levels: 1 = static facts, no torch import, no device work; 2 = the device
# probe tiers too. (Level 3, a model run of minutes per node, is not a fleet sweep.)
LEVEL_ARGS: dict[int, tuple[str, ...]] = {1: ("--level", "1"), 2: ("--level", "2")}

Runner = Callable[[list[str], float], "Completed"]
StepRunner = Callable[[list[str], float], Streamed]


class Completed(Struct, frozen=True):
    """How the srun that ran the fleet doctor ended, its output decoded."""

    returncode: int | None  # None: killed at the time limit
    stdout: str
    stderr: str


class FleetRequest(Struct, frozen=True):
    """What `neuronctl fleet doctor` was asked: the nodes, the doctor level, the time limit."""

    nodes: int | None = None
    nodelist: str | None = None
    all_nodes: bool = False
    partition: str | None = None
    level: int = 2
    python: str | None = None
    timeout: float = 120.0
    remote_command: Sequence[str] = ()
    selection: Selection = field(default_factory=Selection)


def default_remote(python: str) -> list[str]:
    """`python` running neuronctl without importing anything from the node's working directory."""
    return [python, "-c", NEUTRAL_MAIN]


def remote_doctor(request: FleetRequest, default_command: Sequence[str]) -> list[str]:
    base = list(request.remote_command) or list(default_command)
    argv = [*base, "doctor", "--json", *LEVEL_ARGS[request.level]]
    if request.python:
        argv += ["--python", request.python]
    return argv


def wrapped(argv: list[str]) -> list[str]:
    """The per-task shell: markers around the doctor's document, its exit code in the end one."""
    script = (f'echo "{MARK} begin $SLURMD_NODENAME"; "$@"; rc=$?; echo; '
              f'echo "{MARK} end $SLURMD_NODENAME $rc"')
    return ["/bin/sh", "-c", script, "neuronctl-fleet", *argv]


def srun_argv(request: FleetRequest, nodes: list[str] | None, remote: list[str]) -> list[str]:
    minutes = max(1, math.ceil(request.timeout / 60))
    argv = ["srun", "--label", "--ntasks-per-node=1", f"--time={minutes}",
            f"--immediate={max(1, math.ceil(request.timeout))}", "--kill-on-bad-exit=0",
            "--job-name=neuronctl-fleet"]
    if request.partition:
        argv.append(f"--partition={request.partition}")
    argv += request.selection.srun_args()
    if nodes is not None:
        argv += [f"--nodes={len(nodes)}", f"--nodelist={','.join(nodes)}"]
    elif request.nodes is not None:
        argv.append(f"--nodes={request.nodes}")
    return [*argv, *wrapped(remote)]


def run_bounded(argv: list[str], limit: float) -> Completed:
    """Run with a deadline (sinfo); at it, SIGTERM, then SIGKILL. Output is read in chunks up
    to MAX_OUTPUT_BYTES per stream; past that the command is killed."""
    try:
        done = run_capped(argv, limit, MAX_OUTPUT_BYTES, term_grace=5.0)
    except FileNotFoundError as exc:
        raise FaultError(f"{argv[0]}: not found on PATH",
                         hint="run on a Slurm login node (srun, sinfo and scontrol on PATH)") from exc
    if done.over_cap:
        raise FaultError(f"{argv[0]} wrote over {MAX_OUTPUT_BYTES} bytes; not read")
    return Completed(None if done.timed_out else done.returncode,
                     done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace"))


def run_step(argv: list[str], limit: float) -> Streamed:
    """The srun step, read as it streams: a node over MAX_DOC_BYTES is that node's error."""
    try:
        return stream_step(argv, limit)
    except FileNotFoundError as exc:
        raise FaultError(f"{argv[0]}: not found on PATH",
                         hint="run on a Slurm login node (srun, sinfo and scontrol on PATH)") from exc


def _step_through(runner: Runner) -> StepRunner:
    """A runner that returns the step's whole output (tests): read the same way."""
    def step(argv: list[str], limit: float) -> Streamed:
        done = runner(argv, limit)
        return Streamed(done.returncode, parse_step(done.stdout), done.stderr)

    return step


def check_request(request: FleetRequest) -> None:
    chosen = sum(x for x in (request.nodes is not None, bool(request.nodelist), request.all_nodes))
    if chosen > 1:
        raise InputError("choose one of --nodes, --nodelist and --all")
    if request.nodes is not None and not 1 <= request.nodes <= 100_000:
        raise InputError(f"--nodes must be 1-100000, got {request.nodes}")
    if request.level not in LEVEL_ARGS:
        raise InputError(f"--level must be 1 or 2, got {request.level}")
    if not 1 <= request.timeout <= 86_400:
        raise InputError(f"--timeout must be 1-86400 seconds, got {request.timeout}")
    for text, flag in ((request.nodelist, "--nodelist"), (request.partition, "--partition")):
        if text is not None and not re.fullmatch(r"[A-Za-z0-9._,\[\]-]{1,4096}", text):
            raise InputError(f"{flag} {text!r}: not a Slurm name or host list")
    request.selection.check()


def node_states(request: FleetRequest, runner: Runner) -> dict[str, str]:
    """node -> short state (sinfo %t), for --all / --nodelist, after --exclude, --constraint and
    --reservation (select.pick)."""
    argv = ["sinfo", "--noheader", "--Node", "--format=%N %t %f"]
    if request.partition:
        argv.append(f"--partition={request.partition}")
    if request.nodelist:
        argv.append(f"--nodes={request.nodelist}")
    states: dict[str, str] = {}
    features: dict[str, set[str]] = {}
    for line in _query(runner, argv).splitlines()[:200_000]:
        parts = line.split()
        if len(parts) in (2, 3) and NODE_NAME.fullmatch(parts[0]):
            states[parts[0]] = parts[1]
            features[parts[0]] = node_features(parts[2]) if len(parts) == 3 else set()
    if request.selection.filters:
        states = pick(states, features, request.selection, lambda q: _answer(runner(q, 30.0)))
    if not states:
        asked = " ".join(request.selection.srun_args())
        raise InputError("no Slurm nodes match " + (f"--nodelist {request.nodelist}"
                                                    if request.nodelist else "the request")
                         + (f" with {asked}" if asked else ""))
    return states


def _answer(done: Completed) -> tuple[int, str]:
    if done.returncode is None:
        raise FaultError("scontrol did not answer within 30 s",
                         hint="run where Slurm's commands reach slurmctld (SLURM_CONF, munge)")
    return done.returncode, done.stdout


def _query(runner: Runner, argv: list[str]) -> str:
    done = runner(argv, 30.0)
    if done.returncode != 0:
        raise FaultError(f"{argv[0]} failed: {_last_line(done.stderr) or 'no output'}",
                         hint="run where Slurm's commands reach slurmctld (SLURM_CONF, munge)")
    return done.stdout


def unavailable(state: str) -> bool:
    return state.endswith("*") or state.rstrip("*~#!%$@^-").startswith(UNAVAILABLE)


def _state_reason(state: str) -> str:
    why = " (not responding to slurmctld)" if state.endswith("*") else ""
    return f"not available to Slurm: state {state}{why}"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def read_document(node: str, text: str, code: int | None) -> NodeResult:
    if len(text.encode()) > MAX_DOC_BYTES:
        return NodeResult(node, error=f"output over {MAX_DOC_BYTES} bytes")
    if code is None:
        return NodeResult(node, error="doctor did not finish (killed at the time limit)")
    try:
        doc: Any = json.loads(text)
    except ValueError:
        return NodeResult(node, exit_code=code,
                          error=f"doctor exit {code}, no JSON document: {_last_line(text) or 'empty'}")
    if not isinstance(doc, dict) or doc.get("schema") != 1 or not isinstance(doc.get("checks"), list):
        error = doc.get("error") if isinstance(doc, dict) else None
        why = error.get("message") if isinstance(error, dict) else "not a doctor document"
        return NodeResult(node, exit_code=code, error=f"doctor exit {code}: {str(why)[:300]}")
    return NodeResult(node, document=doc, exit_code=code)


def _missing_reason(node: str, done: Streamed, request: FleetRequest) -> str:
    if done.returncode is None:
        return f"no answer within --timeout {request.timeout:g}s"
    mentions = [line.strip() for line in done.stderr.splitlines() if node in line and "error" in line]
    if mentions:
        return mentions[-1][:300]
    return f"no answer (srun exit {done.returncode}: {_last_line(done.stderr) or 'no message'})"


def fleet_doctor(request: FleetRequest, default_command: Sequence[str],
                 runner: Runner = run_bounded, step: StepRunner | None = None) -> list[NodeResult]:
    """Every chosen node's NodeResult: a document, or the reason there is none. `runner` runs
    sinfo; `step` the srun step (by default streamed, or through `runner` when one is given)."""
    if step is None:
        step = run_step if runner is run_bounded else _step_through(runner)
    check_request(request)
    results: dict[str, NodeResult] = {}
    targets: list[str] | None = None
    if request.nodes is None:
        states = node_states(request, runner)
        targets = sorted(n for n, s in states.items() if not unavailable(s))
        for node in sorted(set(states) - set(targets)):
            results[node] = NodeResult(node, error=_state_reason(states[node]))
    if targets == []:
        return list(results.values())
    argv = srun_argv(request, targets, remote_doctor(request, default_command))
    done = step(argv, request.timeout + 10)
    for node, (text, code, error) in done.parsed.items():
        results[node] = (NodeResult(node, error=error) if error is not None
                         else read_document(node, text, code))
    # With --nodes, Slurm picked the nodes: the ones that failed to launch are named in srun's errors.
    named = {m for m in LAUNCH_FAILED.findall(done.stderr) if NODE_NAME.fullmatch(m)}
    for node in sorted(set(targets or []) | named):
        if node not in results:
            results[node] = NodeResult(node, error=_missing_reason(node, done, request))
    if not results:
        raise FaultError(f"srun ran no task: {_last_line(done.stderr) or 'no message'}",
                         hint="check the partition and node count (sinfo)")
    return sorted(results.values(), key=lambda r: r.node)
