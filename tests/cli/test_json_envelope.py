"""Every command with --json (or --format json) writes exactly one JSON document to stdout, on
success and on failure: `schema`, `command`, its own fields, and `error` {kind, message, hint}
when it failed; the one-line error still goes to stderr (issue 13)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from support.cli_run import Result
from support.paths import N2_MANIFEST
from support.sysroots import build_host
from support.wheels import make_venv

from neuronctl.cli.main import COMMANDS, cli
from neuronctl.cli.printer import emit_json
from neuronctl.errors import FaultError, TerminateSignal

EMPTY = "empty-root"  # a sysroot with nothing in it: no Neuron hardware, fast to read


def document(r: Result) -> dict[str, Any]:
    """stdout as exactly one JSON document (json.loads refuses anything after the first)."""
    assert r.out.lstrip().startswith("{"), r.out
    doc = json.loads(r.out)
    assert isinstance(doc, dict) and doc["schema"] == 1
    return doc


def assert_succeeded(r: Result, command: str) -> dict[str, Any]:
    assert r.code == 0, r.err
    doc = document(r)
    assert doc["command"] == command and doc["status"] == "ok" and "error" not in doc
    return doc


def assert_failed(r: Result, command: str, code: int, kind: str) -> dict[str, Any]:
    assert r.code == code, (r.out, r.err)
    doc = document(r)
    assert doc["command"] == command and doc["status"] == "failed" and list(doc)[-1] == "error"
    error = doc["error"]
    assert set(error) == {"kind", "message", "hint"} and error["kind"] == kind
    assert error["message"] and "\n" not in error["message"]
    return doc


def assert_error_line(r: Result, doc: dict[str, Any]) -> None:
    """The text error is on stderr as before: one line, the same message as the document's."""
    lines = r.err.splitlines()
    assert f"neuronctl: error: {doc['error']['message']}" in lines, r.err
    if doc["error"]["hint"]:
        assert f"hint: {doc['error']['hint']}" in lines


@pytest.fixture
def empty_root() -> Path:
    root = Path(EMPTY)
    (root / "sys").mkdir(parents=True)  # an empty machine is still a root: sys/ (issue 22, item 11)
    return root


SUCCEEDS = [
    ("releases", ["releases", "--json"]),
    ("releases show", ["releases", "show", "2.33.0", "--json"]),
    ("releases import", ["releases", "import", str(N2_MANIFEST), "--json"]),
    ("init", ["init", "--json"]),
    ("detect", ["detect", "--json", "--sysroot", EMPTY]),
    ("env", ["env", "--json", "--sysroot", EMPTY]),
    ("doctor", ["doctor", "--json", "--only", "hardware.chip", "--sysroot", EMPTY]),
    ("doctor", ["doctor", "--format", "json", "--only", "hardware.chip", "--sysroot", EMPTY]),
    ("probe", ["probe", "--json", "--device", "cpu"]),
]


@pytest.mark.parametrize(("command", "args"), SUCCEEDS, ids=[" ".join(a) for _, a in SUCCEEDS])
def test_success_is_one_document_naming_the_command(cli, empty_root, command, args):
    assert_succeeded(cli(*args), command)


FAILS = [
    # The issue's own example: exit 2 with nothing on stdout before.
    ("doctor", ["doctor", "--json", "--release", "9.9"], 2, "input"),
    ("doctor", ["doctor", "--format", "json", "--release", "9.9"], 2, "input"),
    ("releases", ["--manifest", "missing.json", "releases", "--json"], 2, "input"),
    ("releases show", ["releases", "show", "9.9", "--json"], 2, "input"),
    ("releases import", ["releases", "import", "missing.json", "--json"], 2, "input"),
    ("releases import", ["releases", "import", str(N2_MANIFEST), "--json", "-o", "no-dir/x.json"],
     1, "fault"),
    ("init", ["init", "--json", "--release", "1.0.0"], 2, "input"),
    ("detect", ["detect", "--json", "--sysroot", "no-such-root"], 2, "input"),
    ("env", ["env", "--json", "--python", "no-such/python"], 2, "input"),
    ("probe", ["probe", "--json", "--timeout", "nan"], 2, "input"),
    ("lock", ["lock", "--json", "--python", "2"], 2, "input"),
    ("install", ["install", "--json", "--lock", "missing.toml", "--venv", "v"], 2, "input"),
]


@pytest.mark.parametrize(("command", "args", "code", "kind"), FAILS,
                         ids=[" ".join(a) for _, a, _, _ in FAILS])
def test_an_error_is_one_document_with_the_error_and_the_line_on_stderr(cli, command, args, code,
                                                                        kind):
    r = cli(*args)
    doc = assert_failed(r, command, code, kind)
    assert list(doc) == ["schema", "command", "status", "error"] and doc["status"] == "failed"
    assert_error_line(r, doc)


def test_a_failed_verdict_keeps_its_report_and_says_why(cli, tmp_path):
    """Commands that ran and failed (exit 1) keep their fields; `error` says what failed."""
    root = build_host(tmp_path / "nodrv", "trn2", driver=None, sysfs=False, dev_nodes=False,
                      runtime=None)
    r = cli("doctor", "--json", "--only", "hardware.driver", "--sysroot", str(root))
    doc = assert_failed(r, "doctor", 1, "failed")
    assert doc["summary"]["failed"] == 1 and doc["checks"][0]["id"] == "hardware.driver"
    assert doc["error"]["message"].startswith("fail: problems found: 1 failed")
    r = cli("lock", "--check", "--json")  # no lock file: out of date
    doc = assert_failed(r, "lock", 1, "failed")
    assert doc["kind"] == "lock" and doc["up_to_date"] is False
    r = cli("probe", "--json", "--python", str(make_venv(tmp_path / "no-torch")))
    doc = assert_failed(r, "probe", 1, "failed")
    assert doc["probe"]["ok"] is False and doc["probe"]["outcome"] == "no-torch"


def test_doctor_writing_json_to_a_file_keeps_stdout_text(cli, tmp_path):
    root = build_host(tmp_path / "nodrv", "trn2", driver=None, sysfs=False, dev_nodes=False,
                      runtime=None)
    r = cli("doctor", "--format", "json", "-o", "report.json", "--only", "hardware.driver",
            "--sysroot", str(root))
    assert r.code == 1 and "{" not in r.out and "FAIL" in r.out
    assert json.loads(Path("report.json").read_text())["command"] == "doctor"


def test_lock_and_install_documents_over_real_indexes(cli, uni, tmp_path):
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--json")
    assert assert_succeeded(r, "lock")["kind"] == "lock"
    r = cli("install", "--lock", "pylock.toml", "--venv", str(tmp_path / "v"), "--dry-run", "--json",
            "--engine", "uv")
    assert assert_succeeded(r, "install")["dry_run"] is True
    dead = "http://alice:s3cret@127.0.0.1:9/simple"  # a fault (exit 1); the password never shown
    r = cli("lock", *uni.index_flags(), f"--index=pypi={dead}", "--python", "3.12", "--timeout", "1",
            "--json", "-o", "pylock.other.toml")
    doc = assert_failed(r, "lock", 1, "fault")
    assert_error_line(r, doc)
    assert "127.0.0.1:9" in doc["error"]["message"] and "s3cret" not in r.out + r.err


def _json_commands() -> list[str]:
    """Every command (and subcommand) that has --json or --format json, as users type it."""
    found = []
    root = click.Context(cli)
    for name in sorted(COMMANDS):
        command = cli.get_command(root, name)
        assert command is not None
        todo = [(name, command)]
        while todo:
            path, cmd = todo.pop()
            opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
            if "--json" in opts or _formats_json(cmd):
                found.append(path)
            if isinstance(cmd, click.Group):
                todo += [(f"{path} {sub}", c) for sub, c in cmd.commands.items()]
    return found


def _formats_json(command: click.Command) -> bool:
    return any("--format" in getattr(p, "opts", []) and isinstance(p.type, click.Choice)
               and "json" in p.type.choices for p in command.params)


def test_a_usage_error_under_json_is_a_document_for_every_json_command(cli):
    """Also every command added later: a bad option under --json still names the command."""
    commands = _json_commands()
    assert {"doctor", "releases show", "lock", "install"} <= set(commands)
    for command in commands:
        r = cli(*command.split(), "--json", "--no-such-flag")
        doc = assert_failed(r, command, 2, "input")
        assert "--no-such-flag" in doc["error"]["message"] and "--help" in doc["error"]["hint"]
        assert r.err.startswith("neuronctl: error: no such option: --no-such-flag\n")
    doc = assert_failed(cli("doctor", "--timeout", "soon", "--json"), "doctor", 2, "input")
    assert "'soon' is not a valid float" in doc["error"]["message"]


def test_text_mode_is_unchanged(cli):
    r = cli("releases", "show", "9.9")
    assert r.code == 2 and r.out == "" and r.err.startswith("neuronctl: error: unknown Neuron")
    assert cli("frobnicate", "--json").out == ""  # no command: nothing to name


@pytest.mark.parametrize(("raised", "code", "kind"), [
    (KeyboardInterrupt(), 130, "interrupted"),
    (TerminateSignal(), 143, "terminated"),
    (RuntimeError("kaput"), 1, "internal"),
    (FaultError("cannot reach https://bob:hunter2@mirror.example/simple",
                hint="it answered to Authorization: Bearer sekrit42"), 1, "fault"),
])
def test_interrupts_internal_errors_and_secrets(cli, monkeypatch, raised, code, kind):
    import neuronctl.release.manifest as manifest

    def stop(*_a: object, **_k: object) -> None:
        raise raised

    monkeypatch.setattr(manifest, "load_bundled_manifest", stop)
    r = cli("releases", "--json")
    doc = assert_failed(r, "releases", code, kind)
    assert_error_line(r, doc)
    assert "hunter2" not in r.out + r.err and "sekrit42" not in r.out + r.err


@click.command()
@click.option("--json", "as_json", is_flag=True)
@click.option("--then", type=click.Choice(["raise", "return"]))
def half_done(as_json: bool, then: str) -> int:
    emit_json({"steps_done": 2})
    if then == "raise":
        raise FaultError("the disk went away after step 2")
    return 1


@click.command()
@click.option("--json", "as_json", is_flag=True)
def says_nothing(as_json: bool) -> int:
    return 1


def test_a_document_emitted_before_a_failure_carries_the_error(cli, monkeypatch):
    """A command that emitted and then raised, or returned a failing code: still one document,
    its fields and the error together."""
    monkeypatch.setitem(COMMANDS, "half-done", (__name__, "half_done", "test"))
    monkeypatch.setitem(COMMANDS, "says-nothing", (__name__, "says_nothing", "test"))
    r = cli("half-done", "--json", "--then", "raise")
    doc = assert_failed(r, "half-done", 1, "fault")
    assert doc["steps_done"] == 2 and doc["error"]["message"] == "the disk went away after step 2"
    doc = assert_failed(cli("half-done", "--json", "--then", "return"), "half-done", 1, "failed")
    assert doc["steps_done"] == 2 and doc["error"]["message"] == "neuronctl half-done failed (exit 1)"
    doc = assert_failed(cli("says-nothing", "--json"), "says-nothing", 1, "failed")
    assert list(doc) == ["schema", "command", "status", "error"] and doc["status"] == "failed"
    assert cli("says-nothing").out == ""
