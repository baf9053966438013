"""Write PEP 751 lock files (pylock.toml) and hashed requirements exports from resolutions.

Several targets share one lock: `environments` lists them, and a package that is not in every
target's resolution (or differs in version) carries a marker naming the targets it is for.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.pylock import Pylock, PylockValidationError
from packaging.utils import NormalizedName
from packaging.version import Version

from neuronctl import __version__
from neuronctl.errors import InputError
from neuronctl.resolvers.resolve import Resolution
from neuronctl.resolvers.simple_index import DistFile
from neuronctl.resolvers.targets import Target
from neuronctl.resolvers.toml_emit import dumps
from neuronctl.routing import redact_url
from neuronctl.tomlfile import loads_toml

LOCK_TOOL_SCHEMA = 1
HashOf = Callable[[DistFile], str]
"""A wheel's sha256: from the index, or (reported) from downloading it."""


@dataclass(frozen=True)
class LockedPackage:
    name: NormalizedName
    version: Version
    index_name: str
    index_url: str
    targets: tuple[Target, ...]
    wheels: tuple[DistFile, ...]
    best: Mapping[Target, DistFile]
    marker: str | None


@dataclass(frozen=True)
class LockInputs:
    """What the lock was made from; recorded in [tool.neuronctl] and compared by --check."""

    release: str
    backend: str
    torch: str
    torch_neuronx: str
    latest: bool
    requirements: tuple[str, ...]
    targets: tuple[Target, ...]
    pins: Mapping[str, str]
    indexes: Mapping[str, str] = field(default_factory=dict)

    def to_tool(self) -> dict[str, Any]:
        return {
            "schema": LOCK_TOOL_SCHEMA,
            "release": self.release,
            "backend": self.backend,
            "torch": self.torch,
            "torch-neuronx": self.torch_neuronx,
            "latest": self.latest,
            "with": list(self.requirements),
            "targets": [t.to_json() for t in self.targets],
            "pins": dict(self.pins),
            "indexes": {k: redact_url(v) for k, v in sorted(self.indexes.items())},
        }


def targets_marker(targets: Sequence[Target]) -> str:
    if len(targets) == 1:
        return targets[0].marker
    return " or ".join(f"({t.marker})" for t in targets)


def merge(resolutions: Sequence[Resolution]) -> list[LockedPackage]:
    all_targets = tuple(r.target for r in resolutions)
    grouped: dict[tuple[NormalizedName, Version], dict[str, Any]] = {}
    for res in resolutions:
        for pin in res.pins.values():
            entry = grouped.setdefault((pin.name, pin.version), {
                "pin": pin, "targets": [], "wheels": {}, "best": {}})
            entry["targets"].append(res.target)
            entry["best"][res.target] = pin.wheels[0]
            for wheel in pin.wheels:
                entry["wheels"].setdefault(wheel.filename, wheel)
    out = []
    for (name, version), entry in sorted(grouped.items()):
        targets = tuple(entry["targets"])
        marker = None if set(targets) == set(all_targets) else targets_marker(targets)
        pin = entry["pin"]
        wheels = tuple(entry["wheels"][f] for f in sorted(entry["wheels"]))
        out.append(LockedPackage(name, version, pin.index, pin.index_url, targets, wheels,
                                 dict(entry["best"]), marker))
    return out


def with_sizes(packages: Sequence[LockedPackage], sizes: Mapping[str, int]) -> list[LockedPackage]:
    """Fill in file sizes the index did not publish but fetching revealed."""
    def fill(d: DistFile) -> DistFile:
        return replace(d, size=sizes[d.url]) if d.size is None and d.url in sizes else d

    return [replace(p, wheels=tuple(fill(w) for w in p.wheels),
                    best={t: fill(w) for t, w in p.best.items()}) for p in packages]


def _upload_time(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    try:
        stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)
    return stamp.replace(microsecond=0)


def _wheel_entry(wheel: DistFile, hash_of: HashOf) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": wheel.filename, "url": redact_url(wheel.url)}
    if wheel.size is not None:
        entry["size"] = wheel.size
    stamp = _upload_time(wheel.upload_time)
    if stamp is not None:
        entry["upload-time"] = stamp
    entry["hashes"] = {"sha256": hash_of(wheel)}
    return entry


def build_pylock(packages: Sequence[LockedPackage], inputs: LockInputs, hash_of: HashOf) -> dict[str, Any]:
    lowest = min(inputs.targets, key=lambda t: t.minor)
    doc: dict[str, Any] = {
        "lock-version": "1.0",
        "environments": [t.marker for t in inputs.targets],
        "requires-python": f">={lowest.python_minor}",
        "created-by": "neuronctl",
        "packages": [],
    }
    routes = {}
    for pkg in packages:
        entry: dict[str, Any] = {"name": pkg.name, "version": str(pkg.version)}
        if pkg.marker:
            entry["marker"] = pkg.marker
        entry["index"] = redact_url(pkg.index_url)
        entry["wheels"] = [_wheel_entry(w, hash_of) for w in pkg.wheels]
        doc["packages"].append(entry)
        routes[pkg.name] = pkg.index_name
    tool = inputs.to_tool()
    tool["generator"] = f"neuronctl {__version__}"
    tool["routes"] = dict(sorted(routes.items()))
    doc["tool"] = {"neuronctl": tool}
    return doc


def render_pylock(doc: Mapping[str, Any]) -> str:
    """The TOML text, after checking it is a valid PEP 751 lock and parses back to `doc`."""
    text = dumps(doc, arrays_of_tables=("packages",))
    try:
        Pylock.from_dict(dict(doc))
    except PylockValidationError as exc:  # a bug here, not user input: still never written
        raise InputError(f"refusing to write an invalid lock: {exc}") from None
    if loads_toml(text, "generated lock") != doc:
        raise InputError("refusing to write a lock that does not parse back to what was resolved")
    return text


def render_requirements(packages: Sequence[LockedPackage], inputs: LockInputs, hash_of: HashOf) -> str:
    """Direct URL references with --hash: `pip install --require-hashes -r` needs no index."""
    lines = [f"# neuronctl {__version__}: Neuron {inputs.release}, torch {inputs.torch}, "
             f"targets {', '.join(t.label for t in inputs.targets)}",
             "# install with: pip install --require-hashes --no-deps -r <this file>",
             "--no-index"]
    for pkg in packages:
        by_wheel: dict[str, list[Target]] = {}
        for target in pkg.targets:
            by_wheel.setdefault(pkg.best[target].filename, []).append(target)
        wheels = {w.filename: w for w in pkg.wheels}
        for filename, targets in sorted(by_wheel.items()):
            wheel = wheels[filename]
            whole = len(targets) == len(inputs.targets)
            marker = "" if whole else f" ; {targets_marker(targets)}"
            lines.append(f"{pkg.name} @ {redact_url(wheel.url)}{marker} \\\n"
                         f"    --hash=sha256:{hash_of(wheel)}")
    return "\n".join(lines) + "\n"


def check_lock(tool: Mapping[str, Any], inputs: LockInputs) -> list[str]:
    """What differs between a lock's [tool.neuronctl] and the current request (empty: up to date)."""
    want = inputs.to_tool()
    out = []
    if tool.get("schema") != LOCK_TOOL_SCHEMA:
        return [f"[tool.neuronctl] schema {tool.get('schema')!r}; this neuronctl writes "
                f"{LOCK_TOOL_SCHEMA}"]
    for name, wanted in want.items():
        have = tool.get(name)
        same = sorted(have or []) == sorted(wanted) if name == "with" else have == wanted
        if not same:
            out.append(f"{name}: lock has {have!r}, requested {wanted!r}")
    return out
