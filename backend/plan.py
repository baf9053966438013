"""The install plan: a pure diff of what the target has against what it should have."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from msgspec import Struct
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from neuronctl.locked_file import LockedFile
from neuronctl.routing import redact_url

Action = Literal["install", "upgrade", "downgrade", "reinstall", "remove", "keep"]


class Change(Struct, frozen=True):
    """What the plan does to one package (install, upgrade, remove, keep, ...) and why."""

    action: Action
    name: str
    old: str | None
    new: str | None
    wanted: LockedFile | None = None
    why: str = ""

    def to_json(self) -> dict[str, object]:
        return {"action": self.action, "name": self.name, "from": self.old, "to": self.new,
                "url": redact_url(self.wanted.url) if self.wanted else None, "why": self.why or None}


class Plan(Struct, frozen=True):
    """Every change an install makes, in order; empty when the target already matches."""

    changes: tuple[Change, ...]

    @property
    def applies(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.action in ("install", "upgrade", "downgrade", "reinstall"))

    @property
    def removals(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.action == "remove")

    @property
    def empty(self) -> bool:
        return not self.applies and not self.removals


def changed_between(before: Mapping[str, str], after: Mapping[str, str]
                    ) -> list[tuple[str, str | None, str | None]]:
    """(canonical name, version before, version after) for each package that differs between two
    snapshots; None where it was absent."""
    old = {str(canonicalize_name(k)): v for k, v in before.items()}
    new = {str(canonicalize_name(k)): v for k, v in after.items()}
    return [(k, old.get(k), new.get(k)) for k in sorted(old.keys() | new.keys())
            if old.get(k) != new.get(k)]


def _action(old: str, new: str) -> Action:
    if old == new:
        return "keep"
    try:
        a, b = Version(old), Version(new)
    except InvalidVersion:
        return "reinstall"
    if a == b:
        return "keep"
    if a.public == b.public:
        return "reinstall"  # same release, other build (e.g. 2.14.0 vs 2.14.0+cpu)
    return "upgrade" if b > a else "downgrade"


def diff(installed: Mapping[str, str], wanted: Iterable[LockedFile],
         remove: Mapping[str, str]) -> Plan:
    """`installed`: name -> version; `remove`: name -> why (packages that must go, e.g. legacy
    XLA ones), unless also wanted."""
    have = {str(canonicalize_name(k)): v for k, v in installed.items()}
    changes = []
    wanted_names = set()
    for w in sorted(wanted, key=lambda w: canonicalize_name(w.name)):
        key = str(canonicalize_name(w.name))
        wanted_names.add(key)
        old = have.get(key)
        action: Action = "install" if old is None else _action(old, w.version)
        changes.append(Change(action, key, old, w.version, w))
    for name, why in sorted(remove.items()):
        key = str(canonicalize_name(name))
        if key in wanted_names or key not in have:
            continue
        changes.append(Change("remove", key, have[key], None, None, why))
    return Plan(tuple(changes))
