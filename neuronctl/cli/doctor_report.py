"""The doctor's report and its renderings: text (rich), JSON, JUnit XML, GitHub workflow commands."""

from __future__ import annotations

from typing import Any

from neuronctl._version import __version__
from neuronctl.cli.output import to_json_text
from neuronctl.ops.doctor.report import DoctorReport

STATUS_STYLES = {"pass": "green", "warn": "yellow", "fail": "red", "skip": "dim"}


def json_payload(report: DoctorReport, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The doctor's JSON document; `extra`: what the command did beside the checks (the
    --slurm-drain outcome)."""
    return {"tool": {"name": "neuronctl", "version": __version__}, "summary": report.summary(),
            "checks": [c.to_json() for c in report.checks], "environment": report.environment,
            **(extra or {})}


def render_json(report: DoctorReport, extra: dict[str, Any] | None = None) -> str:
    return to_json_text(json_payload(report, extra))


def render_plain(report: DoctorReport) -> str:
    """The text report without colour or layout, for a file (-o with --format text)."""
    lines = [f"{c.status.upper():4}  {c.id}: {c.message}" + (f"\n      fix: {c.fix}" if c.fix else "")
             for c in report.checks]
    return "\n".join([*lines, report.verdict_line()]) + "\n"


def render_junit(report: DoctorReport) -> str:
    import xml.etree.ElementTree as ET  # only --format junit writes XML

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
        body = c.message + (f"\nfix: {c.fix}" if c.fix else "") + "".join(
            f"\n  {d}" for d in c.details)
        if c.status == "fail" or (c.status == "warn" and report.strict):
            el = ET.SubElement(case, "failure", message=c.message, type=c.status)
            el.text = body
        elif c.status == "skip":
            ET.SubElement(case, "skipped", message=c.message)
        else:
            out = ET.SubElement(case, "system-out")
            out.text = ("WARNING: " if c.status == "warn" else "") + body
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(report: DoctorReport) -> str:
    lines = []
    for c in report.checks:
        if c.status not in ("fail", "warn"):
            continue
        level = "error" if c.status == "fail" or report.strict else "warning"
        message = c.message + (f"\nfix: {c.fix}" if c.fix else "")
        lines.append(f"::{level} title={_escape_property(f'neuronctl {c.id}')}::"
                     f"{_escape_data(message)}")
    lines.append(f"neuronctl doctor: {report.verdict_line()}")
    return "\n".join(lines) + "\n"


def render_markdown_summary(report: DoctorReport) -> str:
    icon = {"pass": ":white_check_mark:", "warn": ":warning:", "fail": ":x:", "skip": ":fast_forward:"}
    rows = ["## neuronctl doctor", "", f"**{report.verdict_line()}**", "",
            "| status | check | message | fix |", "| --- | --- | --- | --- |"]
    for c in report.checks:
        cells = [icon[c.status], f"`{c.id}`", c.message, f"`{c.fix}`" if c.fix else ""]
        rows.append("| " + " | ".join(x.replace("|", "\\|").replace("\n", " ") for x in cells) + " |")
    return "\n".join(rows) + "\n\n"


def print_text(report: DoctorReport, console: Any, *, verbose: int, quiet: bool) -> None:
    from rich.table import Table
    from rich.text import Text

    # Data goes in as Text, never as markup: a PCI address such as 0000:cd:00.0 or a message with
    # [brackets] prints as it is.
    if not quiet:
        table = Table(show_header=True, header_style="bold", expand=False)
        table.add_column("status")
        table.add_column("check")
        table.add_column("result", overflow="fold")
        for c in report.checks:
            text = Text(c.message)
            if c.fix and c.status in ("fail", "warn"):
                text.append("\nfix: ", style="bold").append(c.fix)
            if verbose:
                for d in c.details:
                    text.append(f"\n  {d}", style="dim")
            table.add_row(Text(c.status.upper(), style=STATUS_STYLES[c.status]), Text(c.id), text)
        console.print(table)
    colour = {"pass": "green", "warn": "yellow", "fail": "red"}[report.verdict]
    console.print(Text(report.verdict_line(), style=f"bold {colour}"))
