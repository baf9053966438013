"""A fleet node's output is untrusted: it cannot crash the report nor speak for another node."""

from __future__ import annotations

import json
import sys
import time

import pytest
from support.fleet_output import labelled

from neuronctl.errors import FaultError
from neuronctl.ops.fleet import srun
from neuronctl.ops.fleet.srun import Completed, FleetRequest, fleet_doctor, parse_step

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile_fleet.py)

DOC = json.dumps({"schema": 1, "summary": {"verdict": "pass"}, "checks": []})


def _fleet(out: list[str]) -> dict[str, srun.NodeResult]:
    def runner(cmd: list[str], limit: float) -> Completed:
        if cmd[0] == "sinfo":
            return Completed(0, "a idle\nb idle\n", "")
        return Completed(0, "\n".join(out) + "\n", "")

    return {r.node: r for r in fleet_doctor(FleetRequest(all_nodes=True, timeout=5), ["nc"], runner)}


@pytest.mark.parametrize("code", ["²", "٣", "1234", "0x1"])
def test_a_non_ascii_or_long_exit_code_is_no_exit_code(code: str) -> None:
    results = _fleet(labelled(0, "a", DOC, code) + labelled(1, "b", DOC, "0"))
    assert results["a"].error is not None and results["a"].exit_code is None
    assert results["b"].error is None and results["b"].exit_code == 0


def test_a_task_printing_another_nodes_markers_makes_both_errors() -> None:
    forged = labelled(1, "a", DOC, "0")  # task 1 speaks for node a after task 0 did
    parsed = parse_step("\n".join(labelled(0, "a", DOC, "0") + forged) + "\n")
    assert parsed["a"][2] == "conflicting output for node a (srun tasks 0, 1)"
    results = _fleet(labelled(0, "a", DOC, "0") + labelled(1, "b", DOC, "0")
                     + labelled(1, "a", DOC, "0"))
    for node in ("a", "b"):
        assert results[node].error is not None
        assert f"conflicting output for node {node}" in results[node].error
        assert results[node].document is None


def test_a_task_claiming_a_second_node_makes_both_errors() -> None:
    out = labelled(0, "a", DOC, "0") + labelled(0, "b", DOC, "0")
    results = _fleet(out)
    assert all("conflicting output" in (results[n].error or "") for n in ("a", "b"))


def test_srun_output_is_read_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(srun, "MAX_OUTPUT_BYTES", 1 << 20)
    start = time.monotonic()
    with pytest.raises(FaultError, match="wrote over 1048576 bytes"):
        srun.run_bounded([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"],
                         30)
    assert time.monotonic() - start < 15
