"""Doctor checks that apply the documented rules (neuronctl.release.rules) to this host: `host.os`
(the OS rules, os-release under --sysroot read with `distro`), `runtime.compat` (the existing
driver/runtime comparison plus AWS's driver/runtime/dkms rules) and `packages.lifecycle` (support
windows: Python, PyTorch lines, flavours and packages a release no longer supports on this
chip). Each broken rule is reported with AWS's words and its source."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from neuronctl.ops.doctor.registry import HARDWARE, check
from neuronctl.ops.doctor.runner import CheckOutcome, Status
from neuronctl.probes.os_release import host_os
from neuronctl.release.model import Rule
from neuronctl.release.rules import Situation, broken_rules, describe

if TYPE_CHECKING:
    from neuronctl.ops.doctor.facts import Facts

STALE_AFTER_DAYS = 45


def _outcome(f: Facts, rules: list[Rule], ok: str, details: tuple[str, ...] = ()) -> CheckOutcome:
    if not rules:
        return CheckOutcome("pass", ok, None, details)
    words = [describe(r) for r in rules]
    status: Status = "fail" if any(r.severity == "fail" for r in rules) else "warn"
    return CheckOutcome(status, "; ".join(words), None, (*details, *words))


@check("host.os", "Operating system", gathers=HARDWARE)
def check_host_os(f: Facts) -> CheckOutcome:
    release = f.selection.release
    name = host_os(f.sysroot)
    if name is None:
        return CheckOutcome("skip", "no os-release on this root: the OS rules cannot be checked")
    s = Situation(release.version, flavour=release.flavour, os=name)
    rules = broken_rules(f.manifest.rules, s, ("os",))
    if rules and not f.hardware.present:  # an environment prepared here for another host
        return CheckOutcome("skip", f"no Neuron hardware here: the OS rules apply on the Neuron host "
                               f"({name} would break: {'; '.join(describe(r) for r in rules)})",
                       None, (f"os-release: {name}",))
    return _outcome(f, rules, f"{name}: no documented OS rule of Neuron {release.version} breaks",
                    (f"os-release: {name}",))


@check("runtime.compat", "Neuron runtime", gathers=HARDWARE)
def check_runtime_compat(f: Facts) -> CheckOutcome:
    """The runtime against the driver: the existing comparison, then AWS's rules."""
    from neuronctl.ops.doctor.checks_hardware import check_runtime  # not for install's rules

    base = check_runtime(f)
    hw = f.hardware
    s = Situation(f.selection.release.version, chip=hw.chip, driver=hw.driver_version,
                  runtime=hw.runtime_version)
    rules = broken_rules(f.manifest.rules, s, ("runtime",))
    if not rules:
        return base
    ruled = _outcome(f, rules, "")
    rank = {"skip": 0, "pass": 1, "warn": 2, "fail": 3}
    status = ruled.status if rank[ruled.status] > rank[base.status] else base.status
    message = ruled.message if base.status in ("pass", "skip") else f"{base.message}; {ruled.message}"
    return CheckOutcome(status, message, base.fix, (*base.details, *ruled.details))


def _line(version: str | None) -> str | None:
    if not version:
        return None
    parts = version.split("+")[0].split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else None


@check("packages.lifecycle", "Support windows", gathers=HARDWARE)
def check_lifecycle(f: Facts) -> CheckOutcome:
    release, env = f.selection.release, f.env
    tnx, torch = env.get("torch-neuronx"), env.get("torch")
    flavour = None
    if tnx is not None:
        from neuronctl.torch_neuronx import classify

        kind = classify(tnx.version).flavour
        flavour = kind if kind in ("native", "xla") else None
    chip = f.hardware.chip if f.knows("hardware") else None
    s = Situation(release.version, flavour=flavour, chip=chip, python=_line(env.python),
                  torch=_line(torch.version if torch else None),
                  packages=frozenset(env.distributions))
    return _outcome(f, broken_rules(f.manifest.rules, s, ("support",)),
                    f"no documented support window of Neuron {release.version} excludes this "
                    "environment")


def stale_note(compiled: str | None, today: dt.date) -> str | None:
    """An informational line (never a warning) when the release data is over 45 days old."""
    if compiled is None:
        return None
    age = (today - dt.date.fromisoformat(compiled)).days
    if age <= STALE_AFTER_DAYS:
        return None
    return (f"the release data was compiled {compiled}, {age} days ago: newer Neuron releases "
            "may exist; `neuronctl releases update` fetches AWS's current manifest")
