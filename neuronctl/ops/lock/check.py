"""`lock --check`: does a lock still match the request, config and manifest? Pure comparison of
what the lock recorded ([tool.neuronctl], its pinned versions) with what would be locked now.

The recorded table is untrusted text: a value of the wrong type is a difference, never a crash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packaging.version import InvalidVersion, Version

from neuronctl.resolvers.lock_record import LOCK_TOOL_SCHEMA, LockInputs, RecordedLock
from neuronctl.routing import redact_url


def lock_differences(recorded: RecordedLock, inputs: LockInputs) -> list[str]:
    """What differs, one line per change (empty: the lock is up to date)."""
    tool = recorded.tool
    if tool.get("schema") != LOCK_TOOL_SCHEMA:
        return [f"[tool.neuronctl] schema {tool.get('schema')!r}; this neuronctl writes "
                f"{LOCK_TOOL_SCHEMA}"]
    kind = _kind_difference(tool.get("fallback"), inputs.fallback)
    if kind:
        return [kind]
    problems = _input_differences(tool, inputs.to_tool())
    if not inputs.latest:
        problems += _pin_differences(recorded.versions, inputs.pins, problems)
    return problems


def _kind_difference(recorded: object, asked: Mapping[str, str] | None) -> str | None:
    """A Neuron lock checked as a fallback one, or the other way round: one line, not a
    difference per key."""
    def device(table: object) -> str | None:
        return str(table.get("device"))[:32] if isinstance(table, dict) else None

    have, want = device(recorded), device(asked)
    if have == want:
        return None
    said = f"a {have} fallback lock" if have else "a Neuron lock"
    flag = f"--fallback {have}" if have else "no --fallback"
    return f"it is {said}; check it with {flag}"


def _same_requirements(recorded: object, asked: list[str]) -> bool:
    if recorded is None:
        return not asked
    if not isinstance(recorded, list):
        return False
    return sorted(str(r) for r in recorded) == sorted(asked)


def _input_differences(tool: Mapping[str, Any], want: Mapping[str, Any]) -> list[str]:
    """Scalars and lists first, then tables (pins, indexes) entry by entry, index URLs without
    credentials; a table entry already named by a scalar line (torch-neuronx) is not repeated."""
    out: list[str] = []
    for key, asked in want.items():
        value = tool.get(key)
        same = _same_requirements(value, asked) if key == "with" else value == asked
        if not isinstance(asked, dict) and not same:
            out.append(f"{key}: lock has {value!r}, requested {asked!r}")
    reported = {line.split(":", 1)[0] for line in out}
    for key, table in want.items():
        if not isinstance(table, dict):
            continue
        recorded = tool.get(key)
        have: Mapping[str, Any] = recorded if isinstance(recorded, dict) else {}
        for name in sorted(table.keys() | have.keys()):
            old, new = (_shown(key, d.get(name)) for d in (have, table))
            if old != new and name not in reported:
                out.append(f"{key}: {name}: lock has {old or 'nothing'}, requested {new or 'nothing'}")
    return out


def _shown(table: str, value: object) -> str | None:
    if value is None:
        return None
    # Credentials are no part of an index: a lock never holds them, a request's are dropped.
    return redact_url(value) if table == "indexes" and isinstance(value, str) else str(value)


def _same_public(have: str, want: str) -> bool:
    try:
        return Version(have).public == Version(want).public
    except InvalidVersion:
        return False


def _pin_differences(locked: Mapping[str, frozenset[str]], pins: Mapping[str, str],
                     already: list[str]) -> list[str]:
    """The manifest's exact pins the lock does not hold (a new manifest, or an edited lock)."""
    out = []
    for name, version in pins.items():
        held = locked.get(name, frozenset())
        mentioned = any(p.startswith((f"pins: {name}: ", f"{name}: ")) for p in already)
        if not any(_same_public(v, version) for v in held) and not mentioned:
            out.append(f"{name}: the manifest pins {version}, the lock has "
                       f"{', '.join(sorted(held)) or 'nothing'}")
    return out
