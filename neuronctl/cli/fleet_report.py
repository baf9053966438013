"""`fleet doctor`'s report: text, JSON (per-node documents + drift), JUnit (a testcase per node),
markdown (for $GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any

from neuronctl.cli.output import to_json_text
from neuronctl.cli.terminal import terminal_text
from neuronctl.ops.fleet.aggregate import FleetReport, NodeResult, failed_check_ids, fingerprint

if TYPE_CHECKING:
    from neuronctl.cli.printer import Printer

SHOWN_NAMES = 20  # a text line names at most this many nodes; JSON always names them all
SHOWN_PACKAGES = 10  # a text line names at most this many differing packages; JSON all of them


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN_NAMES])
    more = len(names) - SHOWN_NAMES
    return shown + (f" (+{more} more)" if more > 0 else "")


def _facts(fp: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in fp.items())


def _packages(diff: dict[str, tuple[str, str]]) -> str:
    shown = ", ".join(f"{name} {b} -> {v}" for name, (b, v) in list(diff.items())[:SHOWN_PACKAGES])
    more = len(diff) - SHOWN_PACKAGES
    return shown + (f" (+{more} more)" if more > 0 else "")


def _drift(report: FleetReport, node: str) -> str:
    diff = report.differences.get(node, {})
    parts = [f"{k}: {b} -> {v}" for k, (b, v) in diff.items() if k != "failed_checks"]
    if report.packages.get(node):
        parts.append(f"packages: {_packages(report.packages[node])}")
    return "; ".join(parts)


def node_status(report: FleetReport, result: NodeResult) -> tuple[str, str]:
    """(pass|drift|fail|no-answer, one line saying why)."""
    if result.document is None:
        return "no-answer", terminal_text(result.error or "no answer")
    failed = failed_check_ids(result.document)
    diff = report.differences.get(result.node, {})
    drift = _drift(report, result.node)
    if result.node in report.failing:
        return "fail", "failing checks: " + (", ".join(failed) or "doctor verdict fail") + (
            f"; differs: {drift}" if drift else "")
    if diff:
        return "drift", "differs: " + (drift or "failed checks differ")
    return "pass", "matches the baseline"


def verdict_line(report: FleetReport) -> str:
    s = report.summary()
    word = "pass" if report.ok else "fail"
    return (f"{word}: {s['nodes']} nodes, {s['answered']} answered, {s['groups']} stack group(s), "
            f"{s['drifted']} differ from the baseline, {s['failing']} failing, "
            f"{s['not_answering']} not answering")


def render_text(report: FleetReport) -> str:
    lines: list[str] = []
    if report.groups:
        fp, names = report.groups[0]
        lines.append(f"baseline ({len(names)} node(s): {_names(names)}): {_facts(fp)}")
    for result in report.nodes:
        status, why = node_status(report, result)
        if status != "pass":
            lines.append(f"{status.upper():9} {result.node}: {why}")
    lines.append(verdict_line(report))
    return "\n".join(lines) + "\n"


def render_json_payload(report: FleetReport) -> dict[str, Any]:
    nodes = []
    for result in report.nodes:
        status, why = node_status(report, result)
        nodes.append({"node": result.node, "status": status, "detail": why,
                      "exit_code": result.exit_code,
                      "fingerprint": fingerprint(result.document) if result.document else None,
                      "doctor": result.document})
    return {"summary": report.summary(), "drift": report.drift_json(), "nodes": nodes}


def render_junit(report: FleetReport) -> str:
    s = report.summary()
    bad = sum(1 for r in report.nodes if node_status(report, r)[0] != "pass")
    suites = ET.Element("testsuites", name="neuronctl fleet doctor", tests=str(s["nodes"]),
                        failures=str(bad), errors="0", skipped="0")
    suite = ET.SubElement(suites, "testsuite", name="neuronctl.fleet", tests=str(s["nodes"]),
                          failures=str(bad), errors="0", skipped="0")
    for result in report.nodes:
        status, why = node_status(report, result)
        case = ET.SubElement(suite, "testcase", classname="neuronctl.fleet.node", name=result.node)
        if status == "pass":
            ET.SubElement(case, "system-out").text = why
        else:
            ET.SubElement(case, "failure", message=why, type=status).text = why
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _cell(text: str) -> str:
    """Text from a node as one GitHub-flavoured markdown table cell that renders as that text
    and nothing else: a code span (no links, images, HTML, emphasis or autolinks inside), its
    fence longer than any run of backticks in it, line breaks made spaces (a row is one line),
    and each `|` escaped, with the backslashes before it doubled (`\\|` would end the cell)."""
    flat = "".join(ch if ch.isprintable() else " " for ch in text)
    flat = re.sub(r"(\\*)\|", lambda m: m.group(1) * 2 + "\\|", flat)
    fence = "`" * (max((len(run) for run in re.findall("`+", flat)), default=0) + 1)
    pad = " " if flat.startswith(("`", " ")) or flat.endswith(("`", " ")) else ""
    return f"{fence}{pad}{flat}{pad}{fence}" if flat else ""


def render_markdown(report: FleetReport) -> str:
    icon = {"pass": ":white_check_mark:", "drift": ":warning:", "fail": ":x:",
            "no-answer": ":grey_question:"}
    rows = ["## neuronctl fleet doctor", "", f"**{verdict_line(report)}**", ""]
    if report.groups:
        rows += ["| baseline | value |", "| --- | --- |"]
        rows += [f"| {k} | {_cell(v)} |" for k, v in report.groups[0][0].items()]  # k: ours
        rows.append("")
    rows += ["| status | node | detail |", "| --- | --- | --- |"]
    for result in report.nodes:
        status, why = node_status(report, result)
        rows.append(f"| {icon[status]} {status} | {_cell(result.node)} | {_cell(why)} |")
    return "\n".join(rows) + "\n\n"


def json_file(report: FleetReport) -> str:
    return to_json_text(render_json_payload(report))


def print_text(report: FleetReport, printer: Printer) -> None:
    printer.echo(render_text(report), nl=False)


def print_json(report: FleetReport, printer: Printer) -> None:
    printer.json(render_json_payload(report),
                 failure=None if report.ok else f"fleet doctor: {verdict_line(report)}")


def print_junit(report: FleetReport, printer: Printer) -> None:
    printer.echo(render_junit(report), nl=False)


def print_markdown(report: FleetReport, printer: Printer) -> None:
    printer.echo(render_markdown(report), nl=False)
