"""neuron-ls read in both JSON forms: `--output-format json` (Neuron 2.34+, an object with
instance-wide fields beside the device list) tried first, `--json-output` (a bare list, retired in
2.34) where the tool does not know the new flag."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from support.sysroots import build_host

from neuronctl.probes.hardware import detect_hardware
from neuronctl.probes.hardware_signals import parse_neuron_ls
from neuronctl.probes.imds import ImdsResult
from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.tools import ToolResult

# These captured trees carry a fake neuron-ls that the tests mean to run.
pytestmark = pytest.mark.usefixtures("sysroot_tools")


DEVICES = [{"neuron_device": i, "bdf": f"{0xcc + i:02x}:00.0", "nc_count": 4,
            "memory_size": 103079215104, "neuroncore_ids": list(range(4 * i, 4 * i + 4)),
            "neuron_processes": []} for i in range(2)]
OLD_FORM = json.dumps([{**d, "logical_neuroncore_config": 2} for d in DEVICES])
# The 2.34 form: what applies to the whole instance once, at the top, beside the device list.
NEW_FORM = json.dumps({"instance_type": "trn2.48xlarge", "logical_neuroncore_config": 2,
                       "neuron_devices": DEVICES})


def no_imds(_env: object) -> ImdsResult:
    return ImdsResult(None, "test: no IMDS")


def host_with_tool(tmp_path: Path, accepts: str, output: str) -> tuple[Path, Path]:
    """A trn2 host whose neuron-ls answers only `accepts` (as an old or a new tool would) and
    logs every command line it is given."""
    root = build_host(tmp_path / "host", "trn2", neuron_ls=False)
    log = tmp_path / "neuron-ls.log"
    tool = root / "opt/aws/neuron/bin/neuron-ls"
    tool.parent.mkdir(parents=True, exist_ok=True)
    tool.write_text(f"#!/bin/sh\necho \"$*\" >> '{log}'\n"
                    f"if [ \"$*\" != '{accepts}' ]; then echo \"neuron-ls: unknown flag $1\" >&2; "
                    f"exit 2; fi\ncat <<'JSON'\n{output}\nJSON\n")
    tool.chmod(0o755)
    return root, log


@pytest.mark.parametrize(("accepts", "output", "runs"), [
    ("--output-format json", NEW_FORM, ["--output-format json"]),
    ("--json-output", OLD_FORM, ["--output-format json", "--json-output"]),
], ids=["neuron-2.34-tool", "older-tool"])
def test_both_forms_give_the_same_picture(tmp_path: Path, accepts: str, output: str,
                                          runs: list[str]) -> None:
    root, log = host_with_tool(tmp_path, accepts, output)
    report = detect_hardware(SysRoot(root), env={}, imds=no_imds)
    assert report.neuron_ls == "ok"
    assert (report.neuron_cores, report.neuron_cores_source) == (8, "neuron-ls nc_count")
    assert report.logical_nc_config == 2
    assert log.read_text().splitlines() == runs  # the new form first; the old only if needed


def test_a_tool_that_fails_both_forms_reports_why(tmp_path: Path) -> None:
    root, _log = host_with_tool(tmp_path, "--neither", "[]")
    report = detect_hardware(SysRoot(root), env={}, imds=no_imds)
    assert report.neuron_ls == "exit 2: neuron-ls: unknown flag --json-output"
    assert report.neuron_cores_source == "sysfs core_count"  # the other sources still count


def test_a_hung_tool_is_not_run_twice(tmp_path: Path) -> None:
    root, _log = host_with_tool(tmp_path, "--json-output", OLD_FORM)
    calls: list[Sequence[str]] = []

    def hung(argv: Sequence[str], timeout: float) -> ToolResult:
        calls.append(argv)
        return ToolResult(None, "", "", f"timed out after {timeout:g}s")

    report = detect_hardware(SysRoot(root), env={}, runner=hung, imds=no_imds)
    assert report.neuron_ls == "timed out after 5s" and len(calls) == 1


@pytest.mark.parametrize("text", [OLD_FORM, NEW_FORM])
def test_parse_reads_the_device_list_of_either_form(text: str) -> None:
    devices = parse_neuron_ls(text)
    assert devices is not None and [d["neuron_device"] for d in devices] == [0, 1]


@pytest.mark.parametrize("text", ["not json", "{}", '{"a": 1}', "[1, 2]", '"text"'])
def test_parse_refuses_what_is_not_a_device_list(text: str) -> None:
    assert parse_neuron_ls(text) is None
