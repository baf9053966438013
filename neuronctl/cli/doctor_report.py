"""The doctor's report and its renderings: text (rich), JSON, JUnit XML, GitHub workflow commands
(to stdout through the printer, registered in cli/render.py; as a file's text for -o FILE, in its
FILE_RENDERERS)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from neuronctl._version import __version__
from neuronctl.cli.common import echo_target
from neuronctl.cli.output import to_json_text
from neuronctl.cli.terminal import safe_chars, terminal_text
from neuronctl.ops.doctor.report import DoctorReport
from neuronctl.ops.doctor.runner import CheckResult

if TYPE_CHECKING:
    from neuronctl.cli.printer import Printer
    from neuronctl.ops.target_env import TargetPython
    from neuronctl.settings import Setting

STATUS_STYLES = {"pass": "green", "warn": "yellow", "fail": "red", "skip": "dim"}
DRAIN_NOTE = "severity: drain (take the node out of service; --slurm-drain does)"


def _drains(c: CheckResult) -> bool:
    return c.status in ("fail", "warn") and c.severity == "drain"


def json_payload(report: DoctorReport, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The doctor's JSON document; `extra`: what the command did beside the checks (the
    --slurm-drain outcome)."""
    return {"tool": {"name": "neuronctl", "version": __version__}, "summary": report.summary(),
            "checks": [c.to_json() for c in report.checks], "environment": report.environment,
            **(extra or {})}


def render_json(report: DoctorReport, extra: dict[str, Any] | None = None) -> str:
    return to_json_text(json_payload(report, extra))


def _line(text: str) -> str:
    """A check's text (a sysroot's, a manifest's, an interpreter's) as one safe line."""
    return terminal_text(text, None)


def render_plain(report: DoctorReport) -> str:
    """The text report without colour or layout, for a file (-o with --format text)."""
    lines = [f"{c.status.upper():4}  {c.id}: {_line(c.message)}"
             + (f"\n      fix: {_line(c.fix)}" if c.fix else "")
             + (f"\n      {DRAIN_NOTE}" if _drains(c) else "") for c in report.checks]
    return "\n".join([*lines, report.verdict_line()]) + "\n"


def render_junit(report: DoctorReport) -> str:
    import xml.etree.ElementTree as ET  # only --format junit writes XML

    # ElementTree escapes markup but writes any character it is given: a NUL, an ESC or a lone
    # surrogate from a check's text makes a file no XML parser reads. safe_chars leaves only
    # newlines and printable characters, all of them allowed in XML 1.0.
    def xml(text: str) -> str:
        return safe_chars(text, lines=True)

    s = report.summary()
    suites = ET.Element("testsuites", name="neuronctl doctor", tests=str(s["total"]),
                        failures=str(s["failed"] + (s["warnings"] if report.strict else 0)),
                        errors="0", skipped=str(s["skipped"]),
                        time=f"{s['duration_ms'] / 1000:.3f}")
    suite = ET.SubElement(suites, "testsuite", name="neuronctl.doctor", tests=str(s["total"]),
                          failures=suites.get("failures", "0"), errors="0",
                          skipped=str(s["skipped"]), time=f"{s['duration_ms'] / 1000:.3f}")
    for c in report.checks:
        case = ET.SubElement(suite, "testcase", classname=f"neuronctl.doctor.{c.id.split('.')[0]}",
                             name=c.id, time=f"{c.duration_ms / 1000:.3f}")
        # The outcome's severity (drain, fix, info) as a testcase property (JUnit's properties
        # element, read by Jenkins, GitLab and the junit-xml tools).
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="severity", value=c.severity)
        body = xml(c.message + (f"\nfix: {c.fix}" if c.fix else "") + "".join(
            f"\n  {d}" for d in c.details))
        if c.status == "fail" or (c.status == "warn" and report.strict):
            el = ET.SubElement(case, "failure", message=xml(c.message), type=c.status)
            el.text = body
        elif c.status == "skip":
            ET.SubElement(case, "skipped", message=xml(c.message))
        else:
            out = ET.SubElement(case, "system-out")
            out.text = ("WARNING: " if c.status == "warn" else "") + body
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _escape_data(text: str) -> str:
    """A workflow command's message, by GitHub's rules (actions/toolkit's escapeData): '%', CR
    and LF percent-encoded, so no value ends the command or starts another (::add-mask::,
    ::stop-commands::) on a line of its own."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    """A property's value (title=...): also ':' and ',', which end a property (escapeProperty)."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(report: DoctorReport) -> str:
    lines = []
    for c in report.checks:
        if c.status not in ("fail", "warn"):
            continue
        level = "error" if c.status == "fail" or report.strict else "warning"
        # Each text is one safe line first (GitHub's log shows ANSI colours and acts on none of
        # the rest); the one newline kept is ours, between the message and its fix.
        message = _line(c.message) + (f"\nfix: {_line(c.fix)}" if c.fix else "")
        lines.append(f"::{level} title={_escape_property(f'neuronctl {c.id}')}::"
                     f"{_escape_data(message)}")
    lines.append(f"neuronctl doctor: {report.verdict_line()}")
    return "\n".join(lines) + "\n"


# Markdown that would make a link, an image, HTML, emphasis, a heading or code of a check's text,
# or end its table cell. CommonMark lets any ASCII punctuation be backslash-escaped.
_MARKDOWN = re.compile(r"([\\`*_\[\]<>!|~#&{}()])")


def _md_text(text: str) -> str:
    return _MARKDOWN.sub(r"\\\1", _line(text))


def _md_code(text: str) -> str:
    """`text` as a code span: fenced with one backtick more than its longest run (backslashes
    do nothing inside code), '|' still escaped, as GitHub's tables need even there."""
    line = _line(text).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", line)), default=0) + 1)
    pad = " " if line.startswith("`") or line.endswith("`") else ""
    return f"{fence}{pad}{line}{pad}{fence}"


def render_markdown_summary(report: DoctorReport) -> str:
    """The step summary: every check's text escaped, so none can add a link, an image, HTML
    or a line (a CR ended a table row: GitHub reads it as a line break)."""
    icon = {"pass": ":white_check_mark:", "warn": ":warning:", "fail": ":x:", "skip": ":fast_forward:"}
    rows = ["## neuronctl doctor", "", f"**{report.verdict_line()}**", "",
            "| status | check | message | fix |", "| --- | --- | --- | --- |"]
    for c in report.checks:
        cells = [icon[c.status], _md_code(c.id), _md_text(c.message), _md_code(c.fix) if c.fix else ""]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n\n"


def print_text(report: DoctorReport, console: Any, *, verbose: int, quiet: bool) -> None:
    from rich.text import Text

    from neuronctl.cli.output import fitting_table, print_line

    # Data goes in as Text, never as markup: a PCI address such as 0000:cd:00.0 or a message with
    # [brackets] prints as it is. A fix is a command to paste: never in a cell (it wrapped over
    # rows with the table's borders in it), but on its own unwrapped line after the table; one
    # line per distinct command, however many checks it fixes.
    fixes: dict[str, list[str]] = {}
    for c in report.checks:
        if c.fix and c.status in ("fail", "warn"):
            fixes.setdefault(c.fix, []).append(c.id)
    numbers = {fix: n for n, fix in enumerate(fixes, 1)}
    if not quiet:
        rows = []
        for c in report.checks:
            # The console makes every segment safe (cli/app.py); Text keeps [markup] as it is.
            text = Text(c.message)
            if c.fix in numbers and c.status in ("fail", "warn"):
                text.append(f" (fix {numbers[c.fix]} below)", style="bold")
            if _drains(c):
                text.append(f"\n{DRAIN_NOTE}", style="bold red")
            if verbose:
                for d in c.details:
                    text.append(f"\n  {d}", style="dim")
            rows.append([Text(c.status.upper(), style=STATUS_STYLES[c.status]), Text(c.id), text])
        table = fitting_table(console, ["status", "check", "result"], rows, wrap=("result",),
                              show_header=True, header_style="bold", expand=False)
        if table is not None:
            console.print(table)
        else:  # off a terminal, or a word (a URL, a path) wider than it: the line form
            for row in rows:
                status = row[0].plain
                print_line(console, f"{status:<6}{row[1].plain}: {row[2].plain}",
                           lead=len(status), lead_style=str(row[0].style))
        for fix, ids in fixes.items():
            console.print(Text(f"# {numbers[fix]}: {', '.join(ids)}", style="dim"), soft_wrap=True)
            console.print(Text("fix: ", style="bold").append(fix), soft_wrap=True)
    colour = {"pass": "green", "warn": "yellow", "fail": "red"}[report.verdict]
    console.print(Text(report.verdict_line(), style=f"bold {colour}"), soft_wrap=True)
    # Information, never a warning: stale release data, a release's unpublished pins.
    notes = report.environment.get("notes")
    for note in notes if isinstance(notes, list) and not quiet else ():
        console.print(Text(f"note: {note}", style="dim"), soft_wrap=True)


class DoctorView(Struct, frozen=True):
    """`neuronctl doctor`'s result: the report, the target it checked, what --slurm-drain
    did (None without it), and the release setting (None: not resolved from the settings)."""

    report: DoctorReport
    target: TargetPython
    drained: Mapping[str, str] | None = None
    release: Setting[str | None] | None = None
    started: float = 0.0
    """When the run started (Unix time) and how long it took, in seconds (the prometheus file's)."""
    duration: float = 0.0

    @property
    def release_source(self) -> str:
        """Where the release came from: "--release", "NEURONCTL_RELEASE", the config file, or
        "default" (the doctor chose it; the report's `reason` says how)."""
        given = self.release is not None and self.release.given
        return self.release.source.label if self.release is not None and given else "default"

    @property
    def extra(self) -> dict[str, Any]:
        """The JSON document's keys beside the report's own."""
        extra: dict[str, Any] = {"target": self.target.to_json(),
                                 "release_source": self.release_source}
        if self.drained is not None:
            extra["slurm_drain"] = dict(self.drained)
        return extra

    def release_line(self) -> str | None:
        """The text report's release header: "release 2.33.1 (from pyproject.toml)", or
        "(default: <why the doctor chose it>)"; None where no check needed the release."""
        chosen = self.report.environment.get("release")
        if not isinstance(chosen, Mapping):
            return None
        version = str(chosen.get("version"))
        if self.release is not None and self.release.given:
            return f"release {self.release.said(version)}"
        return f"release {version} (default: {chosen.get('reason')})"

    @property
    def failure(self) -> str | None:
        if self.drained is not None and self.drained["action"] == "error":
            return f"--slurm-drain: {self.drained['why']}"
        return self.report.verdict_line() if self.report.exit_code else None


def view_json(view: DoctorView, printer: Printer) -> None:
    printer.json(json_payload(view.report, view.extra), failure=view.failure)


def print_view(view: DoctorView, printer: Printer) -> None:
    """The text report on stdout (also when the report in --format went to -o FILE)."""
    echo_target(view.target, printer)
    header = view.release_line()
    if header is not None and not printer.quiet:
        printer.say(header)
    print_text(view.report, printer.console(), verbose=printer.verbose, quiet=printer.quiet)
    print_drain(view, printer)


def print_junit(view: DoctorView, printer: Printer) -> None:
    printer.echo(render_junit(view.report), nl=False)
    print_drain(view, printer)


def print_github(view: DoctorView, printer: Printer) -> None:
    printer.echo(render_github(view.report), nl=False)
    print_drain(view, printer)


def plain_file(view: DoctorView) -> str:
    return render_plain(view.report)


def json_file(view: DoctorView) -> str:
    return render_json(view.report, view.extra)


def junit_file(view: DoctorView) -> str:
    return render_junit(view.report)


def github_file(view: DoctorView) -> str:
    return render_github(view.report)


def print_drain(view: DoctorView, printer: Printer) -> None:
    """What --slurm-drain did to this node, after the report (an error on stderr)."""
    drained = view.drained
    if drained is None:
        return
    said = {"drain": "drained", "resume": "resumed", "none": "left as it is",
            "error": "not changed"}[drained["action"]]
    line = terminal_text(f"slurm: node {drained['node']} {said}: {drained['why']}", None)
    if drained["action"] == "error":
        printer.echo(f"{printer.paint('neuronctl: error:', 'red', err=True)} {line}", err=True)
    else:
        printer.echo(line)
