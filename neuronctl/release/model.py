"""The release model's data types: what a Neuron release pins, the set neuronctl knows, the
documented rules and the public sources they come from. Every other module of neuronctl.release
imports these; this one imports nothing else from the package, so nothing imports back."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, overload

from msgspec import Struct, field
from msgspec.structs import force_setattr
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from neuronctl.errors import InputError

MANIFEST_SCHEMA = 1
MAX_JSON_BYTES = 64 << 20
"""AWS's whole n2 manifest is ~100 kB; anything this large is not a release manifest."""
ReleaseFlavour = Literal["native", "xla", "none"]
"""A release's PyTorch flavour: native TorchNeuron, legacy XLA, or no PyTorch pins. The data
and JSON key for it is "backend" (the name the format has always had)."""
FLAVOURS: tuple[str, ...] = ("native", "xla", "none")
RELEASE_WORDS: tuple[str, ...] = ("latest", "newest")
"""What --release takes beside a version: `latest`, the default (the newest release whose whole
stack is published); `newest`, the newest known (a partly published one included)."""
SYSTEM_PACKAGES: tuple[str, ...] = (
    "aws-neuronx-dkms",
    "aws-neuronx-runtime-lib",
    "aws-neuronx-collectives",
    "aws-neuronx-tools",
)

RuleKind = Literal["support", "os", "runtime"]
"""A documented rule's kind: a support window, an OS rule, a driver/runtime rule."""
KINDS: tuple[str, ...] = ("support", "os", "runtime")


class Source(Struct, frozen=True):
    """One public source: its address, when it was read, and its title."""

    id: str
    url: str
    read: str
    title: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "read": self.read, **({"title": self.title} if self.title else {})}

    def cite(self) -> str:
        return f"{self.url} (read {self.read})"


class Rule(Struct, frozen=True):
    """One documented rule: where it applies, what it needs, AWS's words and the source id."""

    id: str
    kind: RuleKind
    says: str
    source: str
    releases: str = ""
    when: Mapping[str, Any] = field(default_factory=dict)
    need: Mapping[str, Any] = field(default_factory=dict)
    severity: Literal["fail", "warn"] = "fail"
    citation: str = ""
    """The source as a user reads it (URL, date read), filled from the sources table."""

    def applies_to(self, release: str) -> bool:
        """Whether the rule's release range holds `release`."""
        try:
            return not self.releases or Version(release) in SpecifierSet(self.releases)
        except InvalidVersion:
            return False

    def to_json(self) -> dict[str, Any]:
        def plain(table: Mapping[str, Any]) -> dict[str, Any]:
            return {k: list(v) if isinstance(v, tuple) else v for k, v in table.items()}

        return {"id": self.id, "kind": self.kind, "releases": self.releases,
                "when": plain(self.when), "need": plain(self.need), "says": self.says,
                "source": self.source, "severity": self.severity}


class Artifact(Struct, frozen=True):
    """One package version a release lists, with the chips and Pythons it is built for."""

    name: str
    version: str
    chips: tuple[str, ...] = ()
    python: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "chips": list(self.chips),
                "python": list(self.python)}


class Framework(Struct, frozen=True):
    """A PyTorch line of a release: which torch-neuronx build pairs with which torch."""

    flavour: Literal["native", "xla"]
    torch: str
    torch_neuronx: str
    chips: tuple[str, ...]
    python: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.flavour, "torch": self.torch, "torch_neuronx": self.torch_neuronx,
                "chips": list(self.chips), "python": list(self.python)}


class Release(Struct, frozen=True):
    """One Neuron release: the versions it pins, the chips and Pythons it supports."""

    version: str
    flavour: ReleaseFlavour
    torch: tuple[str, ...]
    python: tuple[str, ...]
    chips: tuple[str, ...]
    packages: Mapping[str, tuple[str, ...]]
    system: Mapping[str, str]
    status: str = "ga"
    date: str | None = None
    frameworks: tuple[Framework, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    notes: tuple[str, ...] = ()
    constraints: Mapping[str, str] = field(default_factory=dict)
    """Packages whose pin AWS has not published: name -> the constraint AWS's install recipe
    gives ("==2.*"; "" for unpinned). Resolved from the index, never guessed."""
    sources: Mapping[str, str] = field(default_factory=dict)
    """Value key (see neuronctl.release.provenance) -> source id in the manifest's sources table."""
    unpublished: tuple[str, ...] = ()
    """Value keys the data holds as not published (null in the file), e.g.
    "frameworks.2.9.0.2.15.32035.chips"."""
    rules: tuple[Rule, ...] = ()
    """The documented rules whose release range holds this release (the manifest's `rules`)."""

    @property
    def key(self) -> Version:
        return Version(self.version)

    def framework_for_torch(self, torch: str) -> Framework | None:
        """The framework line for a torch request such as "2.14", "2.14.0" or "2.14.0+cpu"; None
        for one that is not a version (a config's "2.x" is offered by no release)."""
        try:
            want = Version(torch)
        except InvalidVersion:
            return None
        for fw in self.frameworks:
            have = Version(fw.torch)
            if len(want.release) <= 2:
                if have.release[:2] == want.release[:2]:
                    return fw
            elif have.public == want.public:
                return fw
        return None

    def default_framework(self) -> Framework | None:
        """The newest framework of the release's own flavour."""
        for fw in self.frameworks:
            if fw.flavour == self.flavour:
                return fw
        return None

    def package_version(self, name: str) -> str | None:
        versions = self.packages.get(name)
        return versions[0] if versions else None

    def unpublished_pins(self) -> tuple[str, ...]:
        """The stack's packages (Python and system) whose version AWS has not published."""
        missing = tuple(name for name in SYSTEM_PACKAGES if name not in self.system)
        return (*self.constraints, *missing)

    @property
    def complete(self) -> bool:
        """Whether the whole stack's versions are published (a release to default to)."""
        return not self.unpublished_pins()

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "date": self.date,
            "status": self.status,
            "backend": self.flavour,
            "torch": list(self.torch),
            "python": list(self.python),
            "chips": list(self.chips),
            "packages": {k: list(v) for k, v in self.packages.items()},
            "system": dict(self.system),
            "frameworks": [self._nulled(f"frameworks.{f.torch_neuronx}", f.to_json())
                           for f in self.frameworks],
            "artifacts": [self._nulled(f"artifacts.{a.name}=={a.version}", a.to_json())
                          for a in self.artifacts],
            "notes": list(self.notes),
            **({"unpublished": dict(self.constraints)} if self.constraints else {}),
            **({"sources": dict(self.sources)} if self.sources else {}),
        }

    def _nulled(self, base: str, doc: dict[str, Any]) -> dict[str, Any]:
        """A value the data holds as not published is written back as null, never as []."""
        for key in ("chips", "python"):
            if f"{base}.{key}" in self.unpublished:
                doc[key] = None
        return doc


class OnDemand(Sequence[Release]):
    """Releases newest first, each built (parsed and validated) from its entry the first time it
    is read: a command that uses one release of the bundled data builds that one, not all 31
    (issue 36). `order` holds the entries' indexes in the data, newest first; `build` parses one
    entry (the parser's own checks and error messages)."""

    def __init__(self, order: Sequence[int], build: Callable[[int], Release]) -> None:
        self._order = tuple(order)
        self._build = build
        self._built: list[Release | None] = [None] * len(self._order)
        self._lock = threading.Lock()  # the doctor's checks read it from their threads: one build

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, index: int) -> Release: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Release, ...]: ...

    def __getitem__(self, index: int | slice) -> Release | tuple[Release, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        release = self._built[index]  # IndexError past the end, as a tuple's
        if release is None:
            with self._lock:
                release = self._built[index]
                if release is None:
                    release = self._built[index] = self._build(self._order[index])
        return release

    @property
    def built(self) -> int:
        """How many releases have been built so far."""
        return sum(r is not None for r in self._built)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"OnDemand({len(self)} releases, {self.built} built)"


class Manifest(Struct, frozen=True):
    """The Neuron releases neuronctl knows (bundled or a --manifest file), newest first."""

    releases: Sequence[Release]
    """A tuple, or OnDemand's releases (already newest first) for the bundled data."""
    source: str
    origin: str = "bundled"
    generated_from: Mapping[str, str] = field(default_factory=dict)
    sources: Mapping[str, Source] = field(default_factory=dict)
    """Source id -> where a value came from (URL, date read)."""
    compiled: str | None = None
    """The ISO date the data was compiled (read its sources); None where not recorded."""
    rules: tuple[Rule, ...] = ()
    """The documented rules (support windows, OS, driver/runtime), each with its source."""

    def cite(self, source_id: str) -> str:
        """A source id as a user reads it: its URL and the date it was read."""
        found = self.sources.get(source_id)
        return found.cite() if found else source_id

    def __post_init__(self) -> None:
        if not isinstance(self.releases, OnDemand):  # built newest first
            ordered = tuple(sorted(self.releases, key=lambda r: r.key, reverse=True))
            force_setattr(self, "releases", ordered)

    @property
    def latest(self) -> Release:
        return self.releases[0]

    def latest_with_flavour(self, flavour: str) -> Release | None:
        """The newest release of `flavour` whose whole stack is published (a partly published
        one is used only when asked for by --release)."""
        return next((r for r in self.releases if r.flavour == flavour and r.complete), None)

    @property
    def default(self) -> Release:
        """The release used without --release: the newest fully published native one."""
        return (self.latest_with_flavour("native")
                or next((r for r in self.releases if r.complete), self.latest))

    def find(self, version: str) -> Release | None:
        """A release by its version, or by a word: `latest` (the default: the newest whose whole
        stack is published) or `newest` (the newest known, a partly published one included)."""
        if version in RELEASE_WORDS:
            return self.default if version == "latest" else self.latest
        try:
            want = Version(version)
        except InvalidVersion:
            return None
        return next((r for r in self.releases if r.key == want), None)

    def get(self, version: str) -> Release:
        release = self.find(version)
        if release is None:
            near = ", ".join(self.nearest(version))
            raise InputError(
                f"unknown Neuron release {version!r} in {self.source}; nearest known: {near} "
                "(or latest, newest)"
            )
        return release

    def nearest(self, version: str, count: int = 3) -> list[str]:
        try:
            want = Version(version)
            target = ((*want.release, 0, 0, 0))[:3]
        except InvalidVersion:
            return [r.version for r in self.releases[:count]]

        def distance(release: Release) -> tuple[int, ...]:
            have = ((*release.key.release, 0, 0, 0))[:3]
            return tuple(abs(a - b) for a, b in zip(have, target, strict=True))

        return [r.version for r in sorted(self.releases, key=distance)[:count]]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": MANIFEST_SCHEMA}
        if self.compiled:
            out["compiled"] = self.compiled
        if self.generated_from:
            out["generated_from"] = dict(self.generated_from)
        if self.sources:
            out["sources"] = {k: s.to_json() for k, s in self.sources.items()}
        if self.rules:
            out["rules"] = [r.to_json() for r in self.rules]
        out["releases"] = [r.to_json() for r in self.releases]
        return out
