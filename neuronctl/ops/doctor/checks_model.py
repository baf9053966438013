"""The doctor's model.smoke check (level 3): the user's own model (config `model`) on the device,
checked against CPU, as `neuronctl smoke` runs it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.fixes import neuronctl_command
from neuronctl.ops.doctor.registry import check
from neuronctl.ops.doctor.runner import CheckOutcome

if TYPE_CHECKING:  # only a level-3 doctor with a model gets a report (probes.smoke: statistics)
    from neuronctl.probes.smoke import SmokeReport

NO_MODEL = ('no model configured: set [tool.neuronctl] model = "pkg.mod:make" (a function '
            "returning (model, example_inputs)) to run yours here")


def _details(report: SmokeReport) -> tuple[str, ...]:
    details = [f"{c.what}: max abs error {c.max_abs:.3g}, max rel error {c.max_rel:.3g}"
               + ("" if c.ok else f" ({c.problem or 'beyond tolerance'})")
               for c in report.comparisons]
    if report.first_step_ms is not None:
        details.append(f"first step {report.first_step_ms:,.1f} ms (compilation lands here)")
    if report.where:
        details.append(f"at {report.where}")
    return tuple(details)


@check("model.smoke", "Your model on the device", level=3, gathers=("smoke",))
def check_model(f: Facts) -> CheckOutcome:
    model = f.model
    if model is None:
        return CheckOutcome("skip", NO_MODEL)
    # One process at a time owns the NeuronCores: the model runs after the device probe, never
    # beside it, and only on a device the probe found working.
    if f.knows("probe"):
        probe = f.probe
        if not probe.ok:
            return CheckOutcome("skip", f"{model.spec} not run: the device probe did not pass "
                                   f"({probe.detail})")
    report = f.smoke
    label = f"{model.spec} ({model.origin})"
    if report.ok and report.device == "cpu" and f.device != "cpu":  # no device verdict
        return CheckOutcome("skip", f"{label} ran on cpu, not a Neuron device: a CPU run checks the "
                                    "model, not a device", None, _details(report))
    if report.ok:
        speed = f"median step {report.median_ms:,.2f} ms" if report.median_ms is not None else ""
        if report.tokens_per_s:
            speed += f", {report.tokens_per_s:,.0f} tokens/s"
        return CheckOutcome("pass", f"{label} ran on {report.device} and matches CPU"
                               + (f": {speed}" if speed else ""), None, _details(report))
    where = report.stage + (f" step {report.step}" if report.step else "") if report.stage else ""
    return CheckOutcome("fail", f"{label}: {report.outcome}" + (f" in {where}" if where else "")
                           + f": {report.detail}",
                   neuronctl_command(f, "smoke", "--model", model.spec, "--python", f.python,
                                     "--device", f.device),
                   _details(report))
