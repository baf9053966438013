"""Issue 22, second hostile pass, what neuronctl prints: redaction by structure, never by a word
near a path or an option (item 22); netrc's fields masked (item 4); no Infinity in JSON (item 20).
Each test fails on the code before these fixes."""

from __future__ import annotations

import json

import pytest

from neuronctl.redact import redact

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_output.py)


# Item 22: the user's own words come back as typed.
@pytest.mark.parametrize("args, shown", [
    (["smoke", "--script", "tokenizer_test.py"], "tokenizer_test.py: no such file"),
    (["doctor", "--python", "/etc/passwd"], "/etc/passwd: not executable"),
    (["cost", "--tokens", "2.5e0", "--throughput", "1"], "'2.5e0' is not a whole number"),
])
def test_paths_and_option_values_near_secret_words_are_not_masked(cli, args, shown):
    r = cli(*args)
    assert r.code == 2, r.err
    assert "***" not in r.err and shown in r.err.lower(), r.err


@pytest.mark.parametrize("text", [
    "--script tokenizer_test.py: No such file", "--python /etc/passwd: not executable",
    "Error: Invalid value for '--tokens': '2e9' is not a valid integer range.",
    "./secret: not found", "~/passwd: missing", "/home/u/data/token: empty", "password.txt: No such file",
    "TOKENIZERS_PARALLELISM=false", "tokenizer: gpt2", "login failed for user",
])
def test_redact_keeps_messages_about_files_and_options(text):
    assert redact(text) == text


@pytest.mark.parametrize("text, secret", [
    ("token: QZXa", "QZXa"), ("--token=QZXb", "QZXb"), ("{'--token': 'QZXc'}", "QZXc"),
    ("tool.index.token = 'QZXd'", "QZXd"), ('{"api_key": "QZXe"}', "QZXe"),
    ("HF_TOKEN=QZXf", "QZXf"), ("x-session : QZXg", "QZXg"), ("Authorization: Bearer QZXh", "QZXh"),
    ("http://u:QZXi@h/simple", "QZXi"), ("MY_PASSWORD=QZXj", "QZXj"),
    ("--token: QZXk ", "QZXk"),  # found by test_fuzz_redact: a bare option is no message
    ("https:/u:QZXl@h/m.json: no such file", "QZXl"),  # a URL folded by a path (review)
    # an exception shown as Python shows it quotes what it was given: a model's KeyError on a
    # secret it looked up, a token a library refused (a review got both printed once)
    ("KeyError: 'sk-live-QZXm'", "QZXm"), ("InvalidTokenError: QZXn", "QZXn"),
])
def test_secrets_by_structure_are_still_masked(text, secret):
    assert secret not in redact(text)


def test_tokens_accepts_e_notation_that_is_a_whole_number(cli):
    r = cli("cost", "--tokens", "2e9", "--throughput", "1000", "--instance", "trn1.2xlarge", "--json")
    assert r.code == 0, r.err
    job = json.loads(r.out)["cost"]["job"]
    assert job["tokens"] == 2_000_000_000 and isinstance(job["tokens"], int)
    for bad in ("2.5e0", "1e19", "nan", "inf", "0", "-3", "1e400", "0x10"):
        r = cli("cost", "--tokens", bad, "--throughput", "1000", "--instance", "trn1.2xlarge")
        assert r.code == 2 and "***" not in r.err and f"'{bad}'" in r.err, (bad, r.err)
        assert "Traceback" not in r.err


# Item 4: netrc's fields, in every form netrc allows.
@pytest.mark.parametrize("text", [
    "machine pypi.internal login QZXuser password QZXpass account QZXacct",
    "machine pypi.internal\n  login QZXuser\n  password QZXpass\n",
    "password QZXpass", "  login QZXuser   password QZXpass",
    "default login QZXuser password QZXpass",
    "Invalid requirement: 'machine h login QZXuser password QZXpass'",
    "ERROR: line 1: machine h login QZXuser password QZXpass port 443",
    'machine h login "QZX user" password "QZX \\" pass"', "MACHINE h LOGIN QZXuser PASSWORD QZXpass",
    "machine a login QZXa password QZXb machine b login QZXc password QZXd",
])
def test_netrc_fields_are_masked(text):
    out = redact(text)
    assert "QZX" not in out and "***" in out, out


def test_a_netrc_read_by_the_env_dump_shows_no_field(cli, monkeypatch):
    """The README's own example: a netrc line in a variable the env dump shows."""
    monkeypatch.setenv("NEURON_CC_FLAGS", "machine h.example login QZXuser password QZXpass")
    r = cli("env")
    assert r.code == 0, r.err
    assert "QZX" not in r.out and "h.example" in r.out


# Item 20: no non-finite number in any JSON document.
@pytest.mark.parametrize("flags", [["--throughput", "1e-320"], ["--throughput", "5e-324"],
                                   ["--throughput", "1e-300", "--tokens", "1e18"]])
def test_costs_that_are_not_finite_are_refused_in_one_line(cli, flags):
    for extra in ([], ["--json"]):
        r = cli("cost", *flags, "--instance", "trn1.2xlarge", *extra)
        assert r.code == 2, r.out + r.err
        assert "Infinity" not in r.out and "inf" not in r.out.lower().split("error")[0]
        assert len([ln for ln in r.err.splitlines() if ln.strip()]) == 1, r.err
        if extra:
            document = json.loads(r.out, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
            assert document["error"]["kind"] == "input"


def test_a_smoke_report_with_a_tiny_throughput_is_refused(cli, tmp_path):
    report = tmp_path / "smoke.json"
    report.write_text(json.dumps({"schema": 1, "smoke": {"ok": True, "tokens_per_s": 1e-320,
                                                         "model": "m", "device": "neuron"}}))
    r = cli("cost", "--from", str(report), "--instance", "trn1.2xlarge", "--json")
    assert r.code == 2 and "Infinity" not in r.out
    json.loads(r.out, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))


def test_the_one_json_writer_refuses_nan():
    from neuronctl.cli.output import dump_json
    from neuronctl.errors import NeuronctlError

    for value in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(NeuronctlError, match="cannot be written"):
            dump_json({"x": {"y": [value]}})
    assert json.loads(dump_json({"x": 1.5})) == {"x": 1.5}


def test_a_json_writing_command_with_nan_fails_cleanly(cli, monkeypatch):
    """Should a NaN reach a document, the command fails as one document naming it, exit 1."""
    import neuronctl.cli.cmd_cost as cmd_cost

    real = cmd_cost.estimate

    def poisoned(*args, **kwargs):
        out = real(*args, **kwargs)
        return type(out)(float("nan"), out.throughput_source, out.tokens, out.hours, out.rows,
                         out.host, out.host_source)

    monkeypatch.setattr(cmd_cost, "estimate", poisoned)
    r = cli("cost", "--throughput", "10", "--instance", "trn1.2xlarge", "--json")
    assert r.code == 1 and "NaN" not in r.out
    assert json.loads(r.out)["error"]["message"].startswith("internal error")
