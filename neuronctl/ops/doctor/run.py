"""Choose the doctor's checks and run them over one set of facts (install reuses this)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from neuronctl.errors import InputError
from neuronctl.ops.doctor.checks import CHECK_IDS, CHECKS
from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.report import DoctorReport
from neuronctl.ops.doctor.runner import Check, run_checks

GROUPS: tuple[str, ...] = tuple(dict.fromkeys(i.split(".")[0] for i in CHECK_IDS))
SELECTORS_HELP = f"groups: {', '.join(GROUPS)}; ids: {', '.join(CHECK_IDS)}"


def _no_such_check(flag: str, pattern: str) -> InputError:
    import difflib

    near = difflib.get_close_matches(pattern, [*CHECK_IDS, *GROUPS], n=1)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return InputError(f"{flag} {pattern!r}: no such check{hint} ({SELECTORS_HELP})")


def select_checks(only: tuple[str, ...], skip: tuple[str, ...], lock: Path | None,
                  probe: bool) -> list[str]:
    def expand(pattern: str, flag: str) -> set[str]:
        hits = {i for i in CHECK_IDS if i == pattern or i.startswith(pattern + ".")}
        if not hits:
            raise _no_such_check(flag, pattern)
        return hits

    chosen = set(CHECK_IDS)
    if only:
        chosen = set().union(*(expand(p, "--only") for p in only))
    for pattern in skip:
        chosen -= expand(pattern, "--skip")
    if lock is None:
        if only and "lock.drift" in chosen:
            raise InputError("--only lock.drift needs --lock FILE")
        chosen.discard("lock.drift")
    if not probe:
        chosen.discard("device.probe")
    return [i for i in CHECK_IDS if i in chosen]


def _environment(facts: Facts) -> dict[str, Any]:
    env: dict[str, Any] = {"manifest": facts.manifest.source, "sysroot": str(facts.sysroot.root)}
    for key, get in (("python", lambda: {"version": facts.env.python,
                                         "executable": facts.env.executable,
                                         "venv": facts.env.in_venv,
                                         "platform": facts.env.platform}),
                     ("release", lambda: {"version": facts.selection.release.version,
                                          "backend": facts.selection.release.backend,
                                          "reason": facts.selection.reason}),
                     ("hardware", lambda: {"chip": facts.hardware.chip,
                                           "devices": facts.hardware.device_count,
                                           "instance_type": facts.hardware.instance_type,
                                           "driver": facts.hardware.driver_version,
                                           "runtime": facts.hardware.runtime_version})):
        try:
            env[key] = get()
        except Exception as exc:
            env[key] = {"error": str(exc)}
    return env


def run_doctor(facts: Facts, ids: list[str], strict: bool, limit: float) -> DoctorReport:
    """Run the chosen checks in parallel, each under its own timeout (install reuses this)."""
    specs = {c.id: c for c in CHECKS}
    checks = [Check(i, specs[i].title, functools.partial(specs[i].run, facts),
                    limit + 15 if i == "device.probe" else limit + 5)
              for i in ids]
    return DoctorReport(tuple(run_checks(checks)), strict, _environment(facts))
