"""What `neuronctl doctor` writes beside its report: the node_exporter textfile
(`--format prometheus -o FILE.prom`, parsed back with prometheus_client's own parser) and what
`--slurm-drain` did (here where Slurm cannot be reached; test_fleet_slurm.py drains and resumes a
real node)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.sysroots import build_host


def test_prometheus_textfile_from_a_real_run(cli, stacks, tmp_path: Path) -> None:
    host = build_host(tmp_path / "trn2", "trn2")
    target = tmp_path / "textfile" / "neuronctl.prom"
    target.parent.mkdir()
    target.write_text("# an older run\n")
    before = time.time()
    r = cli("doctor", "--level", "1", "--format", "prometheus", "-o", str(target),
            "--python", str(stacks["native"]), "--sysroot", str(host))
    assert r.code == 0, r.out + r.err
    assert "PASS" in r.out or "WARN" in r.out  # stdout keeps the text report
    assert [p.name for p in target.parent.iterdir()] == ["neuronctl.prom"]  # replaced, no temp
    families = {f.name: f for f in text_string_to_metric_families(target.read_text())}
    status = {(s.labels["check"], s.labels["status"]): s.value
              for s in families["neuronctl_doctor_check_status"].samples}
    assert status[("hardware.chip", "pass")] == 1 and status[("hardware.chip", "fail")] == 0
    assert ("device.probe", "pass") not in status  # level 1 has no device probe
    info = families["neuronctl_doctor_stack_info"].samples[0].labels
    assert (info["torch_neuronx"], info["nki"], info["neuronx_cc"]) == \
        ("2.14.3.0", "0.7.0", "2.28.7631.0+6f180f47")
    assert (info["tools"], info["driver"], info["chip"]) == ("2.33.38.0", "2.31.8.0", "trn2")
    assert info["failed_checks"] == "none"
    assert families["neuronctl_doctor_failed"].samples[0].value == 0
    stamp = families["neuronctl_doctor_last_run_timestamp_seconds"].samples[0].value
    assert before - 1 <= stamp <= time.time()
    assert 0 < families["neuronctl_doctor_duration_seconds"].samples[0].value < 20


@pytest.mark.parametrize("args", [(), ("-o", "metrics.txt")])
def test_prometheus_needs_a_prom_file_and_runs_nothing_without_one(cli, args) -> None:
    r = cli("doctor", "--format", "prometheus", *args)
    assert r.code == 2 and "give -o FILE.prom" in r.err
    assert not Path("metrics.txt").exists()


def test_slurm_drain_where_slurm_cannot_be_reached_fails_and_says_why(
        cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol
    (tmp_path / "sys").mkdir()  # an empty machine is still a root: sys/ (issue 22, item 11)
    monkeypatch.setenv("SLURMD_NODENAME", "node7")
    r = cli("doctor", "--level", "1", "--only", "python", "--slurm-drain", "--json",
            "--sysroot", str(tmp_path))
    assert r.code == 1
    doc = json.loads(r.out)
    assert doc["slurm_drain"]["node"] == "node7" and doc["slurm_drain"]["action"] == "error"
    assert "scontrol: not found" in doc["slurm_drain"]["why"]
    assert doc["error"]["message"].startswith("--slurm-drain: scontrol: not found")
    text = cli("doctor", "--level", "1", "--only", "python", "--slurm-drain", "--sysroot",
               str(tmp_path))
    assert text.code == 1 and "slurm: node node7 not changed: scontrol: not found" in text.err
