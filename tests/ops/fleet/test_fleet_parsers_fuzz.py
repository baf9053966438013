"""Hypothesis on the fleet's parsers of untrusted text: the srun step's labelled output (any bytes,
cut into chunks anywhere), `scontrol show node`'s record, and the markdown report's cells. Only
the documented error types, bounded memory, and the same answer however the stream is chunked."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from neuronctl.cli.fleet_report import render_markdown
from neuronctl.errors import FaultError
from neuronctl.ops.fleet.aggregate import NodeResult, aggregate
from neuronctl.ops.fleet.srun import Completed, FleetRequest, fleet_doctor, read_document
from neuronctl.ops.fleet.stream import MARK, NODE_NAME, StepReader
from neuronctl.ops.slurm_node import STATE, NodeState, ShowNodeError, parse_show_node

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_fuzz_fleet.py)

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NODES = st.sampled_from(["a", "b", "node-1", "x.y", "bad name", "", "a\x1b[2J"])
DOC = json.dumps({"schema": 1, "summary": {"verdict": "pass"}, "checks": []})


@st.composite
def step_lines(draw: st.DrawFn) -> bytes:
    """Lines as srun --label writes them, mixed with markers, documents and junk."""
    pieces = []
    for _ in range(draw(st.integers(0, 30))):
        task = draw(st.sampled_from(["0", "1", " 2", "٣", "12345678901", ""]))
        body = draw(st.one_of(
            st.builds(lambda n: f"{MARK} begin {n}", NODES),
            st.builds(lambda n, c: f"{MARK} end {n} {c}", NODES,
                      st.sampled_from(["0", "1", "²", "999", "1234", "", "-1"])),
            st.just(DOC), st.just("{"), st.text(max_size=40)))
        pieces.append(f"{task}: {body}" if task else body)
    return ("\n".join(pieces) + draw(st.sampled_from(["", "\n"]))).encode("utf-8", "replace")


def _chunked(data: bytes, cuts: list[int], per_task: int, total: int) -> StepReader:
    reader = StepReader(per_task, total)
    start = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        reader.feed(data[start:cut])
        start = max(start, cut)
    reader.feed(data[start:])
    return reader


def _assert_parsed(parsed: dict) -> None:
    for node, (text, code, error) in parsed.items():
        assert NODE_NAME.fullmatch(node)
        assert isinstance(text, str) and (code is None or 0 <= code <= 999)
        assert error is None or isinstance(error, str)


@FUZZ
@given(st.one_of(step_lines(), st.binary(max_size=600)), st.lists(st.integers(0, 10_000), max_size=8),
       st.sampled_from([(64, 256), (1 << 20, 1 << 22)]))
def test_the_step_reader_answers_the_same_however_the_stream_is_cut(
        data: bytes, cuts: list[int], caps: tuple[int, int]) -> None:
    per_task, total = caps
    whole = StepReader(per_task, total)
    whole.feed(data)
    chunked = _chunked(data, cuts, per_task, total)
    assert chunked.kept <= total and all(t.kept <= per_task for t in chunked.tasks.values())
    result = chunked.result()
    assert result == whole.result()
    _assert_parsed(result)


@FUZZ
@given(st.binary(min_size=1, max_size=200), st.integers(1, 4000))
def test_a_flood_keeps_at_most_the_cap(chunk: bytes, repeat: int) -> None:
    reader = StepReader(per_task=4096, total=16_384)
    reader.feed(f"0: {MARK} begin a\n1: {MARK} begin b\n".encode())
    for _ in range(repeat):
        reader.feed(b"0: " + chunk)
        assert reader.kept <= 16_384 and len(reader._partial) <= 4096 + 300 + 200
    reader.feed(f"\n1: {DOC}\n1: {MARK} end b 0\n".encode())
    result = reader.result()
    _assert_parsed(result)
    if "b" in result and result["b"][2] is None:
        assert json.loads(result["b"][0])["schema"] == 1


@FUZZ
@given(step_lines())
def test_fleet_doctor_reports_every_node_or_says_why(data: bytes) -> None:
    def runner(argv: list[str], limit: float) -> Completed:
        if argv[0] == "sinfo":
            return Completed(0, "a idle\nb idle\nnode-1 idle\n", "")
        return Completed(0, data.decode("utf-8", "replace"), "srun: error: x on node b\n")

    results = fleet_doctor(FleetRequest(all_nodes=True, timeout=5), ["nc"], runner)
    assert {"a", "b", "node-1"} <= {r.node for r in results}
    for r in results:
        assert (r.document is None) != (r.error is None)
    render_markdown(aggregate(results))


@FUZZ
@given(st.text(max_size=300), st.one_of(st.none(), st.integers(0, 999)))
def test_read_document_never_raises(text: str, code: int | None) -> None:
    result = read_document("a", text, code)
    assert result.document is None or result.document.get("schema") == 1


FIELD_VALUES = st.one_of(
    st.sampled_from(["IDLE", "IDLE+DRAIN", "(null)", "neuronctl: hardware.driver",
                     "x\n   State=IDLE", "x\n   Reason=neuronctl: y", "y\nNodeName=n1",
                     "a [root@2026-12-01T20:21:20]", "  "]),
    st.text(max_size=30))


@st.composite
def records(draw: st.DrawFn) -> str:
    lines = [f"NodeName={draw(st.sampled_from(['n1', 'n2', 'n1 Arch=x']))} CoresPerSocket=1"]
    keys = st.sampled_from(["State", "Reason", "Comment", "Extra", "OS", "AvailableFeatures",
                            "CPUAlloc", "Gres"])
    for _ in range(draw(st.integers(0, 8))):
        lines.append(f"{draw(st.sampled_from(['   ', '    ', '', '          ']))}"
                     f"{draw(keys)}={draw(FIELD_VALUES)}")
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))


@FUZZ
@given(st.one_of(records(), st.text(max_size=400)), st.sampled_from([None, "n1"]))
def test_scontrol_records_parse_or_are_refused(text: str, node: str | None) -> None:
    try:
        state = parse_show_node(text, node)
    except ShowNodeError as exc:
        assert isinstance(exc, FaultError) and exc.message.startswith("scontrol show node")
        return
    assert isinstance(state, NodeState) and STATE.fullmatch(state.state)
    assert text.count("State=") >= 1


MD = MarkdownIt("commonmark").enable("table")


@FUZZ
@given(st.lists(st.text(max_size=60), min_size=1, max_size=4))
def test_markdown_rows_keep_their_cells_whatever_the_values(values: list[str]) -> None:
    docs = []
    for i, value in enumerate(values):
        doc = {"schema": 1, "summary": {"verdict": "pass"}, "checks": [],
               "environment": {"release": {"version": value}}}
        docs.append(NodeResult(f"n{i}", doc, 0))
    docs.append(NodeResult("z", error=values[0]))
    tokens = MD.parse(render_markdown(aggregate(docs)))
    rows: list[int] = []
    for token in tokens:
        if token.type == "tr_open":
            rows.append(0)
        elif token.type in ("td_open", "th_open"):
            rows[-1] += 1
        assert token.type != "html_block"
        for child in token.children or []:
            assert child.type not in ("link_open", "image", "html_inline"), child
    assert rows.count(3) == len(docs) + 1  # the status table: its header and one row a node
