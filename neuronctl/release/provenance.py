"""Where each value of a release manifest came from: the sources table, and the value keys a
release's `sources` map onto it.

Pure: the manifest parser checks the Source records' URLs and dates here; `value_entries`
lists every value of a release with its source (or "not published"), for `releases show
--sources` and for the test that no bundled value lacks one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from neuronctl.errors import InputError
from neuronctl.release.model import Release, Source

URL_SCHEMES = ("http", "https", "file")


@dataclass(frozen=True)
class ValueEntry:
    """One value of a release: its key, its text, and its source (None: not published)."""

    key: str
    value: str
    source: Source | None

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "value": self.value,
                "source": self.source.to_json() if self.source else None}


def check_url(url: str, where: str) -> str:
    """A URL from a manifest, lock or page: no whitespace or control characters (they would
    start a new line or option in an engine's input), scheme http(s) or file only."""
    if not url or any(ch.isspace() or not ch.isprintable() for ch in url):
        raise InputError(f"{where}: {url[:80]!r} holds whitespace or control characters; "
                         "not a URL")
    scheme = urlsplit(url).scheme.lower()
    if scheme not in URL_SCHEMES:
        raise InputError(f"{where}: {url[:80]!r}: scheme {scheme or '(none)'!r} is not one of "
                         f"{', '.join(URL_SCHEMES)}")
    return url


def check_date(text: str, where: str) -> str:
    try:
        return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        raise InputError(f"{where}: {text[:40]!r} is not an ISO date (YYYY-MM-DD)") from None


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
