"""Hostile input, second pass, on `fleet` and `--slurm-drain` without a cluster: code from the
working directory, one node's flood, drift in the distribution set, markdown injection, the
scontrol record, and npd-config's limits. (test_fleet_slurm_untrusted_input.py: the same on real Slurm.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from neuronctl.cli import cmd_fleet
from neuronctl.cli.fleet_report import render_markdown, render_text
from neuronctl.errors import FaultError, InputError
from neuronctl.ops.fleet.aggregate import NodeResult, aggregate
from neuronctl.ops.slurm_node import apply_slurm_drain, parse_show_node

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_fleet.py)

REPO = Path(__file__).resolve().parents[3]


# -- item 1: the remote command never imports from the node's working directory ---------------

def _impostors(where: Path) -> Path:
    flag = where / "impostor-ran"
    for module in ("neuronctl/__main__.py", "neuronctl/__init__.py", "runpy.py"):
        target = where / module
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"open({str(flag)!r}, 'a').write({module!r} + '\\n')\n"
                          "print('{\"schema\": 1, \"checks\": [], \"summary\": {}}')\n")
    return flag


def test_the_default_remote_command_ignores_a_neuronctl_in_the_working_directory(
        tmp_path: Path) -> None:
    flag = _impostors(tmp_path)
    argv = [*cmd_fleet._remote_command(None), "fleet", "npd-config", "--path", "/opt/nc"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert not flag.exists(), flag.read_text()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rules"][0]["path"] == "/opt/nc"  # the real neuronctl answered


# -- item 7: one node's flood costs that node its answer, not the others theirs, nor memory ----

FAKE_SRUN = """
import json, sys
out = sys.stdout.buffer
doc = json.dumps({"schema": 1, "summary": {"verdict": "pass"}, "checks": []}).encode()
out.write(b"1: @@neuronctl-fleet begin b\\n1: " + doc + b"\\n1: \\n1: @@neuronctl-fleet end b 0\\n")
out.write(b"0: @@neuronctl-fleet begin a\\n" + (b"0: " if MODE == "one-line" else b""))
line = b"y" * 65536 if MODE == "one-line" else b"0: " + b"x" * 65533 + b"\\n"
flood = sys.stderr.buffer if MODE == "stderr" else out
for _ in range(300 * 16):  # 300 MiB from node a
    flood.write(line)
if MODE == "stderr":
    out.write(b"0: " + doc + b"\\n")
out.write(b"\\n0: \\n0: @@neuronctl-fleet end a 0\\n")
"""

MEASURE = """
import json, resource, sys
from neuronctl.ops.fleet.srun import FleetRequest, fleet_doctor
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
results = fleet_doctor(FleetRequest(nodes=2, timeout=120), ["nc"])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"grew": peak - before, "results": {r.node: [r.error, r.document is not None]
                                                     for r in results}}))
"""


@pytest.mark.parametrize("mode", ["lines", "one-line", "stderr"])
def test_a_node_printing_300_mib_is_that_nodes_error_within_bounded_memory(
        tmp_path: Path, mode: str) -> None:
    """The fleet doctor runs in a child whose PATH has an `srun` that floods for node a; the
    child's own peak RSS (the reading, not the flood's writer), as the kernel counts it, grows
    by less than 64 MiB (the code before: over 256 MiB refused for all nodes, 1.76 GB at 240)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    srun = bin_dir / "srun"
    srun.write_text(f"#!{sys.executable}\nMODE = {mode!r}\n{FAKE_SRUN}")
    srun.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-c", MEASURE], env=env, capture_output=True,
                          text=True, timeout=300, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout)
    a = [None, True] if mode == "stderr" else ["output over 4 MiB", False]
    assert got["results"] == {"a": a, "b": [None, True]}
    assert got["grew"] < 64 * 1024 * 1024, got


# -- item 10: the fingerprint covers the whole distribution set and warned checks --------------

def _node_doc(extra: dict[str, str] | None = None, warn: tuple[str, ...] = ()) -> dict[str, Any]:
    dists = {"torch": "2.9.0", "torch-neuronx": "2.9.0.2.13.0", "neuronx-cc": "2.21.0",
             **(extra or {})}
    checks = [{"id": "packages.legacy-xla", "status": "warn" if warn else "pass"}]
    return {"schema": 1, "summary": {"verdict": "warn" if warn else "pass"}, "checks": checks,
            "environment": {"release": {"version": "2.33.0", "backend": "native"},
                            "packages": {k: dists.get(k) for k in ("torch", "torch-neuronx")},
                            "distributions": dists}}


def test_a_leftover_torch_xla_with_only_a_warning_is_drift() -> None:
    results = [NodeResult("n1", _node_doc(), 0), NodeResult("n2", _node_doc(), 0),
               NodeResult("n3", _node_doc({"torch-xla": "2.9.0"}, warn=("packages.legacy-xla",)), 0)]
    report = aggregate(results)
    assert report.exit_code == 1 and not report.ok
    assert set(report.differences["n3"]) == {"distributions", "warned_checks"}
    assert report.packages == {"n3": {"torch-xla": ("(not installed)", "2.9.0")}}
    assert "packages: torch-xla (not installed) -> 2.9.0" in render_text(report)


def test_a_different_version_of_any_distribution_is_drift_and_named() -> None:
    report = aggregate([NodeResult("n1", _node_doc(), 0), NodeResult("n2", _node_doc(), 0),
                        NodeResult("n3", _node_doc({"numpy": "2.0.0"}), 0),
                        NodeResult("n4", _node_doc({"torch": "2.8.0"}), 0)])
    assert report.packages == {"n3": {"numpy": ("(not installed)", "2.0.0")},
                               "n4": {"torch": ("2.9.0", "2.8.0")}}
    assert report.exit_code == 1


def test_a_malformed_distribution_table_is_drift_not_a_crash() -> None:
    bad = _node_doc()
    bad["environment"]["distributions"] = {"Torch\n": ["x"], "a" * 300: "1"}
    report = aggregate([NodeResult("n1", _node_doc(), 0), NodeResult("n2", _node_doc(), 0),
                        NodeResult("n3", bad, 0)])
    assert report.differences["n3"]["distributions"][1] == "(malformed)"
    assert report.packages == {"n3": {}} and report.exit_code == 1


def test_the_doctor_document_carries_the_distribution_set(cli, tmp_path: Path) -> None:
    from support.sysroots import build_host

    host = build_host(tmp_path / "trn2", "trn2")
    done = cli("doctor", "--json", "--level", "1", "--sysroot", str(host))
    table = json.loads(done.out)["environment"]["distributions"]
    import importlib.metadata as md

    assert table["click"] == md.version("click") and table["pytest"] == md.version("pytest")
    assert list(table) == sorted(table)


# -- item 13: markdown values render as the text they are, nothing else -----------------------

HOSTILE = ("a|b \\| c\\\\|\n| injected | row |\r## heading ![x](https://evil.example/i.png) "
           "[click](https://evil.example) `tick` ``two`` <img src=x onerror=alert(1)> "
           "https://evil.example www.evil.example @someone **bold** _em_")


def _cells(markdown: str) -> list[list[list[Any]]]:
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    bad = [t.type for t in tokens if t.type in ("html_block",)]
    assert not bad, bad
    rows: list[list[list[Any]]] = []
    for token in tokens:
        if token.type == "tr_open":
            rows.append([])
        if token.type == "inline" and rows:
            rows[-1].append(token.children or [])
    return rows


def test_markdown_report_escapes_every_node_value() -> None:
    hostile = _node_doc()
    hostile["environment"]["release"]["version"] = HOSTILE
    report = aggregate([NodeResult("n1", hostile, 0), NodeResult("n2", hostile, 0),
                        NodeResult("n3", _node_doc(), 0), NodeResult("n4", error="srun: " + HOSTILE)])
    markdown = render_markdown(report)
    rows = _cells(markdown)
    for row in rows:
        for cell in row:
            kinds = {c.type for c in cell}
            assert not kinds & {"link_open", "image", "html_inline", "strong_open", "em_open"}, cell
    baseline = [r for r in rows if len(r) == 2]
    release = next(r for r in baseline if r[0][0].content == "release")
    (code,) = release[1]
    assert code.type == "code_inline" and "evil.example/i.png" in code.content
    node_rows = [r for r in rows if len(r) == 3][1:]  # the status table, less its header
    assert [r[1][0].content for r in node_rows] == ["n1", "n2", "n3", "n4"], markdown
    for row in node_rows[2:]:
        (code,) = row[2]
        assert code.type == "code_inline" and "evil.example/i.png" in code.content
        assert "| injected | row |" in code.content.replace("\\|", "|")


# -- item 21: the scontrol record, read by its structure ---------------------------------------

RECORD = """NodeName=node1 Arch=x86_64 CoresPerSocket=1
   CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=0.55
   AvailableFeatures={features}
   ActiveFeatures={features}
   Gres=(null)
   NodeAddr=127.0.0.1 NodeHostName=vm Port=43637 Version=22.05.8
   OS=Linux 6.18.44 #1 SMP PREEMPT_DYNAMIC @0
   RealMemory=100 AllocMem=0 FreeMem=23093 Sockets=1 Boards=1
   State={state} ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=neuron
   CfgTRES=cpu=1,mem=100M,billing=1
{reason}   Comment={comment}

"""


def _slurm_record(state: str = "IDLE+DRAIN", reason: str | None = "disk replacement",
            features: str = "(null)", comment: str = "(null)") -> str:
    line = f"   Reason={reason} [root@2026-12-01T20:21:20]\n" if reason is not None else ""
    return RECORD.format(state=state, reason=line, features=features, comment=comment)


def _runner(text: str, calls: list[list[str]]) -> Any:
    def run(argv: list[str], limit: float) -> tuple[int, str, str]:
        calls.append(argv)
        return 0, text, ""

    return run


@pytest.mark.parametrize(("features", "comment"), [
    ("f1,Reason=neuronctl:z", "(null)"),  # a feature string (slurmd or admin)
    ("State=IDLE,Reason=neuronctl:z", "(null)"),
    ("(null)", "x\n   Reason=neuronctl: hardware.driver"),  # a Comment holding a newline
    ("(null)", "x\n   State=IDLE"),
    ("(null)", "x\nNodeName=node1 State=IDLE Reason=neuronctl: y"),
])
def test_another_admins_drain_is_never_resumed_nor_overwritten(features: str, comment: str) -> None:
    text = _slurm_record(features=features, comment=comment)
    for failed in (False, True):
        calls: list[list[str]] = []
        try:
            outcome = apply_slurm_drain(["hardware.driver"] if failed else [], failed, "node1",
                                        _runner(text, calls))
        except FaultError:
            pass  # an ambiguous record is refused: nothing done
        else:
            assert outcome.action == "none", outcome
        assert all(c[1] == "show" for c in calls), calls


def test_a_reason_that_only_starts_like_ours_is_not_ours() -> None:
    for reason in ("neuronctl: disk replacement", "neuronctl:x", "neuronctl: a,b c"):
        calls: list[list[str]] = []
        outcome = apply_slurm_drain([], False, "node1", _runner(_slurm_record(reason=reason), calls))
        assert outcome.action == "none" and len(calls) == 1
    calls = []
    ours = _slurm_record(reason="neuronctl: hardware.driver,runtime.compat")
    assert apply_slurm_drain([], False, "node1", _runner(ours, calls)).action == "resume"


def test_the_record_must_be_the_named_nodes() -> None:
    with pytest.raises(FaultError, match="record is for 'node1'"):
        parse_show_node(_slurm_record(), "node2")
    assert parse_show_node(_slurm_record(), "node1").reason == "disk replacement"


@pytest.mark.parametrize("name", ["node1\n", "node1\nx", " node1", "node1 ", "-n"])
def test_a_node_name_with_a_newline_or_space_is_refused(name: str) -> None:
    calls: list[list[str]] = []
    with pytest.raises(InputError):
        apply_slurm_drain([], False, name, _runner(_slurm_record(), calls))
    assert calls == []


# -- item 24: npd-config's timeout and a path that will not be on the nodes --------------------

def test_npd_config_refuses_a_timeout_too_short_for_a_result(cli) -> None:
    short = cli("fleet", "npd-config", "--timeout", "10")
    assert short.code == 2 and "15<=x<=3600" in short.err and short.out == ""
    # The help states the same bound the option enforces (one place: NPD_MIN_TIMEOUT).
    shown = " ".join(cli("fleet", "npd-config", "--help").out.split())
    assert "at least 15: 5 s a check" in shown and "120; 15<=x<=3600]" in shown
    cut = cli("fleet", "npd-config", "--timeout", "16")
    assert cut.code == 0 and json.loads(cut.out)["rules"][0]["args"][-2:] == ["--check-timeout", "6"]
    assert "doctor runs with --check-timeout 6" in cut.err


def test_npd_config_warns_of_a_path_in_a_temporary_environment(
        cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    given = cli("fleet", "npd-config", "--path", str(tmp_path / "venv/bin/neuronctl"))
    assert given.code == 0 and "warning" in given.err and "temporary directory" in given.err
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "neuronctl").write_text("#!/bin/sh\n")
    monkeypatch.setattr(sys, "executable", str(venv / "python"))
    default = cli("fleet", "npd-config")
    assert json.loads(default.out)["rules"][0]["path"] == str(venv / "neuronctl")
    assert "warning: neuronctl" in default.err
    uvx = "/home/u/.cache/uv/archive-v0/abc123/bin/neuronctl"
    assert "uv's cache" in (cmd_fleet.ephemeral_reason(uvx) or "")
    assert "pipx's cache" in (cmd_fleet.ephemeral_reason("/home/u/.local/pipx/.cache/x/bin/n") or "")
    stays = cli("fleet", "npd-config", "--path", "/opt/neuronctl/bin/neuronctl")
    assert stays.code == 0 and stays.err == ""


def test_npd_config_text_is_unchanged_for_the_default_timeout(cli) -> None:
    # A path of its own: the default is this checkout's interpreter, which CI may keep in /tmp
    # (a temporary place, which npd-config rightly warns of).
    done = cli("fleet", "npd-config", "--path", "/opt/neuronctl/bin/neuronctl")
    assert "--timeout" not in json.loads(done.out)["rules"][0]["args"] and done.err == ""
