"""The doctor's levels (like `dcgmi diag -r 1|2|3`): what each runs and the time it must fit in.

1 reads static facts only (the interpreter's metadata, sysfs, /proc, dpkg, neuron-ls) and never
imports torch in the target: meant for Slurm's HealthCheckProgram (killed at 60 s) and
node-problem-detector. 2 adds the device probe tiers (the default). 3 adds the torch.compile tier
and the user's own model. Each budget is a hard limit: a check past it is a fail that says
"timed out", and the whole run's budget cuts every check still running.
"""

from __future__ import annotations

from collections.abc import Mapping

from msgspec import Struct

from neuronctl.errors import InputError

LONG_CHECKS = ("device.probe", "model.smoke")
"""The checks that run code on the device: they get the level's long budget."""

MULTI_NODE_CHECKS = ("network.efa",)
"""The checks that run at every level when the doctor is one task of a Slurm step over more than
one node (fleet doctor's sweep): a multi-node job needs EFA on each node and the same libfabric
and aws-neuronx-collectives on every one, which fleet doctor compares (issue 27)."""


def multi_node_step(environ: Mapping[str, str]) -> bool:
    """Whether this run is one task of a Slurm step over more than one node: srun sets
    SLURM_STEP_NUM_NODES in every task's environment (Slurm's HealthCheckProgram runs outside
    any step, so it keeps level 1 as it is)."""
    try:
        return int(environ.get("SLURM_STEP_NUM_NODES", "1")) > 1
    except ValueError:
        return False


class Level(Struct, frozen=True):
    """One doctor level: what it runs and the time budgets it must fit in."""

    number: int
    what: str
    check_s: float
    """Each check's budget."""
    long_s: float | None
    """The device probe's (and the model run's) budget; None where the level runs neither."""
    total_s: float
    """The whole run's budget."""

    def budget_text(self) -> str:
        long = f", the device probe {self.long_s:g} s" if self.long_s else ""
        if self.number >= 3 and self.long_s:
            long += f", then your model {self.long_s:g} s"
        return f"{self.check_s:g} s a check{long}, {self.total_s:g} s in all"


LEVELS: dict[int, Level] = {
    1: Level(1, "static facts only, no torch import, no device work (~2 s on a healthy host; "
                "for Slurm's HealthCheckProgram and node-problem-detector)", 10.0, None, 20.0),
    2: Level(2, "1 plus the device probe tiers", 60.0, 90.0, 120.0),
    3: Level(3, "2 plus the torch.compile tier and your model (config `model`)", 60.0, 600.0,
             1500.0),
}
DEFAULT_LEVEL = 2


class Budget(Struct, frozen=True):
    """The time limits of one doctor run."""

    check_s: float
    long_s: float
    total_s: float

    def limit(self, check_id: str) -> float:
        """A check's limit, counted from the start of the run: the model runs after the device
        probe (one process at a time owns the NeuronCores), so its limit holds both."""
        if check_id == "model.smoke":
            return 2 * self.long_s
        return self.long_s if check_id in LONG_CHECKS else self.check_s

    @staticmethod
    def inner(limit: float) -> float:
        """The timeout for the work inside a check (an inspection, a probe), a little under the
        check's own limit, so that its more precise message is the one reported."""
        return limit - min(5.0, limit / 5)


RUN_MARGIN_S = 5.0


def budget_for(level: int, timeout: float | None) -> Budget:
    """The level's budget; `timeout` (--timeout or config `timeout`) replaces every check's, and
    the whole run's becomes what that needs: one check's time, or at level 3 two (the model runs
    after the device probe), and a margin."""
    lv = LEVELS[level]
    if timeout is None:
        return Budget(lv.check_s, lv.long_s or lv.check_s, lv.total_s)
    return Budget(timeout, timeout, (2 if level >= 3 else 1) * timeout + RUN_MARGIN_S)


def choose_level(level: int | None, no_device_probe: bool, compile_tier: bool) -> int:
    """--level, or what the older flags mean: --no-device-probe is level 1, --compile level 3."""
    if level is not None and level not in LEVELS:
        raise InputError(f"--level must be 1, 2 or 3, got {level}")
    if no_device_probe and compile_tier:
        raise InputError("--no-device-probe and --compile: the compile tier is part of the "
                         "device probe; give one of them")
    if no_device_probe:
        if level not in (None, 1):
            raise InputError(f"--no-device-probe is level 1; it conflicts with --level {level}")
        return 1
    if compile_tier:
        if level not in (None, 3):
            raise InputError(f"--compile is level 3; it conflicts with --level {level}")
        return 3
    return DEFAULT_LEVEL if level is None else level
