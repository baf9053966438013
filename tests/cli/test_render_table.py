"""One output contract (issue 24): every result goes out through the printer, by one render table
((outcome type, format) -> renderer), in one JSON envelope that no payload can shadow."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

from neuronctl.cli.output import ENVELOPE_KEYS, JsonError, envelope
from neuronctl.cli.printer import Printer, colour_wanted
from neuronctl.cli.render import FILE_RENDERERS, FILE_WRITERS, RENDERERS, renderer, write_file
from neuronctl.errors import NeuronctlError

ROOT = Path(__file__).resolve().parents[2]


def _resolve(dotted: str) -> type:
    module, _, name = dotted.rpartition(".")
    found = getattr(importlib.import_module(module), name)
    assert isinstance(found, type), dotted
    return found


@pytest.mark.parametrize(("kind", "fmt"), sorted(RENDERERS))
def test_every_entry_names_a_real_type_and_renderer(kind, fmt):
    found = renderer(_resolve(kind), fmt)
    assert callable(found)


def test_an_unregistered_outcome_or_format_is_refused():
    with pytest.raises(LookupError, match=r"no renderer for builtins\.int"):
        renderer(int, "text")
    with pytest.raises(LookupError, match="'yaml'"):
        renderer(_resolve("neuronctl.ops.cost.CostOutcome"), "yaml")


@pytest.mark.parametrize(("kind", "fmt"), sorted({**FILE_RENDERERS, **FILE_WRITERS}))
def test_every_file_entry_names_a_real_type_and_function(kind, fmt):
    table = FILE_WRITERS if (kind, fmt) in FILE_WRITERS else FILE_RENDERERS
    module, _, name = table[(kind, fmt)].partition(":")
    _resolve(kind)
    assert callable(getattr(importlib.import_module(module), name))


def test_an_outcome_without_a_file_format_writes_nothing(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(LookupError, match=r"no file renderer for builtins\.int in format 'text'"):
        write_file(3, "text", target)
    assert not target.exists()


def test_a_file_is_written_whole_and_not_executable(tmp_path):
    from neuronctl.cli.setup_report import DockerfileView

    target = tmp_path / "Dockerfile"
    write_file(DockerfileView("2.29", "FROM scratch\n", target), "text", target)
    assert target.read_text() == "FROM scratch\n" and target.stat().st_mode & 0o777 == 0o644
    assert list(tmp_path.iterdir()) == [target]  # no temp file left beside it


def test_no_command_module_writes_to_a_stream_or_renders_a_file_itself():
    """What a command writes goes through its printer (echo, emit, write_file): no click.echo,
    no print(), no sys.stdout, no per-command table of file renderers."""
    for path in sorted((ROOT / "neuronctl" / "cli").glob("cmd_*.py")):
        text = path.read_text()
        assert not re.search(r"click\.echo\(|(?<![.\w])print\(|sys\.std(out|err)\.write", text), \
            path.name
        assert not re.search(r"render_(json|junit|github|markdown|text|plain|sh)\b", text), path.name


def test_renderers_write_through_the_printer_and_leave_its_settings_alone():
    """A renderer writes through the printer it is handed (-q, colour and stream are the
    printer's) and never changes what the printer was told (JSON mode is the command's)."""
    cli = ROOT / "neuronctl" / "cli"
    for path in sorted([*cli.glob("*_report.py"), *cli.glob("*_render.py")]):
        if path.name.startswith("install_"):
            continue
        text = path.read_text()
        assert not re.search(r"click\.echo\(|(?<![.\w])print\(|sys\.std(out|err)\.write", text), \
            path.name
        assert not re.search(r"printer\.(json_wanted|quiet|verbose|no_color|holds_json)\s*=[^=]",
                             text), path.name


def test_no_command_module_prints_a_result_itself():
    """cmd_*.py parse flags and run operations; what they print goes through printer.emit (only
    option callbacks and the one-line warnings and progress beside a result stay there)."""
    for path in sorted((ROOT / "neuronctl" / "cli").glob("cmd_*.py")):
        text = path.read_text()
        assert "emit_json(" not in text, path.name
        assert not re.search(r"^def (_?print\w*|_render\w*|_release_\w+|_sources_table)\(", text,
                             re.M), path.name
        assert ".print(Text(" not in text, path.name


def test_the_envelope_orders_its_keys_and_cannot_be_shadowed():
    doc = envelope({"release": {"version": "2.29"}}, "releases show")
    assert list(doc) == ["schema", "command", "status", "release"] and doc["status"] == "ok"
    failed = envelope({"steps": 2}, "setup", JsonError.of("failed", "step 3 failed"))
    assert list(failed) == ["schema", "command", "status", "steps", "error"]
    assert failed["status"] == "failed" and failed["error"]["message"] == "step 3 failed"
    for key in ENVELOPE_KEYS:
        with pytest.raises(NeuronctlError, match=f"envelope's key\\(s\\) {key}"):
            envelope({key: 1, "other": 2}, "doctor")


def test_a_shadowing_payload_is_an_error_in_the_command_not_a_document(capsys):
    with pytest.raises(NeuronctlError):
        Printer().json({"command": "not doctor"})
    assert capsys.readouterr().out == ""
    Printer().json({"checks": []})
    assert json.loads(capsys.readouterr().out) == {"schema": 1, "status": "ok", "checks": []}


class _Stream:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(("environ", "tty", "flag", "wanted"), [
    ({}, True, False, True),
    ({}, False, False, False),
    ({}, True, True, False),  # --no-color
    ({"NO_COLOR": "1"}, True, False, False),
    ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False, False),  # NO_COLOR wins
    ({"FORCE_COLOR": "1"}, False, False, True),
    ({"FORCE_COLOR": "1"}, True, True, False),  # the flag wins over the environment
    ({"TERM": "dumb"}, True, False, False),
    ({"TERM": "xterm-256color"}, True, False, True),
])
def test_colour_is_decided_by_one_rule(environ, tty, flag, wanted):
    assert colour_wanted(_Stream(tty), no_color=flag, environ=environ) is wanted


def test_colour_is_decided_in_the_printer_alone():
    """NO_COLOR, FORCE_COLOR, TERM and isatty are read for colour in cli/printer.py only."""
    for path in sorted((ROOT / "neuronctl" / "cli").glob("*.py")):
        if path.name in ("printer.py", "docs_gen.py"):
            continue
        text = path.read_text()
        assert not re.search(r"environ\.get\(\"(NO_COLOR|FORCE_COLOR|TERM)\"", text), path.name
        assert "allow_colour" not in text, path.name
