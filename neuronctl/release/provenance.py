"""Where each value of a release manifest came from: the sources table, and the value keys a
release's `sources` map onto it.

Pure: `value_entries` lists every value of a release with its source (or "not published"), for
`releases show --sources` and for the test that no bundled value lacks one. The Source records'
URL and date checks the manifest parser applies are neuronctl.release.source_checks' (a run
that only parses the data does not create this module's ValueEntry).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from msgspec import Struct

from neuronctl.release.model import Release, Source


class ValueEntry(Struct, frozen=True):
    """One value of a release: its key, its text, and its source (None: not published)."""

    key: str
    value: str
    source: Source | None

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value,
                "source": self.source.to_json() if self.source else None}


def _keys(release: Release) -> Iterator[tuple[str, tuple[str, ...], str]]:
    """(key, fallback keys from the most specific, value text) for every value of a release."""
    def show(values: tuple[str, ...]) -> str:
        return ", ".join(values) if values else "-"

    if release.date is not None:
        yield "date", (), release.date
    yield "status", (), release.status
    yield "backend", (), release.flavour  # the data key (and its sources key) for the flavour
    for name in ("torch", "python", "chips"):
        yield name, (), show(getattr(release, name))
    for name, versions in release.packages.items():
        yield f"packages.{name}", ("packages",), show(versions)
    for name, spec in release.constraints.items():
        yield f"unpublished.{name}", ("unpublished",), f"not published; resolved from the index " \
            f"as {name}{spec or ' (unpinned)'}"
    for name, version in release.system.items():
        yield f"system.{name}", ("system",), version
    for fw in release.frameworks:
        base = f"frameworks.{fw.torch_neuronx}"
        yield f"{base}.torch", (base, "frameworks"), f"{fw.flavour} torch {fw.torch}"
        yield f"{base}.chips", (base, "frameworks"), show(fw.chips)
        yield f"{base}.python", (base, "frameworks"), show(fw.python)
    for a in release.artifacts:
        base = f"artifacts.{a.name}=={a.version}"
        yield f"{base}.chips", (base, "artifacts"), show(a.chips)
        yield f"{base}.python", (base, "artifacts"), show(a.python)
    for i, note in enumerate(release.notes):
        yield f"notes[{i}]", ("notes",), note


def value_entries(release: Release, sources: Mapping[str, Source]) -> list[ValueEntry]:
    """Every value of `release` with its source; a value the data holds as not published has
    none (and its text says so), as has a value whose source is missing (which the bundled data
    never has: a test walks them)."""
    out = []
    unpublished = set(release.unpublished)
    for key, fallbacks, text in _keys(release):
        if key in unpublished:
            out.append(ValueEntry(key, "not published", None))
            continue
        sid = next((release.sources[k] for k in (key, *fallbacks, "*") if k in release.sources),
                   None)
        out.append(ValueEntry(key, text, sources.get(sid) if sid else None))
    for name in release.unpublished_pins():
        if name not in release.constraints:
            out.append(ValueEntry(f"system.{name}", "not published", None))
    return out
