"""Doctor checks that apply the documented rules (neuronctl.rules) to this host: `host.os`
(the OS rules, os-release under --sysroot read with `distro`), `runtime.compat` (the existing
driver/runtime comparison plus AWS's driver/runtime/dkms rules) and `packages.lifecycle` (support
windows: Python, PyTorch lines, backends and packages a release no longer supports on this
chip). Each broken rule is reported with AWS's words and its source."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from neuronctl.ops.doctor.registry import HARDWARE, check
from neuronctl.ops.doctor.runner import Outcome, Status
from neuronctl.rules import Rule, Situation, broken_rules, describe

if TYPE_CHECKING:
    from neuronctl.manifest import Framework, Manifest
    from neuronctl.ops.doctor.facts import Facts
    from neuronctl.probes.hardware import HardwareReport
    from neuronctl.probes.sysroot import SysRoot

STALE_AFTER_DAYS = 45


def _outcome(f: Facts, rules: list[Rule], ok: str, details: tuple[str, ...] = ()) -> Outcome:
    if not rules:
        return Outcome("pass", ok, None, details)
    words = [describe(r) for r in rules]
    status: Status = "fail" if any(r.severity == "fail" for r in rules) else "warn"
    return Outcome(status, "; ".join(words), None, (*details, *words))


def host_os(root: SysRoot) -> str | None:
    """"ubuntu 24.04" from the root's os-release (via `distro`, through the root's bounded
    reader), None where it cannot be read."""
    os_id: str | None
    version: str | None
    if root.is_host:  # distro straight on this machine: no copy, no tempfile
        import distro

        info = distro.LinuxDistribution(include_lsb=False, include_uname=False,
                                        include_oslevel=False)
        os_id, version = info.id(), info.version()
    else:  # a captured tree: its release files through the root's contained reader
        from neuronctl.probes.host_facts import _distribution

        _pretty, os_id, version = _distribution(root)
    if not os_id:
        return None
    return f"{os_id} {version or ''}".strip().lower()[:80]


@check("host.os", "Operating system", gathers=HARDWARE)
def check_host_os(f: Facts) -> Outcome:
    release = f.selection.release
    name = host_os(f.sysroot)
    if name is None:
        return Outcome("skip", "no os-release on this root: the OS rules cannot be checked")
    s = Situation(release.version, backend=release.backend, os=name)
    rules = broken_rules(f.manifest.rules, s, ("os",))
    if rules and not f.hardware.present:  # an environment prepared here for another host
        return Outcome("skip", f"no Neuron hardware here: the OS rules apply on the Neuron host "
                               f"({name} would break: {'; '.join(describe(r) for r in rules)})",
                       None, (f"os-release: {name}",))
    return _outcome(f, rules, f"{name}: no documented OS rule of Neuron {release.version} breaks",
                    (f"os-release: {name}",))


@check("runtime.compat", "Neuron runtime", gathers=HARDWARE)
def check_runtime_compat(f: Facts) -> Outcome:
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
    return Outcome(status, message, base.fix, (*base.details, *ruled.details))


def _line(version: str | None) -> str | None:
    if not version:
        return None
    parts = version.split("+")[0].split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else None


@check("packages.lifecycle", "Support windows", gathers=HARDWARE)
def check_lifecycle(f: Facts) -> Outcome:
    release, env = f.selection.release, f.env
    tnx, torch = env.get("torch-neuronx"), env.get("torch")
    backend = None
    if tnx is not None:
        from neuronctl.torch_neuronx import classify

        kind = classify(tnx.version).backend
        backend = kind if kind in ("native", "xla") else None
    chip = f.hardware.chip if f.knows("hardware") else None
    s = Situation(release.version, backend=backend, chip=chip, python=_line(env.python),
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


def install_rule_notes(manifest: Manifest, release: str | None, framework: Framework | None,
                       python: str, hardware: HardwareReport, root: SysRoot,
                       allow: bool) -> list[str]:
    """install's one call: the rules for this stack on this host's chip and OS (exit 2 for a
    combination a rule forbids, unless --allow-unsupported); the notes to show."""
    from neuronctl.stack_rules import check_stack_rules

    found = manifest.find(release) if release else None
    # Without Neuron hardware the environment is prepared for another host: its OS is not this
    # one's, and only the rules that do not depend on the host apply.
    present = hardware.present
    return check_stack_rules(found, framework, [python], chip=hardware.chip if present else None,
                             os=host_os(root) if present else None, allow=allow, what="install")
