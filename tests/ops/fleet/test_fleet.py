"""Fleet pieces without a cluster: the drift aggregation, reading an srun step's output, the drain
decision, the Prometheus textfile and the node-problem-detector config (whose command is run)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.fleet_output import labelled
from support.sysroots import build_host

from neuronctl.cli.render_prometheus import render_prometheus, stack_fingerprint, write_prometheus
from neuronctl.errors import InputError
from neuronctl.ops.doctor.report import DoctorReport
from neuronctl.ops.doctor.runner import CheckResult
from neuronctl.ops.fleet.aggregate import NodeResult, aggregate
from neuronctl.ops.fleet.srun import (
    Completed,
    FleetRequest,
    fleet_doctor,
    parse_step,
    srun_argv,
)
from neuronctl.ops.slurm_node import NodeState, apply_slurm_drain, decide, parse_show_node


def doc(driver: str = "2.31.7.0", failed: tuple[str, ...] = (), verdict: str = "pass") -> dict:
    checks = [{"id": "hardware.driver", "status": "fail" if "hardware.driver" in failed else "pass"},
              {"id": "packages.legacy-xla", "status": "fail" if "packages.legacy-xla" in failed
               else "pass"}]
    return {"schema": 1, "summary": {"verdict": "fail" if failed else verdict},
            "checks": checks,
            "environment": {"release": {"version": "2.33.0", "backend": "native"},
                            "python": {"version": "3.12.8"},
                            "hardware": {"chip": "trn2", "devices": 16, "driver": driver,
                                         "runtime": "2.35.30.0",
                                         "instance_type": "trn2.48xlarge"}}}


def test_majority_is_the_baseline_and_each_other_node_gets_exactly_its_differences() -> None:
    results = [NodeResult("n3", doc(), 0), NodeResult("n1", doc(driver="2.30.1.0"), 0),
               NodeResult("n2", doc(), 0), NodeResult("n4", doc(failed=("packages.legacy-xla",)), 1),
               NodeResult("n5", error="not available to Slurm: state down*")]
    report = aggregate(results)
    assert report.groups[0][1] == ["n2", "n3"]  # the majority, though n1 sorts first
    assert report.differences == {"n1": {"driver": ("2.31.7.0", "2.30.1.0")},
                                  "n4": {"failed_checks": ("none", "packages.legacy-xla")}}
    assert report.not_answering == {"n5": "not available to Slurm: state down*"}
    assert report.failing == ["n4"] and report.exit_code == 1


def test_identical_passing_nodes_exit_0_and_a_warn_verdict_still_passes() -> None:
    report = aggregate([NodeResult(f"n{i}", doc(verdict="warn"), 0) for i in range(3)])
    assert report.ok and report.exit_code == 0 and len(report.groups) == 1
    assert aggregate([]).exit_code == 1  # no node answered: not a pass


def test_node_values_are_bounded_printable_text() -> None:
    hostile = doc(driver="2.31\x1b[31m" + "9" * 1000)
    fp = aggregate([NodeResult("n1", hostile, 0)]).groups[0][0]
    assert "\x1b" not in fp["driver"] and len(fp["driver"]) <= 200


def test_interleaved_task_output_is_split_by_task_and_named_by_its_marker() -> None:
    a = labelled(0, "trn-a", json.dumps(doc(), indent=1), 0)
    b = labelled(1, "trn-b", json.dumps(doc(driver="x"), indent=1), 1)
    mixed = [line for pair in zip(a, b, strict=False) for line in pair] + a[len(b):] + b[len(a):]
    parsed = parse_step("\n".join(mixed) + "\n")
    assert set(parsed) == {"trn-a", "trn-b"}
    assert json.loads(parsed["trn-b"][0])["environment"]["hardware"]["driver"] == "x"
    assert parsed["trn-a"][1] == 0 and parsed["trn-b"][1] == 1


def test_one_srun_step_for_a_thousand_nodes_and_killed_tasks_are_reported() -> None:
    nodes = [f"trn{i:04d}" for i in range(1000)]
    argv = srun_argv(FleetRequest(timeout=90), nodes, ["neuronctl", "doctor", "--json"])
    assert argv[0] == "srun" and argv.count("srun") == 1
    assert "--ntasks-per-node=1" in argv and "--time=2" in argv and "--nodes=1000" in argv
    seen: list[list[str]] = []

    def runner(cmd: list[str], limit: float) -> Completed:
        seen.append(cmd)
        if cmd[0] == "sinfo":
            return Completed(0, "a idle\nb idle\nc down*\n", "")
        half = "\n".join(labelled(0, "a", json.dumps(doc()), 0) + labelled(1, "b", "{", None))
        return Completed(None, half, "srun: Job step aborted")

    results = {r.node: r for r in fleet_doctor(FleetRequest(all_nodes=True, timeout=5), ["nc"],
                                               runner)}
    assert [c[0] for c in seen] == ["sinfo", "srun"] and "--nodelist=a,b" in seen[1]
    assert results["a"].answered
    assert "killed at the time limit" in (results["b"].error or "")
    assert "down*" in (results["c"].error or "")


def test_with_nodes_n_a_node_that_failed_to_launch_is_named_from_srun() -> None:
    def runner(cmd: list[str], limit: float) -> Completed:
        out = "\n".join(labelled(0, "a", json.dumps(doc()), 0))
        return Completed(1, out, "srun: error: Task launch for StepId=3.0 failed on node b: "
                                 "Communication connection failure\n")

    results = fleet_doctor(FleetRequest(nodes=2, timeout=5), ["nc"], runner)
    assert [(r.node, r.answered) for r in results] == [("a", True), ("b", False)]
    assert "Communication connection failure" in (results[1].error or "")


def test_bad_requests_are_input_errors() -> None:
    for request in (FleetRequest(nodes=2, all_nodes=True), FleetRequest(nodelist="a;rm -rf /"),
                    FleetRequest(timeout=0)):
        with pytest.raises(InputError):
            fleet_doctor(request, ["nc"], lambda argv, limit: Completed(0, "", ""))


DRIVER = "neuronctl: hardware.driver"


@pytest.mark.parametrize(("state", "failed_ids", "expected"), [
    (NodeState("IDLE", ""), ["hardware.driver"], "drain"),
    (NodeState("IDLE", ""), [], "none"),
    (NodeState("IDLE+DRAIN", DRIVER), [], "resume"),
    (NodeState("IDLE+DRAIN", DRIVER), ["hardware.driver"], "none"),  # already says so
    (NodeState("MIXED+DRAIN", DRIVER), ["runtime.compat"], "drain"),  # other ids now: re-reason
    (NodeState("IDLE+DRAIN", "bad DIMM"), [], "none"),
    (NodeState("IDLE+DRAIN", "bad DIMM"), ["hardware.driver"], "none"),
])
def test_drain_decision(state: NodeState, failed_ids: list[str], expected: str) -> None:
    assert decide(state, bool(failed_ids), failed_ids)[0] == expected


def test_drain_reads_scontrol_and_updates_with_a_clean_reason() -> None:
    calls: list[list[str]] = []

    def runner(argv: list[str], limit: float) -> tuple[int, str, str]:
        calls.append(argv)
        return 0, "NodeName=n1 Arch=x86_64\n   State=IDLE ThreadsPerCore=1\n", ""

    outcome = apply_slurm_drain(["runtime.compat", "x;$(reboot)"], True, "n1", runner)
    assert outcome.action == "drain"
    assert calls[-1] == ["scontrol", "update", "NodeName=n1", "State=DRAIN",
                         "Reason=neuronctl: runtime.compat"]
    shown = parse_show_node("NodeName=n1 Arch=x86_64\n   State=IDLE+DRAIN ThreadsPerCore=1\n"
                            "   Reason=neuronctl: runtime.compat [root@2026-11-30T12:00:00]\n")
    assert shown.drained and shown.reason == "neuronctl: runtime.compat"


def _driver_failed_report() -> DoctorReport:
    checks = (CheckResult("hardware.driver", "Neuron driver", "fail", "old", None, 3.0),
              CheckResult("python.version", "Python", "pass", "ok", None, 1.0))
    return DoctorReport(checks, False, doc()["environment"])


def test_prometheus_textfile_parses_back(tmp_path: Path) -> None:
    report = _driver_failed_report()
    fingerprint = stack_fingerprint(report)
    text = render_prometheus(report, fingerprint, 1764500000.5, 2.25)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    status = {(s.labels["check"], s.labels["status"]): s.value
              for s in families["neuronctl_doctor_check_status"].samples}
    assert status[("hardware.driver", "fail")] == 1 and status[("hardware.driver", "pass")] == 0
    assert status[("python.version", "pass")] == 1
    info = families["neuronctl_doctor_stack_info"].samples[0].labels
    assert info["driver"] == "2.31.7.0" and info["torch_neuronx"] == "(not reported)"
    assert info["failed_checks"] == "hardware.driver"
    assert families["neuronctl_doctor_last_run_timestamp_seconds"].samples[0].value == 1764500000.5
    assert families["neuronctl_doctor_duration_seconds"].samples[0].value == 2.25
    assert families["neuronctl_doctor_failed"].samples[0].value == 1
    target = tmp_path / "neuronctl.prom"
    write_prometheus(target, report, fingerprint, 1764500000.5, 2.25)
    assert target.read_text() == text and [p.name for p in tmp_path.iterdir()] == ["neuronctl.prom"]
    with pytest.raises(InputError):
        write_prometheus(tmp_path / "metrics.txt", report, fingerprint, 0.0, 0.0)


def test_npd_config_follows_npd_rules_and_its_command_exits_0_or_1(cli, tmp_path: Path) -> None:
    result = cli("fleet", "npd-config", "--timeout", "60", "--max-output-length", "120")
    assert result.code == 0
    config = json.loads(result.out)
    assert config["plugin"] == "custom"
    assert config["pluginConfig"] == {"invoke_interval": "300s", "timeout": "60s",
                                      "max_output_length": 120, "concurrency": 1}
    rule, _hardware_rule = config["rules"]  # the second: severity drain (test_health_severity.py)
    # NPD refuses a permanent rule without a default condition, or a rule timeout over the global.
    assert rule["type"] == "permanent" and rule["condition"] == "NeuronStackProblem"
    assert [c["type"] for c in config["conditions"]] == ["NeuronStackProblem",
                                                         "NeuronHardwareProblem"]
    assert rule["timeout"] == "60s" and os.access(rule["path"], os.X_OK)
    healthy = build_host(tmp_path / "trn2", "trn2")
    env = {**os.environ, "NEURONCTL_SYSROOT": str(healthy)}
    run = subprocess.run([rule["path"], *rule["args"]], env=env, capture_output=True, text=True, check=False,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().startswith(("pass: ", "warn: "))
    assert len(run.stdout.strip()) <= 120  # the whole verdict fits NPD's message
    env["PJRT_DEVICE"] = "NEURON"  # a legacy XLA signal: the doctor fails, NPD reads a problem
    run = subprocess.run([rule["path"], *rule["args"]], env=env, capture_output=True, text=True, check=False,
                         timeout=60)
    assert run.returncode == 1 and run.stdout.startswith("fail: ")


def test_selection_options_reach_srun_as_separate_arguments() -> None:
    from neuronctl.ops.fleet.select import Selection

    selection = Selection(account="ml-team", qos="high", reservation="maint", exclude="trn[3-4]",
                          constraint="trn2&efa")
    argv = srun_argv(FleetRequest(nodes=2, selection=selection), None, ["nc"])
    chosen = [a for a in argv if a.split("=")[0] in ("--account", "--qos", "--reservation",
                                                     "--exclude", "--constraint")]
    assert chosen == ["--account=ml-team", "--qos=high", "--reservation=maint",
                      "--exclude=trn[3-4]", "--constraint=trn2&efa"]


def test_all_nodes_applies_exclude_constraint_and_reservation_before_srun() -> None:
    from neuronctl.ops.fleet.select import Selection

    seen: list[list[str]] = []

    def runner(cmd: list[str], limit: float) -> Completed:
        seen.append(cmd)
        if cmd[0] == "sinfo":
            return Completed(0, "a idle trn2,efa\nb resv trn2,efa\nc idle trn1\nd idle trn2\n", "")
        if cmd[:3] == ["scontrol", "show", "hostnames"]:
            return Completed(0, "\n".join(cmd[3].strip("[]").split(",")) + "\n", "")
        if cmd[:3] == ["scontrol", "show", "reservation"]:
            return Completed(0, "ReservationName=r Nodes=[a,b,c] NodeCnt=3 State=ACTIVE\n", "")
        out = [line for i, n in enumerate(("a", "b")) for line in labelled(i, n, json.dumps(doc()), 0)]
        return Completed(0, "\n".join(out), "")

    selection = Selection(reservation="r", exclude="[d]", constraint="trn2")
    results = fleet_doctor(FleetRequest(all_nodes=True, timeout=5, selection=selection), ["nc"], runner)
    # d excluded, c lacks trn2 (and d is outside the reservation), b is reserved for this step.
    assert [r.node for r in results] == ["a", "b"] and all(r.answered for r in results)
    srun = next(c for c in seen if c[0] == "srun")
    assert "--nodelist=a,b" in srun and "--reservation=r" in srun


def test_constraints_neuronctl_cannot_judge_alone_need_slurm_to_pick() -> None:
    from neuronctl.ops.fleet.select import feature_groups, satisfies

    assert satisfies({"trn2", "efa"}, feature_groups("trn2&efa"))
    assert not satisfies({"trn2"}, feature_groups("trn2&efa"))
    assert satisfies({"trn1"}, feature_groups("trn1|trn2"))
    for hard in ("a&b|c", "a*2", "(a|b)&c", "[rack1|rack2]"):
        with pytest.raises(InputError, match="--nodes N"):
            feature_groups(hard)
