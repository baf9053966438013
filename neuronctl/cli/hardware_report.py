"""Renderers of what runs on this machine's hardware: detect, probe, smoke and bundle (text and
JSON; registered in cli/render.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import Struct

from neuronctl.cli.common import echo_target
from neuronctl.cli.output import JsonError, outcome_words, to_json_text
from neuronctl.devices import verdict

if TYPE_CHECKING:
    from neuronctl.cli.printer import Printer
    from neuronctl.ops.bundle import BundleOutcome
    from neuronctl.ops.smoke import SmokeOutcome
    from neuronctl.ops.target_env import TargetPython
    from neuronctl.probes.device import ProbeReport
    from neuronctl.probes.hardware import HardwareReport
    from neuronctl.probes.smoke import SmokeReport


def print_hardware(report: HardwareReport, printer: Printer) -> None:
    from rich.text import Text

    # Every value is data (sysfs, neuron-ls, IMDS): Text, never markup or emoji codes. One
    # unwrapped line a value (soft_wrap), so a version or an instance name is never split.
    console = printer.console()
    rows: list[tuple[str, object]] = [
        ("chip", "none: no Neuron hardware found" if not report.present
         else f"{report.chip} ({report.chip_name})" if report.chip else "unknown"),
        ("devices", report.device_count or None),
        ("NeuronCores", (report.cores_text() or "").removeprefix("NeuronCores: ") or None),
        ("logical NC config", report.logical_nc_config),
        ("instance type", f"{report.instance_type} ({report.instance_type_source})"
         if report.instance_type else None),
        ("driver", report.driver_version), ("runtime", report.runtime_version),
        ("tools", report.tools_version), ("neuron-ls", report.neuron_ls)]
    shown = [(key, str(value)) for key, value in rows if value is not None]
    width = max(len(key) for key, _ in shown)
    for key, value in shown:
        console.print(Text(f"{key:<{width}}  {value}"), soft_wrap=True)
    for e in report.evidence:
        console.print(Text(f"  evidence: {e.source}: {e.value}" + (f" -> {e.chip}" if e.chip else "")),
                      soft_wrap=True)
    for c in report.conflicts:
        console.print(Text("  conflict: ", style="yellow").append(c), soft_wrap=True)


def hardware_json(report: HardwareReport, printer: Printer) -> None:
    printer.json({"hardware": report.to_json()})


class ProbeView(Struct, frozen=True):
    """`neuronctl probe`'s result: the tiers, in the target it chose."""

    report: ProbeReport
    target: TargetPython


def print_probe(view: ProbeView, printer: Printer) -> None:
    from rich.markup import escape

    echo_target(view.target, printer)
    report, console = view.report, printer.console()
    style = {"pass": "green", "fail": "red", "skip": "dim"}
    for t in report.tiers:
        console.print(f"[{style[t.status]}]{t.status.upper():4}[/] {t.tier:<12} "
                      f"{escape(t.detail)} [dim]({t.ms:g} ms)[/]")
    word = _verdict_word(report.ok, report.device, report.requested)
    said = report.detail if report.ok else outcome_words(report.outcome, report.detail)
    console.print(f"{word}: {escape(said)}")


def _verdict_word(ok: bool, device: str | None, requested: str) -> str:
    """pass, warn or fail: a CPU run nobody asked for is a warning (its detail says it is a CPU
    run, which checks torch and the model, never a device), not a pass."""
    judged = verdict(ok, device)
    if judged == "device-ok" or (judged == "cpu-run" and requested == "cpu"):
        return "[green]pass[/]"
    return "[yellow]warn[/]" if judged == "cpu-run" else "[red]fail[/]"


def probe_json(view: ProbeView, printer: Printer) -> None:
    printer.json({"probe": view.report.to_json(), "target": view.target.to_json()})


class SmokeView(Struct, frozen=True):
    """`neuronctl smoke`'s result: the run, in the target it chose."""

    outcome: SmokeOutcome
    target: TargetPython

    @property
    def payload(self) -> dict[str, Any]:
        return {"smoke": self.outcome.to_json(), "target": self.target.to_json()}

    @property
    def failure(self) -> str | None:
        report = self.outcome.report
        return None if self.outcome.ok else f"smoke {report.outcome}: {report.detail}"


def smoke_json(view: SmokeView, printer: Printer) -> None:
    printer.json(view.payload, failure=view.failure)


def smoke_file(view: SmokeView) -> str:
    """The JSON report for -o FILE (`neuronctl cost --from FILE` reads it), failed or not."""
    failure = view.failure
    kind = "input" if view.outcome.bad_input else "failed"
    return to_json_text(view.payload, JsonError.of(kind, failure) if failure else None)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f} ms"


def _smoke_rows(report: SmokeReport) -> list[tuple[str, str]]:
    rows = [("first step", f"{_ms(report.first_step_ms)}"
             + (" (includes compilation)" if report.spec.compile else "")),
            ("steady step", f"median {_ms(report.median_ms)}, p90 {_ms(report.p90_ms)} "
                            f"over {len(report.step_ms)} step(s)")]
    if report.tokens_per_s is not None:
        rows.append(("throughput", f"{report.tokens_per_s:,.0f} tokens/s "
                                   f"({report.tokens_per_step:,} tokens per step)"))
    else:
        rows.append(("throughput", "unknown (the factory gave no tokens per step)"))
    peak = report.peak_memory_bytes
    rows.append(("peak memory", f"{peak / 2**20:,.1f} MiB" if peak is not None
                 else f"not reported by the {report.device} backend"))
    if report.fallback_execution is not None:
        rows.append(("compile", f"ran with TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=1 (yours: "
                                f"{report.fallback_execution}): a graph that fails to compile "
                                "fails the run instead of timing eager"))
    for c in report.comparisons:
        agrees = "match" if c.ok else "DIFFER"
        rows.append((f"vs CPU {c.what}", f"{agrees}: max abs error {c.max_abs:.3g}, max rel error "
                                         f"{c.max_rel:.3g} over {c.tensors} tensor(s) "
                                         f"({c.dtype}: rtol {c.rtol:g}, atol {c.atol:g})"))
    return rows


def _smoke_facts(report: SmokeReport) -> str:
    mode = "training step" if report.spec.train else "inference"
    parts: list[Any] = [report.spec.label, f"{mode} on {report.device or report.spec.device}"]
    if report.torch:
        parts.append(f"torch {report.torch}")
    if report.params is not None:
        parts.append(f"{report.params:,} parameters ({report.dtype})")
    return ", ".join(str(p) for p in parts)


def print_smoke(view: SmokeView, printer: Printer) -> None:
    """The run in text; nothing for bad input (the command's one-line error says it)."""
    from rich.markup import escape

    outcome = view.outcome
    if outcome.bad_input:
        return
    echo_target(view.target, printer)
    report, console = outcome.report, printer.console()
    if not printer.quiet:
        console.print(f"[bold]smoke[/]: {escape(_smoke_facts(report))}")
        if report.step_ms or report.comparisons:
            for label, text in _smoke_rows(report):
                console.print(f"  {label:<18} {escape(text)}")
    if outcome.ok:
        word = _verdict_word(True, report.device, report.spec.device)
        console.print(f"{word}: {escape(report.detail)}")
        return
    console.print(f"[red]fail[/]: {escape(outcome_words(report.outcome, report.detail))}")


class BundleView(Struct, frozen=True):
    """`neuronctl bundle`'s result: the archive, and the target it gathered."""

    outcome: BundleOutcome
    target: TargetPython


def bundle_json(view: BundleView, printer: Printer) -> None:
    printer.json({"bundle": view.outcome.to_json(), "target": view.target.to_json()})


def print_bundle(view: BundleView, printer: Printer) -> None:
    """The items and the archive's path; with -q the path alone."""
    from rich.text import Text

    from neuronctl.cli.output import print_table

    outcome = view.outcome
    if printer.quiet:
        printer.echo(str(outcome.path))
        return
    echo_target(view.target, printer)
    console = printer.console()
    styles = {"collected": "green", "partial": "yellow", "unavailable": "dim", "failed": "red"}
    # every value is data: Text, never markup
    print_table(console, ["file", "status", "reason / note"],
                [[Text(item.file), Text(item.status, style=styles.get(item.status, "")),
                  Text(item.reason or "")] for item in outcome.items], box=None, pad_edge=False)
    console.print(Text(f"wrote {outcome.path} ({outcome.size} bytes); attach it to the support "
                       "case. Secrets are masked; read index.json inside for what is there."))
