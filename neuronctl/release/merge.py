"""`releases update`'s merge, pure: the release data in use and a fetched manifest (neuronctl's
format, or AWS's n2 converted) become the data to store.

- A release the data in use lacks is added (one older than the oldest in use is not: AWS's
  manifest goes back to 2.3, which neuronctl never covered; they are counted).
- A value the data in use holds as not published, and the fetched one gives, is a fill; a value
  both give, differently, is a conflict. Both change a release neuronctl already knows: they are
  listed, and applied only when accepted (`--accept-changes`).
- A release the fetched manifest lacks is kept (a manifest that drops a release deletes
  nothing) and named.

Every added, filled or accepted value's source is the fetched manifest (its address and the day
it was read). AWS's n2 format has no status, notes or dates but the newest: those are never
compared from it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from msgspec import Struct
from packaging.version import Version

from neuronctl.release.manifest import parse_manifest
from neuronctl.release.model import Manifest

UPDATE_SOURCE = "releases-update"


class Change(Struct, frozen=True):
    """One value of one release: in use and fetched (None: not published / absent)."""

    release: str
    key: str
    in_use: Any
    fetched: Any

    def to_json(self) -> dict[str, Any]:
        return {"release": self.release, "key": self.key, "in_use": self.in_use,
                "fetched": self.fetched}

    def describe(self) -> str:
        return f"{self.release} {self.key}: {_show(self.in_use)} -> {_show(self.fetched)}"


def _show(value: Any) -> str:
    if value is None:
        return "not published"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    return str(value)


class Merge(Struct, frozen=True):
    """What an update found and the data it leads to."""

    data: dict[str, Any]
    """The merged manifest, in neuronctl's format."""
    added: tuple[str, ...] = ()
    filled: tuple[Change, ...] = ()
    conflicts: tuple[Change, ...] = ()
    accepted: bool = False
    """Fills and conflicts applied (--accept-changes); else listed only."""
    dropped: tuple[str, ...] = ()
    """Releases in use that the fetched manifest does not list (kept)."""
    older_skipped: int = 0
    unchanged: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"added": list(self.added), "filled": [c.to_json() for c in self.filled],
                "conflicts": [c.to_json() for c in self.conflicts],
                "conflicts_applied": self.accepted and bool(self.conflicts),
                "filled_applied": self.accepted and bool(self.filled), "dropped": list(self.dropped),
                "older_skipped": self.older_skipped, "unchanged": self.unchanged}

    @property
    def changed(self) -> bool:
        return bool(self.added or ((self.filled or self.conflicts) and self.accepted))

    @property
    def touched(self) -> tuple[str, ...]:
        """The releases this merge adds or changes (the rollback check judges these)."""
        changes = self.filled + self.conflicts if self.accepted else ()
        return self.added + tuple(c.release for c in changes)


def _values(doc: Mapping[str, Any], with_labels: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("date", "backend", "torch", "python", "chips", *(("status",) if with_labels else ())):
        out[key] = doc.get(key)
    for name, versions in (doc.get("packages") or {}).items():
        out[f"packages.{name}"] = versions
    for name in (doc.get("unpublished") or {}):
        out.setdefault(f"packages.{name}", None)
    for name, version in (doc.get("system") or {}).items():
        out[f"system.{name}"] = version
    for fw in doc.get("frameworks") or []:
        base = f"frameworks.{fw['torch_neuronx']}"
        for part in ("torch", "chips", "python"):
            out[f"{base}.{part}"] = fw.get(part)
    for a in doc.get("artifacts") or []:
        base = f"artifacts.{a['name']}=={a['version']}"
        for part in ("chips", "python"):
            out[f"{base}.{part}"] = a.get(part)
    return out


def _empty(value: Any) -> bool:
    return value is None


def _set(doc: dict[str, Any], key: str, value: Any, fetched: Mapping[str, Any]) -> None:
    """Write one value key into a release JSON (from the fetched release's JSON where a whole
    entry is new)."""
    head, _, rest = key.partition(".")
    if not rest:
        doc[head] = value
        return
    if head in ("packages", "system"):
        doc.setdefault(head, {})[rest] = value
        if head == "packages":
            (doc.get("unpublished") or {}).pop(rest, None)
        return
    entries = doc.setdefault(head, [])
    ident, _, part = rest.rpartition(".")
    match = next((e for e in entries if _ident(head, e) == ident), None)
    if match is None:
        match = copy.deepcopy(next(e for e in fetched.get(head, []) if _ident(head, e) == ident))
        entries.append(match)
    match[part] = value


def _ident(head: str, entry: Mapping[str, Any]) -> str:
    return entry["torch_neuronx"] if head == "frameworks" else f"{entry['name']}=={entry['version']}"


def _merge_release(mine: dict[str, Any], theirs: dict[str, Any], *, labels: bool,
                   accept: bool) -> tuple[list[Change], list[Change]]:
    have, got = _values(mine, labels), _values(theirs, labels)
    filled, conflicts = [], []
    version = mine["version"]
    for key, value in got.items():
        if _empty(value):
            continue
        current = have.get(key)
        if _empty(current):
            filled.append(Change(version, key, current, value))
        elif current != value:
            conflicts.append(Change(version, key, current, value))
    for change in (filled + conflicts) if accept else []:
        _set(mine, change.key, change.fetched, theirs)
        mine.setdefault("sources", {})[change.key] = UPDATE_SOURCE
    if not mine.get("unpublished"):
        mine.pop("unpublished", None)
    return filled, conflicts


def merge(in_use: Manifest, fetched: Manifest, *, accept: bool, source_url: str,
          today: str, at: str | None = None) -> Merge:
    """The data to store: `in_use` with `fetched`'s new releases and values (see the module)."""
    labels = fetched.generated_from.get("format") != "aws-n2-manifest"
    data = in_use.to_json()
    data.setdefault("sources", {})[UPDATE_SOURCE] = {"url": source_url, "read": today,
                                                     "title": "fetched by neuronctl releases update"}
    mine = {r["version"]: r for r in data["releases"]}
    oldest = min(Version(v) for v in mine) if mine else None
    added, filled, conflicts, older, unchanged = [], [], [], 0, 0
    for release in fetched.releases:
        doc = release.to_json()
        doc.pop("sources", None)
        current = next((d for v, d in mine.items() if Version(v) == release.key), None)
        if current is None:
            if oldest is not None and release.key < oldest:
                older += 1
                continue
            doc["sources"] = {"*": UPDATE_SOURCE}
            data["releases"].append(doc)
            added.append(release.version)
            continue
        f, c = _merge_release(current, doc, labels=labels, accept=accept)
        filled += f
        conflicts += c
        unchanged += not (f or c)
    listed = {r.key for r in fetched.releases}
    dropped = tuple(v for v in mine if Version(v) not in listed)
    data["releases"].sort(key=lambda r: Version(r["version"]), reverse=True)
    data["compiled"] = today
    data["generated_from"] = {**dict(in_use.generated_from), "fetched_from": source_url,
                              "fetched": today, "fetched_at": at or today,
                              "base_compiled": in_use.compiled or "not recorded"}
    return Merge(data, tuple(added), tuple(filled), tuple(conflicts),
                 accept and bool(conflicts or filled),
                 dropped, older, unchanged)


def check_merged(data: Mapping[str, Any], where: str) -> Manifest:
    """The merged data parsed as every manifest is: what is stored must load."""
    return parse_manifest(data, where, origin="stored")


__all__ = ["Change", "Merge", "check_merged", "merge"]
