"""Issue 22, second hostile pass: nothing from outside acts on the terminal (item 6), the GitHub
and JUnit renderings hold whatever a check's text holds (items 13, 14), and a reader that
closes the pipe early never fails the doctor (item 24). Real CLI runs on fixture sysroots,
manifests and locks; each test fails on the code before these fixes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.pty_session import on_pty
from support.sysroots import build_host, write

from neuronctl.cli.doctor_report import render_github, render_junit, render_markdown_summary
from neuronctl.ops.doctor.report import DoctorReport
from neuronctl.ops.doctor.runner import CheckResult

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_output_terminal.py)

REPO = Path(__file__).resolve().parents[2]
NEURONCTL = REPO / ".venv" / "bin" / "neuronctl"
# OSC 52 (write the clipboard), clear the screen, home the cursor, a colour, CR and backspace,
# a bidi override, line separator, C1 CSI; and rich markup that must print as it is.
EVIL = ("\x1b]52;c;SGVsbG8=\x07\x1b[2J\x1b[H\x1b[31mRED\x1b[0m\r\x08\u202e\u2028\x9b2J"
        "[red]rm[/red][link=http://evil.example]x[/link]")
ACTING = ["\x1b", "\x07", "\r", "\x08", "\u202e", "\u2028", "\x9b"]


def acts_on_a_terminal(text: str) -> list[str]:
    return [ch for ch in ACTING if ch in text]


@pytest.fixture
def evil_host(tmp_path) -> Path:
    root = build_host(tmp_path / "host", "trn2")
    write(root, "/sys/module/neuron/version", f"2.31{EVIL}\n")
    write(root, "/sys/class/dmi/id/product_name", f"trn2.48xlarge{EVIL}\n")
    return root


@pytest.mark.parametrize("flags", [["doctor"], ["-v", "doctor"], ["doctor", "--format", "github"],
                                   ["detect"], ["doctor", "--format", "junit"]])
def test_sysroot_values_print_without_their_escapes(cli, evil_host, flags):
    r = cli(*flags, "--sysroot", str(evil_host), *(["--no-device-probe"] if "doctor" in flags else []))
    assert r.code in (0, 1), r.err
    assert "RED" in r.out  # the value is shown, made harmless
    assert not acts_on_a_terminal(r.out + r.err), (r.out + r.err)[:2000]
    if "junit" not in flags:  # markup is text: shown as it is, never a link or a colour
        assert "[red]rm[/red]" in r.out or "\\[red\\]rm" in r.out


def test_text_and_junit_files_from_a_hostile_sysroot(cli, evil_host, tmp_path):
    for fmt, name in (("text", "report.txt"), ("junit", "report.xml")):
        out = tmp_path / name
        r = cli("doctor", "--sysroot", str(evil_host), "--no-device-probe", "--format", fmt, "-o", str(out))
        assert r.code in (0, 1), r.err
        text = out.read_text()
        assert "RED" in text and not acts_on_a_terminal(text)
    ET.parse(tmp_path / "report.xml")


def test_manifest_status_and_notes_print_without_their_escapes(cli, tmp_path):
    data = json.loads((REPO / "neuronctl" / "data" / "releases.json").read_text())
    release = data["releases"][0]
    release["status"] = f"beta{EVIL}"
    release["notes"] = [f"note{EVIL}"]
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps(data))
    # Data text is one printable line: escapes are refused where the manifest is read, in one
    # safe line naming the field (none of them reaches the terminal).
    for args in (["releases"], ["releases", "show", release["version"]]):
        r = cli("--manifest", str(manifest), *args)
        assert r.code == 2 and "releases[0].status: expected one line of printable text" in r.err
        assert not acts_on_a_terminal(r.out + r.err) and len(r.err.splitlines()) == 1, r.err
    # Printable markup is data too: printed as it is, never interpreted.
    release["status"] = "beta[red]rm[/red]"
    release["notes"] = ["note [red]rm[/red][link=http://evil.example]x[/link]"]
    manifest.write_text(json.dumps(data))
    for args in (["releases"], ["releases", "show", release["version"]]):
        r = cli("--manifest", str(manifest), *args)
        assert r.code == 0, r.err
        assert "[red]rm[/red]" in r.out and not acts_on_a_terminal(r.out + r.err), r.out[:3000]


@pytest.mark.parametrize("args", [
    ["--config", f"/nope/{EVIL}.toml", "doctor"],
    ["--manifest", f"/nope/{EVIL}.json", "releases"],
    ["doctor", "--python", f"/nope/{EVIL}"],
    ["cost", "--tokens", f"1\nneuronctl: all good{EVIL}"],
    ["doctor", "--only", f"x{EVIL}"],
])
def test_error_lines_are_one_safe_line(cli, args):
    r = cli(*args)
    assert r.code == 2, r.err
    assert not acts_on_a_terminal(r.err + r.out), r.err
    assert "\nneuronctl: all good" not in r.err  # a value never starts a line of its own
    assert "Traceback" not in r.err


def test_a_lock_url_cannot_rewrite_the_install_plan(cli, uni, tmp_path):
    """The plan a user reviews before --yes: a lock's URL with cursor moves and a screen clear
    (refused at load, or printed harmless; never acted on)."""
    r = cli("lock", *uni.index_flags(), "--python", "3.12")
    assert r.code == 0, r.err
    lock = Path("pylock.toml")
    text = lock.read_text()
    at = text.index('url = "http://') + len('url = "')
    lock.write_text(text[:at] + "http://127.0.0.1:9/\\u001b[1A\\u001b[2K\\u001b]52;c;SGk=\\u0007x/" + text[at:])
    r = cli("install", "--lock", str(lock), "--venv", str(tmp_path / "env"), "--dry-run")
    assert not acts_on_a_terminal(r.out + r.err), (r.out + r.err)[-3000:]


def test_plan_lines_show_a_locks_values_harmless():
    """The plan's renderer, whatever reaches it (a URL, a name, a version or a reason from a
    lock or an environment): one line per change, nothing that moves the cursor."""
    from neuronctl.backend.plan import Change, Plan
    from neuronctl.cli.install_report import plan_lines
    from neuronctl.locked_file import LockedFile

    wanted = LockedFile(f"torch{EVIL}", f"2.9{EVIL}", "torch-2.9-py3-none-any.whl",
                    f"http://127.0.0.1:9/{EVIL}/torch.whl", "0" * 64, 1)
    plan = Plan((Change("install", f"torch{EVIL}", None, f"2.9{EVIL}", wanted),
                 Change("remove", f"numpy\x1b[1A\x1b[2K{EVIL}", f"1.0{EVIL}", None, why=f"not locked{EVIL}")))
    for color in (False, True):
        lines = plan_lines(plan, verbose=1, color=color)
        assert len(lines) == 2 and all("\n" not in ln for ln in lines)
        shown = "\n".join(lines)
        if color:  # the removal's red is ours; nothing else is an escape
            shown = shown.replace("\x1b[31m", "").replace("\x1b[0m", "")
        assert not acts_on_a_terminal(shown), shown


def test_the_env_dump_shows_a_variables_escapes_harmless(cli, monkeypatch):
    """A renderer that prints raw (the env dump's markdown) is covered by the stream itself."""
    monkeypatch.setenv("NEURON_CC_FLAGS", f"--model-type=transformer{EVIL}")
    r = cli("env")
    assert r.code == 0, r.err
    assert "--model-type=transformer" in r.out and not acts_on_a_terminal(r.out + r.err)


def test_prometheus_labels_hold_no_escape(cli, evil_host, tmp_path):
    out = tmp_path / "neuronctl.prom"
    r = cli("doctor", "--sysroot", str(evil_host), "--no-device-probe", "--format", "prometheus",
            "-o", str(out))
    assert r.code in (0, 1), r.err
    assert not acts_on_a_terminal(out.read_text())


def _on_a_pty(args: list[str]) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    ran = on_pty([sys.executable, "-m", "neuronctl", *args], env)
    return ran.code, ran.shown


def test_on_a_terminal_our_colours_show_and_the_datas_codes_do_not(evil_host):
    code, shown = _on_a_pty(["doctor", "--sysroot", str(evil_host), "--no-device-probe", "-v"])
    assert code in (0, 1), shown
    assert "\x1b[" in shown  # neuronctl's own colours, on a terminal
    for bad in ("\x1b]52", "\x1b[2J", "\x1b[H", "\x1b[31mRED", "\x07", "\u202e", "\x9b"):
        assert bad not in shown, bad
    code, shown = _on_a_pty(["--config", f"/nope/{EVIL}.toml", "doctor"])
    assert code == 2 and "\x1b[31" in shown  # the red "error:" is ours
    assert "\x1b]52" not in shown and "\x1b[2J" not in shown and "\x1b[31mRED" not in shown


def test_the_stream_backstop_passes_colours_only_on_a_terminal(tmp_path):
    """Whatever a renderer forgets, the CLI's stdout and stderr act on nothing but colour."""
    from neuronctl.cli.app import TerminalStream

    with open(tmp_path / "f", "w", encoding="utf-8") as fh:
        guarded = TerminalStream(fh)
        guarded.write(f"\x1b[31mours\x1b[0m{EVIL}\tand a tab\n")
    written = (tmp_path / "f").read_text()
    assert not acts_on_a_terminal(written) and "ours" in written and "\t" in written

    import io

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    TerminalStream(screen).write(f"\x1b[31m\x1b[1mours\x1b[0m \x1b[8mhidden \x1b[7mreversed {EVIL}")
    shown = screen.getvalue()
    assert shown.startswith("\x1b[31m\x1b[1mours\x1b[0m")  # click.style's codes pass on a terminal
    rest = shown.removeprefix("\x1b[31m\x1b[1mours\x1b[0m")
    assert "\x1b[8m" not in rest and "\x1b[7m" not in rest and "\x1b]52" not in rest
    assert "\x1b[2J" not in rest and "\x07" not in rest and "\r" not in rest


# Items 13 and 14: the GitHub and JUnit renderings on hostile check text.
HOSTILE = ("a\rb\nc%0A::error::forged\x00\x0b\x1b[2J\ud800\ufffe\uffff\x7f"
           "| x ![img](http://evil.example/t.png) [l](http://evil.example) <b>html</b> `code`")


@pytest.fixture
def hostile_report() -> DoctorReport:
    checks = tuple(CheckResult(f"hardware.{status}", "t", status, f"{status}: {HOSTILE}",  # type: ignore[arg-type]
                               f"fix `{HOSTILE}`", 1.0, (HOSTILE,))
                   for status in ("pass", "warn", "fail", "skip"))
    return DoctorReport(checks, strict=False, environment={})


def test_junit_is_well_formed_xml_whatever_the_checks_say(hostile_report):
    for strict in (False, True):
        report = DoctorReport(hostile_report.checks, strict=strict, environment={})
        text = render_junit(report)
        root = ET.fromstring(text.encode("utf-8"))
        assert root.tag == "testsuites"
        messages = [el.get("message", "") for el in root.iter() if el.get("message")]
        assert messages and all("forged" in m for m in messages)


def test_github_workflow_commands_cannot_start_a_command(hostile_report):
    lines = render_github(hostile_report).split("\n")
    commands = [ln for ln in lines if ln.startswith("::")]
    assert len(commands) == 2  # the warn and the fail: nothing forged on a line of its own
    assert all("\r" not in ln and "\x1b" not in ln and "\x00" not in ln for ln in lines)
    assert all(ln.startswith(("::error title=", "::warning title=")) for ln in commands)
    assert "%250A" in commands[0]  # a literal '%0A' stays text, not a newline


def test_step_summary_cells_hold_no_markup_and_no_line_breaks(hostile_report):
    summary = render_markdown_summary(hostile_report)
    rows = [ln for ln in summary.split("\n") if ln.startswith("| :")]
    assert len(rows) == 4 and "\r" not in summary and "\x1b" not in summary
    for row in rows:
        assert "](" not in row.replace("\\](", "").replace("\\]\\(", "") or "`" in row
        assert "<b>" not in row.split("`")[0]
        assert "\\!\\[img\\]" in row and "\\<b\\>" in row
        # the cell separators are the table's own: every '|' of the data is escaped
        assert row.count(" | ") == 3


# Item 24: a reader that closes early never fails the doctor.
def _verdict(args: list[str]) -> int:
    r = subprocess.run([str(NEURONCTL), *args, "--json"], capture_output=True, text=True,
                       timeout=120, check=False)
    return int(json.loads(r.stdout)["summary"]["exit_code"])


@pytest.mark.parametrize("read", [0, 64, 300])
def test_doctor_into_a_pipe_closed_early_exits_with_its_verdict(tmp_path, read):
    import fcntl

    root = build_host(tmp_path / "host", "trn2")
    args = ["doctor", "--sysroot", str(root), "--no-device-probe", "-v"]
    expected = _verdict(args)
    env = dict(os.environ, COLUMNS="200")
    codes, errors = [], []
    for _ in range(4):
        proc = subprocess.Popen([str(NEURONCTL), *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env)
        assert proc.stdout is not None and proc.stderr is not None
        fcntl.fcntl(proc.stdout.fileno(), 1031, 4096)  # F_SETPIPE_SZ: the report overflows it
        if read:
            proc.stdout.read(read)
        proc.stdout.close()  # as `head` does once it has its lines
        errors.append(proc.stderr.read().decode())
        codes.append(proc.wait(timeout=120))
    assert codes == [expected] * 4, (codes, errors)
    assert not any("Traceback" in e or "Broken pipe" in e or "Exception" in e for e in errors), errors


def test_json_into_a_closed_pipe_keeps_the_exit_code(tmp_path):
    import fcntl

    root = build_host(tmp_path / "host", "trn2")
    args = ["doctor", "--sysroot", str(root), "--no-device-probe"]
    expected = _verdict(args)
    proc = subprocess.Popen([str(NEURONCTL), *args, "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    fcntl.fcntl(proc.stdout.fileno(), 1031, 4096)
    proc.stdout.close()
    assert proc.wait(timeout=120) == expected
    assert proc.stderr.read() == b""
