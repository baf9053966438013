"""What the doctor's device.probe check says beside the probe's verdict: the facts the probe
recorded (autoload, the PrivateUse1 name, torch.accelerator) as details, and the fix for each way
the Neuron backend fails, following AWS's "torch.neuron and torch.accelerator" reference and
PyTorch's backend autoload page (docs/doctor.md names each)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.fixes import install_fix, shell_join, uninstall_fix

if TYPE_CHECKING:  # the device probe's module loads only where the probe runs (level 2 on)
    from neuronctl.probes.device import ProbeReport

MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
"""An extension name that is also a module path: only such a name goes into an import command."""


def _yes(value: bool | None) -> str:
    return "unknown" if value is None else "yes" if value else "no"


def probe_details(report: ProbeReport) -> tuple[str, ...]:
    """Each tier, then what the backend tier recorded, then the warnings."""
    lines = [f"{t.tier}: {t.status} ({t.detail}, {t.ms:g} ms)" for t in report.tiers]
    facts = report.facts
    if facts.privateuse1 is not None:
        autoload = "unset" if facts.autoload is None else repr(facts.autoload)
        lines.append(f"TORCH_DEVICE_BACKEND_AUTOLOAD {autoload}; `import torch` alone created "
                     f"torch.neuron: {_yes(facts.autoloaded)}; PrivateUse1 backend: "
                     f"{facts.privateuse1}; torch.accelerator: {facts.accelerator or 'none'}; "
                     f"torch-neuronx: {facts.torch_neuronx or 'not installed'}")
    if facts.fallback_execution is not None:
        lines.append(f"TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION={facts.fallback_execution} in the "
                     "environment (the probe ran with 1)")
    lines += [f"warning: {w}" for w in report.warnings]
    return tuple(lines)


def probe_fix(f: Facts, report: ProbeReport) -> str | None:
    """The command that goes after the probe's failure, where one does."""
    failed, facts = report.failed_tier, report.facts
    if failed is None:
        return None
    python = f.python
    if failed.tier == "import" and facts.extension is not None:
        # PyTorch's autoload page: TORCH_DEVICE_BACKEND_AUTOLOAD=0 keeps torch importable, and
        # importing the extension then shows its own error.
        if not MODULE.fullmatch(facts.extension):
            return shell_join(["env", "TORCH_DEVICE_BACKEND_AUTOLOAD=0", python, "-c", "import torch"])
        return shell_join(["env", "TORCH_DEVICE_BACKEND_AUTOLOAD=0", python, "-c",
                           f"import torch, {facts.extension}"])
    if failed.tier == "backend":
        if facts.privateuse1 not in (None, "neuron", "privateuseone"):
            # another backend took PrivateUse1 first: AWS's torch_neuronx then leaves it alone
            return uninstall_fix(f, list(facts.competing)) if facts.competing else None
        if facts.torch_neuronx is not None or f.device == "neuron":
            return install_fix(f)
    if failed.tier == "device_count" and report.device == "neuron":
        return "neuron-ls"  # AWS's first check for "Neuron device not found"
    return None
