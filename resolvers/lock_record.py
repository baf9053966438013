"""The lock as neuronctl writes it, from resolutions: pylock.toml and the hashed requirements
export, and what lock --check reads back from either (RecordedLock). Apart from the reader
(neuronctl.resolvers.pylock) so that an install, which only reads a lock, does not create the
writer's classes (issue 36).

Several targets share one lock; `environments` lists them, and a package that is not in every
target's resolution (or differs in version) carries a marker naming the targets it is for.
Every lock records what it was made from in `[tool.neuronctl]`; the requirements export carries
the same table as JSON on its `# neuronctl-lock: ` line. `LockedPackage` is what neuronctl
resolved and is about to write.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field
from msgspec.structs import replace
from packaging.pylock import Pylock, PylockValidationError
from packaging.utils import NormalizedName
from packaging.version import Version

from neuronctl import __version__
from neuronctl.errors import InputError
from neuronctl.resolvers.pylock import load_pylock, neuronctl_table
from neuronctl.resolvers.targets import PlatformTarget
from neuronctl.routing import redact_url
from neuronctl.tomlfile import loads_toml, read_text

if TYPE_CHECKING:  # not at run time: writing a lock's text needs no resolver
    from neuronctl.resolvers.resolve import Resolution
    from neuronctl.resolvers.simple_index import DistFile

LOCK_TOOL_SCHEMA = 1
REQUIREMENTS_MARK = "# neuronctl-lock: "
"""The requirements export's line holding its [tool.neuronctl] table as JSON."""
HashOf = Callable[["DistFile"], str]
"""A wheel's sha256: from the index, or (reported) from downloading it."""


class LockedPackage(Struct, frozen=True):
    """One package as a resolution locks it: version, index, and its best wheel per target."""

    name: NormalizedName
    version: Version
    index_name: str
    index_url: str
    targets: tuple[PlatformTarget, ...]
    wheels: tuple[DistFile, ...]
    best: Mapping[PlatformTarget, DistFile]
    marker: str | None


class LockInputs(Struct, frozen=True):
    """What the lock was made from; recorded in [tool.neuronctl] and compared by --check."""

    release: str
    flavour: str
    """native or xla; recorded under the lock's key "backend" (its name since schema 1)."""
    torch: str
    torch_neuronx: str
    latest: bool
    requirements: tuple[str, ...]
    targets: tuple[PlatformTarget, ...]
    pins: Mapping[str, str]
    indexes: Mapping[str, str] = field(default_factory=dict)
    fallback: Mapping[str, str] | None = None
    """A fallback lock's {"device": "cuda", "variant": "cu130"}; None for the Neuron lock."""
    unpublished: Mapping[str, str] = field(default_factory=dict)
    """Packages whose pin the release does not publish: name -> the recipe's constraint they
    were resolved from the index within (recorded as such)."""

    def to_tool(self) -> dict[str, Any]:
        tool = self._common()
        if self.unpublished:
            tool["resolved-from-index"] = {
                name: f"pin not published by Neuron {self.release}; resolved from the index "
                      f"within {name}{spec or ' (unpinned)'}"
                for name, spec in sorted(self.unpublished.items())}
        if self.fallback is not None:
            del tool["torch-neuronx"]  # a fallback lock holds no Neuron package
            tool["fallback"] = dict(self.fallback)
        return tool

    def _common(self) -> dict[str, Any]:
        return {
            "schema": LOCK_TOOL_SCHEMA,
            "release": self.release,
            "backend": self.flavour,
            "torch": self.torch,
            "torch-neuronx": self.torch_neuronx,
            "latest": self.latest,
            "with": list(self.requirements),
            "targets": [t.to_json() for t in self.targets],
            "pins": dict(self.pins),
            "indexes": {k: redact_url(v) for k, v in sorted(self.indexes.items())},
        }


def targets_marker(targets: Sequence[PlatformTarget]) -> str:
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
    from neuronctl.toml_emit import dumps  # writing a lock only: install reads one

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
    stack = f"Neuron {inputs.release}, torch {inputs.torch}"
    if inputs.fallback is not None:
        stack = (f"torch {inputs.pins.get('torch', inputs.torch)}, "
                 f"{inputs.fallback.get('device')} fallback of Neuron {inputs.release}")
    lines = [f"# neuronctl {__version__}: {stack}, "
             f"targets {', '.join(t.label for t in inputs.targets)}",
             REQUIREMENTS_MARK + json.dumps(inputs.to_tool(), sort_keys=True),
             "# install with: pip install --require-hashes --no-deps -r <this file>",
             "--no-index"]
    for pkg in packages:
        by_wheel: dict[str, list[PlatformTarget]] = {}
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


class RecordedLock(Struct, frozen=True):
    """What a lock written by neuronctl says it was made from, and the versions it pins."""

    path: Path
    tool: Mapping[str, Any]
    """Its [tool.neuronctl] table (from the requirements export's marker line)."""
    versions: Mapping[str, frozenset[str]]
    """Package name -> the versions locked (one per target at most)."""


def read_recorded(path: Path, fmt: str) -> RecordedLock:
    """A neuronctl lock (`fmt` "pylock" or "requirements"), read and validated once."""
    if fmt == "pylock":
        lock = load_pylock(path)
        tool = neuronctl_table(lock)
        if tool is None:
            raise InputError(f"{path}: no [tool.neuronctl] table; it was not written by neuronctl lock")
        pins = [(str(p.name), str(p.version)) for p in lock.packages]
        return RecordedLock(path, tool, _grouped(pins))
    lines = _requirements_lines(path)
    mark = next((ln for ln in lines if ln.startswith(REQUIREMENTS_MARK)), None)
    shown = REQUIREMENTS_MARK.strip()
    if mark is None:
        raise InputError(f"{path}: no '{shown}' line; it was not written by neuronctl lock")
    try:
        tool = json.loads(mark[len(REQUIREMENTS_MARK):])
    except (ValueError, RecursionError):
        raise InputError(f"{path}: the '{shown}' line is not valid JSON") from None
    if not isinstance(tool, dict):
        raise InputError(f"{path}: the '{shown}' line is not a JSON object")
    return RecordedLock(path, tool, _grouped(_requirement_pins(lines)))


def _requirements_lines(path: Path) -> list[str]:
    return read_text(path, "lock file").splitlines()


def _requirement_pins(lines: Sequence[str]) -> list[tuple[str, str]]:
    """(name, version) of each `name @ URL` line; the version from the wheel's file name."""
    from urllib.parse import unquote

    pins = []
    for line in lines:
        if " @ " in line and not line.startswith("#"):
            name, _, rest = line.partition(" @ ")
            words = rest.split()
            filename = words[0].rsplit("/", 1)[-1] if words else ""
            pins.append((name.strip(), unquote(filename.split("-")[1]) if "-" in filename else ""))
    return pins


def _grouped(pins: Sequence[tuple[str, str]]) -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for name, version in pins:
        out.setdefault(name, set()).add(version)
    return {name: frozenset(versions) for name, versions in out.items()}
