"""Resolution for one target with resolvelib (the resolver core pip uses): full transitive
closure, markers evaluated in the target's environment, wheels chosen by the target's tags.

As in pip, a candidate's Requires-Python (from its metadata, which may say more than the index
page) is a dependency on the special identifier "<python>", which only the target's Python
satisfies, so resolvelib backtracks to an older version instead of failing. A candidate that
cannot be used once its metadata is read (metadata contradicting its file or the page, a
dependency on a direct URL) depends on "<unusable>", which nothing satisfies.

A failure names the conflicting requirements, who asked for each, the versions seen and the
index they came from (credentials stripped), and why other files were turned away.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from msgspec import Struct, field
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version
from resolvelib import BaseReporter, ResolutionImpossible, ResolutionTooDeep, Resolver
from resolvelib.providers import AbstractProvider
from resolvelib.structs import RequirementInformation

from neuronctl.errors import OperationFailed
from neuronctl.resolvers.candidates import Rejected, VersionFiles, select_files
from neuronctl.resolvers.core_metadata import CoreMetadata, MetadataMismatch
from neuronctl.resolvers.finder import Finder
from neuronctl.resolvers.simple_index import DistFile
from neuronctl.resolvers.targets import PlatformTarget
from neuronctl.routing import redact_url

PYTHON = NormalizedName("<python>")
UNUSABLE = NormalizedName("<unusable>")
SPECIAL = frozenset({PYTHON, UNUSABLE})

VersionFilter = Callable[[NormalizedName, Version], "str | None"]
"""(name, version) -> a reason to refuse that version, or None."""


class Req(Struct, frozen=True):
    """One requirement in the resolution, and who asked for it."""

    name: NormalizedName
    specifier: SpecifierSet
    extras: frozenset[str] = frozenset()
    source: str = ""
    """Who asked: "--with", "Neuron release 2.33.0", or "torch-neuronx 2.14.3.0"."""
    refusal: str | None = None
    """On "<unusable>": why the asking candidate cannot be used."""

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


class Candidate(Struct, frozen=True):
    """One version of a package the resolver may pin, with its fitting wheels."""

    name: NormalizedName
    version: Version
    wheels: tuple[DistFile, ...]
    extras: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        return f"{self.name}[{','.join(sorted(self.extras))}]" if self.extras else self.name


class Pin(Struct, frozen=True):
    """A package as the resolution pinned it, with its wheels and index."""

    name: NormalizedName
    version: Version
    wheels: tuple[DistFile, ...]
    index: str
    index_url: str


class Resolution(Struct, frozen=True):
    """The pins a resolution chose for one target."""

    target: PlatformTarget
    pins: Mapping[NormalizedName, Pin]


class _Seen(Struct):
    """What the resolver has read of one package: the versions that fit, the files rejected."""

    versions: list[VersionFiles] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)


class NeuronProvider(AbstractProvider):  # type: ignore[type-arg]
    def __init__(self, finder: Finder, target: PlatformTarget, version_filter: VersionFilter,
                 pinned: set[NormalizedName]) -> None:
        self.finder = finder
        self.target = target
        self.version_filter = version_filter
        self.pinned = pinned
        self.seen: dict[NormalizedName, _Seen] = {}
        self.python = Candidate(PYTHON, Version(target.markers["python_full_version"]), ())
        self._looked_ahead: set[tuple[str, frozenset[str]]] = set()

    def identify(self, requirement_or_candidate: Any) -> str:
        return str(requirement_or_candidate.key)

    def get_preference(self, identifier: Any, resolutions: Mapping[Any, Any], candidates: Mapping[Any, Any],
                       information: Mapping[Any, Any], backtrack_causes: Sequence[Any]) -> Any:
        if identifier in SPECIAL:  # decided at once: they only ever confirm or refuse a candidate
            return (False, False, False, "")
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
        if identifier in SPECIAL:  # (a backjump may have marked the target's Python incompatible)
            fits = all(self.is_satisfied_by(r, self.python) for r in reqs) and \
                not any(c.version == self.python.version for c in incompatibilities[identifier])
            return [self.python] if identifier == PYTHON and fits else []
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
            first = out[0].wheels[0]
            ahead = (first.url, extras) not in self._looked_ahead
            self._looked_ahead.add((first.url, extras))
            self.finder.prefetch_metadata(first, name, self._ahead(extras) if ahead else None)
        return out

    def _ahead(self, extras: frozenset[str]) -> Callable[[CoreMetadata], None]:
        """Once the metadata of the candidate the resolver is offered first is in (on the fetch
        worker that read it): its dependencies' pages, fetched ahead (Finder.ahead), as uv
        prefetches. The resolver asks for them when it pins the candidate, and it pins one
        package at a time: one whose own metadata is slow (two range reads of a large wheel)
        no longer holds up the pages of the others' dependencies. One level only, and pages
        only: no version of theirs is guessed."""
        def ahead(md: CoreMetadata) -> None:
            try:
                wanted = self._wanted_dependencies(md, extras)
            except ValueError:  # a marker that cannot be evaluated: get_dependencies says so
                return
            self.finder.ahead(dep.name for dep in wanted if dep.url is None)

        return ahead

    def is_satisfied_by(self, requirement: Req, candidate: Candidate) -> bool:
        return requirement.name == candidate.name and requirement.refusal is None and \
            requirement.specifier.contains(candidate.version, prereleases=True)

    def _turn_away(self, candidate: Candidate, reason: str) -> None:
        rejected = self.seen.setdefault(candidate.name, _Seen()).rejected
        for wheel in candidate.wheels:  # once, however often backtracking asks again
            entry = Rejected(wheel.filename, str(candidate.version), reason)
            if entry not in rejected:
                rejected.append(entry)

    def _refused(self, candidate: Candidate, source: str, reason: str) -> list[Req]:
        self._turn_away(candidate, reason)
        return [Req(UNUSABLE, SpecifierSet(), source=source, refusal=reason)]

    def get_dependencies(self, candidate: Candidate) -> list[Req]:
        if candidate.name in SPECIAL:
            return []
        source = f"{candidate.name} {candidate.version}"
        try:
            md = self.finder.metadata(candidate.wheels[0], candidate.name)
        except MetadataMismatch as exc:
            return self._refused(candidate, source, f"unusable: {exc}")
        out: list[Req] = []
        if md.requires_python is not None:
            if not md.requires_python.contains(self.python.version, prereleases=True):
                self._turn_away(candidate, f"requires-python {md.requires_python} (its metadata)")
            out.append(Req(PYTHON, md.requires_python, source=source))
        if candidate.extras:
            out.append(Req(candidate.name, SpecifierSet(f"=={candidate.version}"), frozenset(), source))
        try:
            wanted = self._wanted_dependencies(md, candidate.extras)
        except ValueError as exc:  # packaging's UndefinedComparison: a marker such as ~= "foo"
            return self._refused(candidate, source, f"unusable: a Requires-Dist marker cannot be "
                                 f"evaluated ({str(exc)[:120]})")
        for dep in wanted:
            if dep.url:
                return self._refused(candidate, source, f"unusable: depends on {dep.name} from a "
                                     "direct URL, which a lock from indexes cannot pin")
            out.append(Req.parse(dep, source))
        self.finder.prefetch(r.name for r in out if r.name not in SPECIAL)
        return out

    def _wanted_dependencies(self, md: CoreMetadata, extras: frozenset[str]) -> list[Requirement]:
        env = self.target.markers
        out = []
        for dep in md.requires_dist:
            marker = dep.marker
            base = marker is None or marker.evaluate({**env, "extra": ""})
            if extras:
                # An extra's own dependencies: those its marker switches on.
                wanted = not base and marker is not None and any(
                    marker.evaluate({**env, "extra": e}) for e in extras)
            else:
                wanted = base
            if wanted:
                out.append(dep)
        return out


def resolve(finder: Finder, target: PlatformTarget, roots: Sequence[Req], *,
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
        if cand.extras or key != cand.name or cand.name in SPECIAL:
            continue
        index, url = finder.index_of(cand.name)
        pins[cand.name] = Pin(cand.name, cand.version, cand.wheels, index, url)
    return Resolution(target, dict(sorted(pins.items())))


def explain_failure(target: PlatformTarget, causes: Iterable[RequirementInformation[Req, Candidate]],
                    provider: NeuronProvider, finder: Finder) -> str:
    by_name: dict[NormalizedName, list[str]] = {}
    refusals: list[str] = []
    for info in causes:
        req, parent = info.requirement, info.parent
        who = req.source if parent is None else f"{parent.name} {parent.version}"
        if req.name in SPECIAL:
            if provider.is_satisfied_by(req, provider.python):
                continue  # a Requires-Python the target meets is no part of the conflict
            refusals.append(f"{who}: {req.refusal}" if req.refusal else
                            f"{who} requires Python {req.specifier} (its metadata), the target is "
                            f"{target.python}")
            if parent is not None:  # and its project's versions and files turned away
                by_name.setdefault(parent.name, [])
        else:
            by_name.setdefault(req.name, []).append(f"{req} (from {who})")
    parts = [_project_line(name, wants, target, provider, finder) for name, wants in sorted(by_name.items())]
    return f"cannot resolve for {target.label}: " + " | ".join(parts + sorted(set(refusals)))


def _project_line(name: NormalizedName, wants: list[str], target: PlatformTarget, provider: NeuronProvider,
                  finder: Finder) -> str:
    index, url = finder.index_of(name)
    seen = provider.seen.get(name, _Seen())
    versions = ", ".join(str(v.version) for v in seen.versions[:8]) or "none that fit"
    asked = f"{'; '.join(sorted(set(wants)))}; " if wants else ""
    line = (f"{name}: {asked}versions that fit {target.label} on index {index} ({redact_url(url)}): "
            f"{versions}")
    if seen.rejected:
        shown = "; ".join(f"{r.filename}: {r.reason}" for r in seen.rejected[:4])
        more = f" (+{len(seen.rejected) - 4} more)" if len(seen.rejected) > 4 else ""
        line += f"; turned away: {shown}{more}"
    return line
