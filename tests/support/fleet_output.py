"""An srun step's output as the fleet reads it: each node's doctor report between marker lines."""

from __future__ import annotations

from neuronctl.ops.fleet.srun import MARK


def labelled(task: int, node: str, body: str, code: int | str | None) -> list[str]:
    """srun --label lines of one node's report (no end line where `code` is None: cut short)."""
    lines = [f"{task}: {MARK} begin {node}", *(f"{task}: {line}" for line in body.splitlines())]
    return lines + ([f"{task}: ", f"{task}: {MARK} end {node} {code}"] if code is not None else [])
