"""Issue 25, item 7: one vocabulary on screen. Verdict lines are `pass: `/`warn: `/`fail: ` in
every command; no internal label (no-torch, bad-input, absent) or Python repr reaches a user;
click's usage errors are the same one line and hint as every other error; "did you mean" is
worded one way."""

from __future__ import annotations

import json
import sys

import pytest

from neuronctl.cli.env_report import _collect_env_lines

pytestmark = pytest.mark.first_hour  # the first_hour campaign (was tests/test_first_hour_words.py)

VERDICT = ("pass: ", "warn: ", "fail: ")


def _bare_python() -> str:
    """A Python with no torch: the smoke and probe outcome 'no-torch' (found by path, as
    wheels.find_python finds every interpreter: PYENV_ROOT need not be set)."""
    from support.wheels import find_python

    return find_python("3.12")


def test_the_doctor_verdict_line_is_lower_case(cli, tmp_path):
    (tmp_path / "sys").mkdir()
    r = cli("doctor", "-q", "--no-device-probe", "--sysroot", str(tmp_path))
    assert r.out.startswith(VERDICT) and r.out.count("\n") == 1, r.out


@pytest.mark.parametrize("command", ["smoke", "probe"])
def test_smoke_and_probe_verdicts_name_no_internal_label(cli, command):
    r = cli(command, "--python", _bare_python())
    assert r.code == 1
    last = r.out.strip().splitlines()[-1]
    assert last.startswith("fail: ") and "torch is not installed" in last, r.out
    assert "no-torch" not in r.out and "FAIL no-torch" not in r.out


def test_env_names_why_collect_env_is_missing_in_words():
    text = "\n".join(_collect_env_lines({"status": "absent", "detail": "torch is not installed"}))
    assert "Not available (no torch in the target): torch is not installed" in text
    assert "absent:" not in text


def test_init_shows_toml_not_python_reprs(cli):
    r = cli("init", "--python", "3.12")
    assert r.code == 0, r.err
    assert 'python = ["3.12"]' in r.out and "['3.12']" not in r.out
    assert json.loads(cli("init", "--json", "--python", "3.13").out)["changed"] == [
        'python = ["3.13"]']


USAGE_ERRORS = [
    (("doctr",), "no such command 'doctr'; did you mean 'doctor'?", "see: neuronctl --help"),
    (("doctor", "--jsn"), "no such option: --jsn; did you mean '--json'?",
     "see: neuronctl doctor --help"),
    (("doctor", "--level", "9"), "invalid value for '--level'", "see: neuronctl doctor --help"),
    (("cost", "--instance"), "option '--instance' requires an argument",
     "see: neuronctl cost --help"),
    (("releases", "show"), "missing argument", "see: neuronctl releases show --help"),
]


@pytest.mark.parametrize(("args", "message", "hint"), USAGE_ERRORS)
def test_usage_errors_are_one_line_and_a_hint(cli, args, message, hint):
    r = cli(*args)
    assert r.code == 2
    lines = r.err.splitlines()
    assert len(lines) == 2, r.err
    assert lines[0].startswith("neuronctl: error: ") and message in lines[0], r.err
    assert lines[1] == f"hint: {hint}", r.err
    assert "Usage:" not in r.err and "Try '" not in r.err


def test_did_you_mean_is_worded_once(cli, monkeypatch):
    texts = [cli("doctr").err, cli("doctor", "--jsn").err, cli("doctor", "--only", "hardwre").err,
             cli("lock", "--index=neurn=http://127.0.0.1:9/simple").err]
    monkeypatch.setenv("NEURONCTL_INDEX_PYTORCHCPU", "http://127.0.0.1:9/simple")
    texts.append(cli("lock").err)
    for text in texts:
        assert "; did you mean '" in text, text
        assert "Did you mean" not in text


def test_fleet_verdict_is_lower_case():
    from neuronctl.cli.fleet_report import verdict_line
    from neuronctl.ops.fleet.aggregate import aggregate

    report = aggregate([])
    assert verdict_line(report).startswith(VERDICT)


def test_the_device_probe_names_no_torch_internal(cli):
    r = cli("probe", "--python", sys.executable)  # torch (CPU) is here
    assert r.code in (0, 1) and "backend" in r.out, r.out
    assert "privateuse1" not in r.out and "'privateuseone'" not in r.out, r.out
