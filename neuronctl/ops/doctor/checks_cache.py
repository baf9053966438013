"""`cache.compile`: the compile caches the environment uses (probes/compile_cache.py says which
and from what source): present, writable, free space, local or network filesystem, entries for
another neuronx-cc than the target's (stale: size and count)."""

from __future__ import annotations

import shlex

from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.registry import check
from neuronctl.ops.doctor.runner import CheckOutcome

MIN_FREE_BYTES = 1 << 30
"""Free space under which a cache warns: neuronctl's own threshold (AWS documents none); one
compiled graph is commonly megabytes to hundreds of megabytes."""
FSX_KNOWN_ISSUE = ("torch-neuronx 2.5 known issue: a Neuron cache on FSx raises OSError (Errno "
                   "61) (https://github.com/aws-neuron/aws-neuron-sdk/blob/v2.22.1/release-notes/"
                   "torch/torch-neuronx/index.rst)")


def size_text(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def _compiler(f: Facts) -> str | None:
    try:
        dist = f.env.get("neuronx-cc")
    except Exception:  # the interpreter could not be inspected: python.version says why
        return None
    return dist.version if dist is not None else None


@check("cache.compile", "Compile caches")
def check_compile_cache(f: Facts) -> CheckOutcome:
    from neuronctl.probes.compile_cache import cache_locations, inspect_cache, public

    compiler = _compiler(f)
    warnings: list[str] = []
    fixes: list[str] = []
    details: list[str] = [f"target neuronx-cc: {compiler or 'not installed'}"]
    present = 0
    for loc in cache_locations(f.environ):
        state = inspect_cache(f.sysroot, loc, seconds=2.0)
        where = f"{loc.path} ({loc.kind}, from {loc.source})"
        if state.problem:
            (warnings if state.present else details).append(f"{where}: {state.problem}")
            continue
        if not state.present:
            details.append(f"{where}: not there yet")
            continue
        present += 1
        total = sum(e.size for e in state.entries)
        details.append(f"{where}: {len(state.entries)} entries, {size_text(total)}"
                       + (f", on {state.fstype}" if state.fstype else "")
                       + (f", {size_text(state.free_bytes)} free" if state.free_bytes is not None else "")
                       + (", scan cut at its bound" if state.truncated else ""))
        versions = sorted({e.version for e in state.entries if e.version and not e.link})
        if versions:
            details.append(f"{loc.path}: compiler versions {', '.join(versions)}")
        if state.writable is False:
            warnings.append(f"{loc.path} is not writable by this user: every compile is redone "
                            "and nothing is cached")
            fixes.append(f"sudo chown -R $(id -u):$(id -g) {shlex.quote(loc.path)}")
        if state.free_bytes is not None and state.free_bytes < MIN_FREE_BYTES:
            warnings.append(f"{loc.path}: only {size_text(state.free_bytes)} free")
        if state.fstype == "lustre":
            warnings.append(f"{loc.path} is on lustre (FSx): {FSX_KNOWN_ISSUE}")
        elif state.network:
            details.append(f"{loc.path} is on a network filesystem ({state.fstype}): shared by "
                           "every node that mounts it")
        if compiler and loc.versioned:
            old = [e for e in state.entries if e.version and not e.link
                   and public(e.version) != public(compiler)]
            if old:
                warnings.append(f"{loc.path}: {len(old)} entr{'y' if len(old) == 1 else 'ies'} for "
                                f"another neuronx-cc ({size_text(sum(e.size for e in old))}, "
                                f"{sum(e.files for e in old)} files): stale, never reused by "
                                f"{compiler}")
                fixes.append(f"neuronctl cache prune --python {shlex.quote(f.python)} --yes  "
                             "# other compilers' entries; see the list without --yes first")
    if warnings:
        return CheckOutcome("warn", "; ".join(warnings), " && ".join(dict.fromkeys(fixes)) or None,
                       tuple(details), "fix")
    if not present:
        return CheckOutcome("pass", "no compile cache in use yet (each is made on first compile)",
                       None, tuple(details))
    return CheckOutcome("pass", f"{present} compile cache(s), writable, current compiler only", None,
                   tuple(details))
