"""Fuzzing (Hypothesis) the host-side parsers of untrusted text, second pass: neuron-ls's JSON
(both forms) through the hardware decision, and the kernel log through the bundle's item.

Whatever the input: no exception but the documented ones (the parser answers None; the kernel
log item raises only Unavailable), and the output is bounded: a device list no longer than
MAX_DEVICES, counts within MAX_COUNT, a runtime version that is one short printable token, a
kernel-log text made only of the input's own neuron lines.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from neuronctl.ops.bundle_items import MAX_LOG_TAIL, Context, Unavailable, gather_kernel_log
from neuronctl.probes.hardware import HardwareEvidence, decide
from neuronctl.probes.hardware_signals import MAX_COUNT, parse_neuron_ls
from neuronctl.probes.neuron_ls import MAX_DEVICES, parse_neuron_ls_json
from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.tools import ToolResult

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_fuzz_host.py)

FUZZ = settings(max_examples=300, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])
COUNTS: Counter[str] = Counter()

KEYS = st.sampled_from(["neuron_device", "nc_count", "logical_neuroncore_config", "bdf",
                        "neuron_processes", "neuron_runtime_version", "devices", "pid",
                        "memory_size", "x"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(10 ** 30), max_value=10 ** 30),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=80),
                    st.sampled_from(["2.35.30.0", "\x1b]52;c;AAAA\x07", "2" * 200, "8", "-1"]))
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=6), st.dictionaries(st.one_of(KEYS, st.text(max_size=10)), inner,
                                                 max_size=6)), max_leaves=40)
NEURON_LS_TEXT = st.one_of(
    JSON_VALUES.map(json.dumps),
    st.text(max_size=400),
    st.builds(lambda d, n: "[" * d + "1" * n + "]" * d, st.integers(0, 5000), st.integers(0, 6000)),
    st.binary(max_size=400).map(lambda b: b.decode("utf-8", "replace")),
)


def _check_report(stdout: str) -> None:
    devices = parse_neuron_ls_json(stdout)  # never raises: None for anything unreadable
    assert devices is None or (isinstance(devices, list) and len(devices) <= MAX_DEVICES
                               and all(isinstance(d, dict) for d in devices))
    assert parse_neuron_ls(stdout) == devices
    report = decide(HardwareEvidence(neuron_ls=ToolResult(0, stdout, "")))
    assert report.neuron_cores is None or 0 <= report.neuron_cores <= MAX_COUNT * MAX_DEVICES
    assert report.logical_nc_config is None or 0 <= report.logical_nc_config <= MAX_COUNT
    version = report.runtime_version
    assert version is None or (len(version) <= 64 and version.isprintable() and " " not in version)
    assert report.device_count <= MAX_DEVICES
    json.dumps(report.to_json())  # what doctor and detect print is JSON
    COUNTS["neuron-ls parsed" if devices is not None else "neuron-ls refused"] += 1


@FUZZ
@given(NEURON_LS_TEXT)
@example("1" * 5000)  # past the int digit limit: ValueError, not JSONDecodeError
@example('{"devices": [{"neuron_device": 0, "nc_count": ' + "9" * 5000 + "}]}")
@example("[" * 100_000)  # nested past the recursion limit
@example(json.dumps([{"neuron_device": i, "nc_count": 8} for i in range(MAX_DEVICES + 1)]))
@example(json.dumps([{"nc_count": True}, {"nc_count": 10 ** 18}]))
@example(json.dumps({"logical_neuroncore_config": "9" * 4000, "devices": [{"neuron_device": 0}]}))
@example(json.dumps([{"neuron_device": 0, "neuron_processes": [
    {"neuron_runtime_version": "\x1b[2J" + "A" * 10_000}]}]))
@example('[{"neuron_processes": true}]')  # not a list: once a TypeError in hardware._runtime
def test_neuron_ls_json_never_raises_and_stays_bounded(stdout: str) -> None:
    _check_report(stdout)


def _kernel_ctx(tmp_path: Path) -> Context:
    root = tmp_path / "captured"
    (root / "var" / "log").mkdir(parents=True, exist_ok=True)
    return Context(SysRoot(root), sys.executable, (), {}, tmp_path / "none.toml", tmp_path)


LOG_LINES = st.lists(st.one_of(
    st.text(max_size=120),
    st.builds(lambda a, b: f"{a}neuron{b}", st.text(max_size=40), st.text(max_size=40)),
    st.sampled_from(["kernel: NEURON: nd0: DMA abort\r", "pci 0000:cc:00.0: [1d0f:7364]",
                     "\x00\x1b]52;c;AAAA\x07 neuron", "neuron\u2028injected", "\udcff"]),
), max_size=40)


@FUZZ
@given(LOG_LINES, st.binary(max_size=200), st.sampled_from(["kern.log", "messages", "syslog"]))
def test_kernel_log_item_keeps_only_neuron_lines_of_its_input(
        tmp_path: Path, lines: list[str], noise: bytes, name: str) -> None:
    ctx = _kernel_ctx(tmp_path)
    for old in (ctx.root.root / "var" / "log").iterdir():
        old.unlink()
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + noise
    (ctx.root.root / "var" / "log" / name).write_bytes(data)
    try:
        got = gather_kernel_log(ctx, 5.0)
    except Unavailable:
        COUNTS["kernel log unavailable"] += 1
        return
    text = data.decode("utf-8", "replace")
    allowed = set(text.splitlines())
    kept = [line for line in got.text.splitlines() if line]  # "\n" alone: no neuron line
    assert all(line in allowed for line in kept)
    assert all("neuron" in line.lower() or "1d0f" in line.lower() for line in kept)
    assert len(got.text) <= len(text) + 1 and len(got.text.encode()) <= 3 * MAX_LOG_TAIL
    COUNTS["kernel log lines kept"] += len(kept)


def test_a_kernel_log_of_one_huge_line_is_read_from_its_tail_only(tmp_path: Path) -> None:
    ctx = _kernel_ctx(tmp_path)
    log = ctx.root.root / "var" / "log" / "kern.log"
    with log.open("wb") as fh:
        fh.write(b"neuron " + b"x" * 100)
        fh.truncate(MAX_LOG_TAIL * 4)  # 64 MiB of NULs after it, as a corrupt log can hold
        fh.seek(0, 2)
        fh.write(b"\nkernel: neuron: last line\n")
    got = gather_kernel_log(ctx, 5.0)
    assert got.text.endswith("kernel: neuron: last line\n") and len(got.text) <= MAX_LOG_TAIL + 1
