"""The target setup plans for: this host, a captured tree (--sysroot), or another host named
only by its OS (--os, nothing read). The facts come from probes/setup_facts.py."""

from __future__ import annotations

from pathlib import Path

from neuronctl.errors import InputError
from neuronctl.ops.setup.repos import OS_IDS, OsTarget, target_by_id, target_for
from neuronctl.probes.setup_facts import SetupFacts, gather_setup_facts
from neuronctl.probes.sysroot import SysRoot


def read_target(sysroot: Path | None, os_name: str | None) -> tuple[OsTarget, SetupFacts]:
    """(OS target, facts). --os alone plans for another host (no facts: every step is checked
    when it runs); with --sysroot (or on this host) the facts are read and --os, if given,
    must agree with the tree's os-release."""
    chosen = target_by_id(os_name) if os_name else None
    if os_name and chosen is None:
        raise InputError(f"--os: {os_name!r} is not one setup plans for "
                         f"(known: {', '.join(OS_IDS)})")
    if chosen is not None and sysroot is None:
        return chosen, SetupFacts(os_id=chosen.os_id, os_version=chosen.version,
                                  codename=chosen.codename, known=False)
    root = SysRoot.from_env(sysroot)
    facts = gather_setup_facts(root)
    found = target_for(facts.os_id, facts.os_version)
    where = "--sysroot" if not root.is_host else "this host"
    if chosen is not None:
        if facts.os_id and (found is None or found.id != chosen.id):
            seen = found.id if found else f"{facts.os_id} {facts.os_version}"
            raise InputError(f"--os {chosen.id}: {where} runs {seen} (its os-release)")
        return chosen, facts
    if found is None:
        seen = f"{facts.os_id} {facts.os_version}" if facts.os_id else "no os-release"
        raise InputError(f"{where}: {seen} is not an OS setup plans for "
                         f"(known: {', '.join(OS_IDS)})",
                         hint="plan for one with --os (nothing of this host is read then)")
    return found, facts
