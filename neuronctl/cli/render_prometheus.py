"""`doctor --format prometheus`: a node_exporter textfile-collector file from a DoctorReport.

Written with prometheus_client (its exposition format, its escaping of label values, and its
atomic `write_to_textfile`: a temp file beside the target, then a rename), so a collector never
reads half a file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Gauge, Info, generate_latest, write_to_textfile

from neuronctl.cli.app import safe_chars
from neuronctl.errors import FaultError, InputError
from neuronctl.ops.doctor.report import DoctorReport
from neuronctl.ops.fleet.aggregate import fingerprint as document_fingerprint

if TYPE_CHECKING:
    from neuronctl.cli.doctor_report import DoctorView

STATUSES = ("pass", "warn", "fail", "skip")
PREFIX = "neuronctl_doctor"


def stack_fingerprint(report: DoctorReport) -> dict[str, str]:
    """The same fingerprint `fleet doctor` groups nodes by, from an in-process report."""
    return document_fingerprint({"environment": report.environment,
                                 "checks": [{"id": c.id, "status": c.status} for c in report.checks]})


def _label_name(key: str) -> str:
    name = re.sub(r"[^a-zA-Z0-9_]", "_", key)
    return name if re.match(r"[a-zA-Z_]", name) else "_" + name


def _registry(report: DoctorReport, fingerprint: dict[str, str], started: float,
              duration: float) -> CollectorRegistry:
    registry = CollectorRegistry()
    # severity: what the outcome asks of a scheduler (drain, fix, info): an alert on
    # status="fail",severity="drain" is the node-out-of-service one.
    status = Gauge(f"{PREFIX}_check_status", "1 for the status each doctor check ended in, else 0; "
                   "severity is the outcome's (drain, fix, info).",
                   ["check", "status", "severity"], registry=registry)
    for check in report.checks:
        for name in STATUSES:
            status.labels(check=check.id, status=name, severity=check.severity).set(
                1 if check.status == name else 0)
    Gauge(f"{PREFIX}_failed", "1 when the doctor's verdict is a failure (its exit code 1).",
          registry=registry).set(1 if report.failed else 0)
    Gauge(f"{PREFIX}_drain", "1 when a failing or warning check has severity drain (hardware "
          "errors, no driver, devices missing).", registry=registry).set(
        1 if any(c.status in ("fail", "warn") and c.severity == "drain" for c in report.checks)
        else 0)
    stack = Info(f"{PREFIX}_stack", "The Neuron stack fingerprint fleet doctor groups nodes by.",
                 registry=registry)
    # Label values come from the sysroot and the interpreter: prometheus_client escapes '\\',
    # '"' and newlines; the rest of what a terminal or a log viewer acts on goes here.
    stack.info({_label_name(k): safe_chars(str(v)) for k, v in sorted(fingerprint.items())})
    Gauge(f"{PREFIX}_last_run_timestamp_seconds", "When the doctor run started (Unix time).",
          registry=registry).set(started)
    Gauge(f"{PREFIX}_duration_seconds", "How long the doctor run took.",
          registry=registry).set(duration)
    return registry


def render_prometheus(report: DoctorReport, fingerprint: dict[str, str], started: float,
                      duration: float) -> str:
    return generate_latest(_registry(report, fingerprint, started, duration)).decode("utf-8")


def write_prometheus(path: Path, report: DoctorReport, fingerprint: dict[str, str],
                     started: float, duration: float) -> None:
    """Atomically (temp file + rename in the same directory), as the textfile collector needs."""
    if path.suffix != ".prom":
        raise InputError(f"{path}: the textfile collector reads only *.prom files")
    try:
        write_to_textfile(str(path), _registry(report, fingerprint, started, duration))
    except OSError as exc:
        raise FaultError(f"{path}: {exc.strerror or type(exc).__name__}; metrics not written") from exc


def write_view(view: DoctorView, path: Path) -> None:
    """The doctor's view as the textfile (cli/render.py's FILE_WRITERS: -o FILE.prom)."""
    report = view.report
    write_prometheus(path, report, stack_fingerprint(report), view.started, view.duration)
