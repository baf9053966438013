"""`setup --yes`: the plan's steps run one by one, each through the same shell text the script
holds. A step whose check holds is skipped; the first step that fails stops the run, and the
outcome says what was done, what was not, and how to resume (run it again: done steps are
skipped). Root is required and said up front; a blocked step (processes holding /dev/neuron*)
refuses the whole run before anything changes."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from msgspec import Struct

from neuronctl import proc
from neuronctl.errors import InputError
from neuronctl.ops.reporter import Reporter, StepDone, StepStarted
from neuronctl.ops.setup.model import SetupPlan, Step
from neuronctl.ops.setup.script import check_script, run_script

STEP_TIMEOUT_S = 3600.0
CHECK_TIMEOUT_S = 60.0
OUTPUT_TAIL = 4000


class ShellResult(Struct, frozen=True):
    """How one shell run ended: exit code (None: timed out) and the tail of its output."""

    returncode: int | None
    output: str


Shell = Callable[[str, Mapping[str, str], float], ShellResult]


def run_shell(script: str, env: Mapping[str, str], timeout: float) -> ShellResult:
    # 4 bytes a character at most: the tail of each stream holds OUTPUT_TAIL characters.
    keep = proc.Keep(tail=4 * OUTPUT_TAIL)
    # from / as the script does (script.preamble): nothing of the caller's directory is read
    done = proc.run(["sh", "-c", script], proc.Bounds(timeout), env=env, cwd="/", stdout=keep,
                    stderr=keep)
    if done.timed_out:
        return ShellResult(None, f"timed out after {timeout:g}s")
    out = done.stdout.text() + done.stderr.text()
    return ShellResult(done.returncode, out[-OUTPUT_TAIL:])


class ApplyOutcome(Struct, frozen=True):
    """What `--yes` did: the steps done now, skipped as done already, failed, and not run."""

    done: tuple[str, ...]
    skipped: tuple[str, ...]
    failed: str | None
    not_done: tuple[str, ...]
    output: str
    """The failed step's output (its tail), for the user to read."""
    resume: str | None

    @property
    def ok(self) -> bool:
        return self.failed is None

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "done": list(self.done), "skipped": list(self.skipped),
                "failed": self.failed, "not_done": list(self.not_done), "output": self.output,
                "resume": self.resume}


def preflight(plan: SetupPlan, *, is_root: bool) -> None:
    """What refuses the run before any step (exit 2)."""
    if not is_root:
        raise InputError("setup --yes changes the system (packages, the driver): run it as root",
                         hint="sudo neuronctl setup --yes ..., or review it first with "
                              "--format sh")
    blocked = [s for s in plan.steps if s.blocked]
    if blocked:
        raise InputError(f"{blocked[0].id}: {blocked[0].blocked}; the driver cannot be "
                         "reloaded while they hold the devices",
                         hint="stop those processes, then run setup --yes again")


def apply_plan(plan: SetupPlan, reporter: Reporter, *, is_root: bool,
               environ: Mapping[str, str] | None = None, shell: Shell = run_shell,
               resume_command: str = "neuronctl setup --yes") -> ApplyOutcome:
    preflight(plan, is_root=is_root)
    env = {**(os.environ if environ is None else environ), "LC_ALL": "C"}
    done: list[str] = []
    skipped: list[str] = []
    total = len(plan.steps)
    for i, step in enumerate(plan.steps, 1):
        tag = f"[{i}/{total}] {step.id}"
        if step.check and shell(check_script(plan, step), env, CHECK_TIMEOUT_S).returncode == 0:
            skipped.append(step.id)
            reporter.emit(StepDone(f"{tag}: done already, skipped", step.id))
            continue
        reporter.emit(StepStarted(f"{tag}: {step.title}", step.id))
        result = shell(run_script(plan, step), env, STEP_TIMEOUT_S)
        if result.returncode != 0:
            return _failed(plan, step, result, done, skipped, resume_command)
        done.append(step.id)
        reporter.emit(StepDone(f"{tag}: done", step.id))
    return ApplyOutcome(tuple(done), tuple(skipped), None, (), "", None)


def _failed(plan: SetupPlan, step: Step, result: ShellResult, done: list[str],
            skipped: list[str], resume_command: str) -> ApplyOutcome:
    ids = [s.id for s in plan.steps]
    rest = tuple(ids[ids.index(step.id) + 1:])
    how = "timed out" if result.returncode is None else f"exited {result.returncode}"
    return ApplyOutcome(tuple(done), tuple(skipped), step.id, rest, result.output,
                        f"{step.id} {how}; fix what its output says, then run `{resume_command}` "
                        "again: the steps done are skipped, it continues from this one")
