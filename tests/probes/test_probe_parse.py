"""The device probe's parsing half, over hand-made channel lines: what the probe wrote and how its
interpreter ended decide the report, and nothing malformed gets past as a pass or as a crash."""

import json

import pytest

from neuronctl.probes.device import HELLO, TIERS, ProbeExit, parse_probe, parse_tier_line

HELLO_LINE = json.dumps(HELLO)


def tier(name, status="pass", detail="fine", ms=1.0, **extra):
    return json.dumps({"tier": name, "status": status, "detail": detail, "ms": ms, **extra})


def all_passed(device="cpu"):
    lines = [HELLO_LINE, tier("import", torch="2.13.0+cpu"), tier("backend", device=device)]
    lines += [tier(t) for t in TIERS[2:-1]]
    return [*lines, tier("compile", "skip", "opt-in (--compile)")]


def exited(code=0, **kw):
    return ProbeExit(returncode=code, timeout=120.0, wall_ms=50.0, **kw)


def test_a_complete_run_is_ok_with_its_device_and_torch():
    report = parse_probe("auto", all_passed("cpu"), exited(0))
    assert report.ok and report.detail == ("all tiers passed on cpu: a CPU run, which checks torch "
                                           "and the model, not a device")
    assert report.to_json()["verdict"] == "cpu-run"
    assert (report.device, report.torch) == ("cpu", "2.13.0+cpu")
    assert [t.tier for t in report.tiers] == list(TIERS)
    assert report.tiers[-1].status == "skip"


def test_a_failed_tier_stops_the_report_and_later_lines_do_not_count():
    lines = [HELLO_LINE, tier("import", torch="2.13"), tier("backend", "fail", "no backend"),
             tier("device_count"), tier("allocate")]
    report = parse_probe("neuron", lines, exited(0))
    assert report.outcome == "failed" and report.detail == "tier backend failed: no backend"
    assert [t.tier for t in report.tiers] == ["import", "backend"]


def test_missing_torch_is_its_own_outcome():
    lines = [HELLO_LINE, tier("import", "fail", "ModuleNotFoundError: No module named 'torch'")]
    report = parse_probe("auto", lines, exited(0))
    assert report.outcome == "no-torch" and report.torch is None


@pytest.mark.parametrize(("line", "reason"), [
    ("not json at all", "not JSON"),
    ("[1, 2]", "not a JSON object"),
    ("[" * 3000 + "]" * 3000, "a line of 6000 characters"),
    ("[" * 2000 + "]" * 2000, "not JSON"),  # nesting deep enough to exhaust the recursion limit
    (json.dumps({"tier": "import"}), "status 'None' for tier import"),
    (json.dumps({"tier": "import", "status": "pass"}), "detail is not a string"),
    (tier("import", status="PASS"), "status 'PASS' for tier import"),
    (tier("import", status="skip"), "status 'skip' for tier import"),
    (tier("import", detail=["x"]), "detail is not a string"),
    (tier("import", ms=True), "ms is not a duration"),
    (tier("import", ms="3"), "ms is not a duration"),
    (tier("import", ms=-1), "ms is not a duration"),
    (tier("import").replace("1.0", "NaN"), "ms is not a duration"),
    (tier("import").replace("1.0", "1e400"), "ms is not a duration"),
    (tier("backend"), "tier 'backend' where import was due"),
    (tier("import", device="cpu"), "unexpected field 'device'"),
    (tier("import", extra=1), "unexpected field 'extra'"),
    (tier("import", torch=7), "torch version is not a short string"),
    (tier("import", torch="9" * 65), "torch version is not a short string"),
])
def test_a_malformed_line_is_a_failed_tier_not_an_error(line, reason):
    report = parse_probe("auto", [HELLO_LINE, line], exited(0))
    assert report.outcome == "failed"
    assert report.tiers == (report.tiers[0],)
    failed = report.failed_tier
    assert failed.tier == "import" and failed.status == "fail"
    assert failed.detail == f"malformed probe output: {reason}"


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("device", "quantum", "device is not neuron, cuda or cpu"),
    ("device", 3, "device is not neuron, cuda or cpu"),
])
def test_backend_device_is_one_of_the_known_devices(field, value, reason):
    lines = [HELLO_LINE, tier("import"), tier("backend", **{field: value})]
    report = parse_probe("auto", lines, exited(0))
    assert report.failed_tier.tier == "backend"
    assert report.failed_tier.detail == f"malformed probe output: {reason}"
    assert report.device is None


@pytest.mark.parametrize("count", [-1, 1.5, True, "2"])
def test_device_count_is_a_whole_number(count):
    lines = [HELLO_LINE, tier("import"), tier("backend", device="cpu"), tier("device_count", count=count)]
    report = parse_probe("auto", lines, exited(0))
    assert report.failed_tier.detail == "malformed probe output: count is not a whole number"


def test_untrusted_text_is_bounded_and_stripped_of_control_characters():
    detail = "\x1b[2J\x1b]0;owned\x07" + "x" * 2000
    lines = [HELLO_LINE, tier("import", "fail", detail)]
    report = parse_probe("auto", lines, exited(0, stderr_tail="boom\x1b[31m\n"))
    shown = report.failed_tier.detail
    assert len(shown) == 600 and "\x1b" not in shown and "\x07" not in shown
    assert shown.startswith("?[2J?]0;owned?x")


def test_without_the_hello_line_the_probe_never_started():
    forged = [line for line in all_passed() if line != HELLO_LINE]
    report = parse_probe("auto", forged, exited(0))
    assert report.outcome == "error" and not report.ok
    assert report.detail.startswith("the interpreter did not run the probe")
    not_python = parse_probe("auto", [], exited(1, stderr_tail="sh: 1: syntax error\n"))
    assert not_python.outcome == "error"
    assert not_python.detail.endswith("exit 1: sh: 1: syntax error")
    assert [(t.tier, t.status) for t in not_python.tiers] == [("import", "fail")]


def test_exit_zero_before_the_last_tier_is_not_a_pass():
    lines = all_passed()[:3]  # hello, import, backend: then the interpreter quietly exited 0
    report = parse_probe("auto", lines, exited(0))
    assert report.outcome == "error"
    assert report.detail == "probe exited 0 before tier device_count: no output"
    assert report.failed_tier.tier == "device_count"


def test_all_tiers_then_a_nonzero_exit_is_an_error():
    report = parse_probe("auto", all_passed(), exited(3, stderr_tail="Traceback\nValueError: bad\n"))
    assert report.outcome == "error" and report.detail == "probe exited 3: ValueError: bad"


def test_timeout_names_the_tier_it_hung_in():
    report = parse_probe("auto", [HELLO_LINE, tier("import")], ProbeExit(None, 3.0, 3100.0))
    assert report.outcome == "timeout"
    assert report.detail == "probe timed out after 3s in tier backend"
    assert report.tiers[-1].tier == "backend" and report.tiers[-1].detail == "timed out after 3s"
    at_exit = parse_probe("auto", all_passed(), ProbeExit(None, 3.0, 3100.0))
    assert at_exit.outcome == "timeout" and "at exit" in at_exit.detail


def test_a_signal_is_a_crash_named_by_the_signal():
    report = parse_probe("auto", [HELLO_LINE, tier("import")], exited(-6))
    assert report.outcome == "crashed"
    assert report.detail == "probe crashed with SIGABRT in tier backend"
    assert report.failed_tier.detail == "process killed by SIGABRT"


def test_a_flooded_channel_is_an_error_not_a_pass():
    report = parse_probe("auto", all_passed(), exited(0, channel_overflow=True))
    assert report.outcome == "error" and not report.ok


def test_parse_tier_line_returns_the_extra_field():
    result, extra = parse_tier_line(tier("device_count", count=2), "device_count")
    assert (result.tier, result.status, result.ms, extra) == ("device_count", "pass", 1.0,
                                                              {"count": 2})


def test_credentials_quoted_by_the_target_are_redacted():
    """An import error or a traceback may quote an index URL with its password."""
    url = "https://alice:hunter2@mirror.example/simple"
    lines = [HELLO_LINE, tier("import", "fail", f"OSError: cannot reach {url} ({'x' * 280})")]
    report = parse_probe("auto", lines, exited(0))
    assert "hunter2" not in report.detail and "alice" not in report.detail
    assert "mirror.example" in report.detail
    crashed = parse_probe("auto", [HELLO_LINE], exited(1, stderr_tail=f"Error: token=abc123 {url}\n"))
    assert "hunter2" not in crashed.detail and "abc123" not in crashed.detail
