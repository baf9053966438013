"""Resolution for one target with resolvelib (the resolver core pip uses): full transitive
closure, markers evaluated in the target's environment, wheels chosen by the target's tags.

A failure names the conflicting requirements, who asked for each, the versions seen and the
index they came from (credentials stripped), and why other files were turned away.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version
from resolvelib import BaseReporter, ResolutionImpossible, ResolutionTooDeep, Resolver
from resolvelib.providers import AbstractProvider
from resolvelib.structs import RequirementInformation

from neuronctl.errors import OperationFailed
from neuronctl.resolvers.candidates import Rejected, VersionFiles, select_files
from neuronctl.resolvers.core_metadata import CoreMetadata
from neuronctl.resolvers.finder import Finder
from neuronctl.resolvers.simple_index import DistFile
from neuronctl.resolvers.targets import Target
from neuronctl.routing import redact_url

VersionFilter = Callable[[NormalizedName, Version], "str | None"]
"""(name, version) -> a reason to refuse that version, or None."""


@dataclass(frozen=True)
class Req:
    name: NormalizedName
    specifier: SpecifierSet
    extras: frozenset[str] = frozenset()
    source: str = ""
    """Who asked: "--with", "Neuron release 2.33.0", or "torch-neuronx 2.14.3.0"."""

    @property
    def key(self) -> str:
        return f"{self.name}[{','.join(sorted(self.extras))}]" if self.extras else self.name

    def __str__(self) -> str:
        extras = f"[{','.join(sorted(self.extras))}]" if self.extras else ""
        return f"{self.name}{extras}{self.specifier}"

    @classmethod
    def parse(cls, text: str | Requirement, source: str) -> Req:
        req = text if isinstance(text, Requirement) else Requirement(text)
        return cls(canonicalize_name(req.name), req.specifier,
                   frozenset(canonicalize_name(e) for e in req.extras), source)


@dataclass(frozen=True)
class Candidate:
    name: NormalizedName
    version: Version
    wheels: tuple[DistFile, ...]
    extras: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        return f"{self.name}[{','.join(sorted(self.extras))}]" if self.extras else self.name


@dataclass(frozen=True)
class Pin:
    name: NormalizedName
    version: Version
    wheels: tuple[DistFile, ...]
    index: str
    index_url: str


@dataclass(frozen=True)
class Resolution:
    target: Target
    pins: Mapping[NormalizedName, Pin]


@dataclass
class _Seen:
    versions: list[VersionFiles] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)


class NeuronProvider(AbstractProvider):  # type: ignore[type-arg]
    def __init__(self, finder: Finder, target: Target, version_filter: VersionFilter,
                 pinned: set[NormalizedName]) -> None:
        self.finder = finder
        self.target = target
        self.version_filter = version_filter
        self.pinned = pinned
        self.seen: dict[NormalizedName, _Seen] = {}

    def identify(self, requirement_or_candidate: Any) -> str:
        return str(requirement_or_candidate.key)

    def get_preference(self, identifier: Any, resolutions: Mapping[Any, Any], candidates: Mapping[Any, Any],
                       information: Mapping[Any, Any], backtrack_causes: Sequence[Any]) -> Any:
        name = identifier.split("[", 1)[0]
        causes = {c.requirement.name for c in backtrack_causes}
        return (name not in self.pinned, name not in causes, "[" in identifier, identifier)

    def _versions(self, name: NormalizedName) -> _Seen:
        seen = self.seen.get(name)
        if seen is None:
            versions, rejected = select_files(name, self.finder.files(name), self.target)
            kept = []
            for vf in versions:
                reason = self.version_filter(name, vf.version)
                if reason:
                    rejected.extend(Rejected(w.filename, str(vf.version), reason) for w in vf.wheels)
                else:
                    kept.append(vf)
            seen = self.seen[name] = _Seen(kept, rejected)
        return seen

    def find_matches(self, identifier: Any, requirements: Mapping[Any, Iterator[Req]],
                     incompatibilities: Mapping[Any, Iterator[Candidate]]) -> list[Candidate]:
        reqs = list(requirements[identifier])
        name = reqs[0].name if reqs else canonicalize_name(identifier.split("[", 1)[0])
        extras = frozenset().union(*(r.extras for r in reqs)) if reqs else frozenset()
        bad = {c.version for c in incompatibilities[identifier]}
        allow_pre = any(r.specifier.prereleases for r in reqs)
        out = []
        for vf in self._versions(name).versions:
            if vf.version in bad:
                continue
            if vf.version.is_prerelease and not allow_pre:
                continue
            if all(r.specifier.contains(vf.version, prereleases=True) for r in reqs):
                out.append(Candidate(name, vf.version, vf.wheels, extras))
        if out:
            self.finder.prefetch_metadata(out[0].wheels[0], name)
        return out

    def is_satisfied_by(self, requirement: Req, candidate: Candidate) -> bool:
        return requirement.name == candidate.name and \
            requirement.specifier.contains(candidate.version, prereleases=True)

    def _metadata(self, candidate: Candidate) -> CoreMetadata:
        return self.finder.metadata(candidate.wheels[0], candidate.name)

    def get_dependencies(self, candidate: Candidate) -> list[Req]:
        md = self._metadata(candidate)
        source = f"{candidate.name} {candidate.version}"
        env = self.target.markers
        out: list[Req] = []
        if candidate.extras:
            out.append(Req(candidate.name, SpecifierSet(f"=={candidate.version}"), frozenset(), source))
        for dep in md.requires_dist:
            marker = dep.marker
            base = marker is None or marker.evaluate({**env, "extra": ""})
            if candidate.extras:
                # An extra's own dependencies: those its marker switches on.
                wanted = not base and marker is not None and any(
                    marker.evaluate({**env, "extra": e}) for e in candidate.extras)
            else:
                wanted = base
            if wanted:
                out.append(Req.parse(dep, source))
        self.finder.prefetch(r.name for r in out)
        return out


def resolve(finder: Finder, target: Target, roots: Sequence[Req], *,
            version_filter: VersionFilter) -> Resolution:
    pinned = {r.name for r in roots if any(s.operator in ("==", "===") for s in r.specifier)}
    provider = NeuronProvider(finder, target, version_filter, pinned)
    finder.prefetch(r.name for r in roots)
    resolver: Resolver[Req, Candidate, str] = Resolver(provider, BaseReporter())
    try:
        result = resolver.resolve(roots, max_rounds=2000)
    except ResolutionImpossible as exc:
        raise OperationFailed(explain_failure(target, exc.causes, provider, finder)) from None
    except ResolutionTooDeep:
        raise OperationFailed(f"resolution for {target.label} did not settle after 2000 rounds; "
                              "narrow the --with requirements") from None
    pins = {}
    for key, cand in result.mapping.items():
        if cand.extras or key != cand.name:
            continue
        index, url = finder.index_of(cand.name)
        md = finder.metadata(cand.wheels[0], cand.name)
        if md.requires_python is not None and not md.requires_python.contains(
                target.markers["python_full_version"], prereleases=True):
            raise OperationFailed(f"{cand.name} {cand.version} requires Python {md.requires_python} "
                                  f"(its metadata), but the target is {target.python}")
        pins[cand.name] = Pin(cand.name, cand.version, cand.wheels, index, url)
    return Resolution(target, dict(sorted(pins.items())))


def explain_failure(target: Target, causes: Iterable[RequirementInformation[Req, Candidate]],
                    provider: NeuronProvider, finder: Finder) -> str:
    by_name: dict[NormalizedName, list[str]] = {}
    for info in causes:
        req = info.requirement
        who = req.source if info.parent is None else f"{info.parent.name} {info.parent.version}"
        by_name.setdefault(req.name, []).append(f"{req} (from {who})")
    parts = []
    for name, wants in sorted(by_name.items()):
        index, url = finder.index_of(name)
        seen = provider.seen.get(name, _Seen())
        versions = ", ".join(str(v.version) for v in seen.versions[:8]) or "none that fit"
        line = (f"{name}: {'; '.join(sorted(set(wants)))}; versions that fit {target.label} on index "
                f"{index} ({redact_url(url)}): {versions}")
        if seen.rejected:
            shown = "; ".join(f"{r.filename}: {r.reason}" for r in seen.rejected[:4])
            more = f" (+{len(seen.rejected) - 4} more)" if len(seen.rejected) > 4 else ""
            line += f"; turned away: {shown}{more}"
        parts.append(line)
    return f"cannot resolve for {target.label}: " + " | ".join(parts)
