"""What a replaced stack leaves behind: the installed packages that only the packages being
removed or replaced required (a CUDA torch's nvidia-* and triton when the CPU torch of a Neuron
stack takes its place). Pure: a walk over the installed Requires-Dist graph.

A package is a leftover when (1) it was required, directly or through other leftovers, by a
package that goes (removed) or is replaced (another version or build comes in), judged by the
*installed* metadata of that package, and (2) nothing that stays requires it: not a package the
plan installs or keeps, nor anything else installed that the plan leaves alone.

A package the user asked for by name (its dist-info holds REQUESTED, PEP 376) is kept: user intent
wins. But an install that names every package (`--no-deps` from a lock, as neuronctl's own, or
`pip install *.whl`) marks them all REQUESTED, which then says nothing: REQUESTED protects only
when some of what the going packages pulled in lacks it.

The Requires-Dist lines come from the probed environment, so they are untrusted text: a line that
does not parse names nothing (it can neither add a leftover nor be relied on), names are
canonicalized, and only packages already installed can ever be listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from typing import Protocol

from msgspec import Struct
from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

TOOLING = frozenset({"pip", "setuptools", "wheel"})
"""Installer tooling a user relies on whatever required it (torch requires setuptools): never a
leftover."""
MAX_REQUIREMENT = 2048


class Installed(Protocol):
    @property
    def version(self) -> str: ...

    @property
    def requires(self) -> tuple[str, ...]: ...


class Going(Struct, frozen=True):
    """A package that leaves (removed) or whose installed build is replaced."""

    name: str
    version: str
    how: str
    """"replaced" or "removed"."""


def _requirement(text: str) -> Requirement | None:
    if not isinstance(text, str) or len(text) > MAX_REQUIREMENT:
        return None
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def _holds(req: Requirement, markers: Mapping[str, str], with_extras: bool) -> bool:
    """Whether the requirement applies here. An extra's requirement counts only with_extras (for
    what stays, which may have been installed with any of its extras); a marker that cannot be
    evaluated counts as holding for what stays and not for what goes (keep when unsure)."""
    if req.marker is None:
        return True
    marker_text = str(req.marker)
    if "extra" in marker_text and with_extras:
        return True
    try:
        return bool(req.marker.evaluate({**markers, "extra": ""}))
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName, ValueError, TypeError):
        return with_extras


def requirements_of(dist: Installed, markers: Mapping[str, str], *, with_extras: bool) -> set[str]:
    """Canonical names `dist`'s installed Requires-Dist asks for in this environment."""
    out = set()
    for text in dist.requires:
        req = _requirement(text)
        if req is not None and _holds(req, markers, with_extras):
            out.add(str(canonicalize_name(req.name)))
    return out


def _reached_from(going: Iterable[Going], installed: Mapping[str, Installed],
                  markers: Mapping[str, str], excluded: Set[str]) -> dict[str, list[Going]]:
    """Candidate name -> the going packages it was (transitively) required by."""
    reached: dict[str, list[Going]] = {}
    for root in going:
        stack = [root.name]
        seen = {root.name}
        while stack:
            dist = installed.get(stack.pop())
            if dist is None:
                continue
            for dep in sorted(requirements_of(dist, markers, with_extras=False)):
                if dep in seen or dep in excluded or dep not in installed:
                    continue
                seen.add(dep)
                reached.setdefault(dep, []).append(root)
                stack.append(dep)
    return reached


def leftovers(installed: Mapping[str, Installed], going: Iterable[Going], staying: Set[str],
              markers: Mapping[str, str]) -> dict[str, str]:
    """Canonical name -> why, for each installed package that only the `going` packages required.

    `installed`: canonical name -> its installed metadata; `going`: what the plan removes or
    replaces; `staying`: the canonical names the plan installs or keeps (the target's new stack,
    whose own dependencies the source lists, so they stay by being in it)."""
    going = [Going(str(canonicalize_name(g.name)), g.version, g.how) for g in going]
    going_names = {g.name for g in going}
    excluded = set(staying) | going_names | TOOLING
    candidates = _reached_from(going, installed, markers, excluded)
    asked_for = {name for name in candidates if getattr(installed[name], "requested", False) is True}
    if asked_for == set(candidates):
        asked_for = set()  # all of them marked (or none): the mark tells nothing
    # Everything installed that is neither going nor a candidate stays, and so does whatever it
    # requires (candidates it requires are rescued, and what those require in turn).
    kept = [name for name in installed if name not in going_names and name not in candidates]
    kept += sorted(asked_for)
    rescued: set[str] = set(asked_for)
    stack = list(kept)
    while stack:
        dist = installed.get(stack.pop())
        if dist is None:
            continue
        for dep in requirements_of(dist, markers, with_extras=True):
            if dep in candidates and dep not in rescued:
                rescued.add(dep)
                stack.append(dep)
    return {name: _why(roots) for name, roots in sorted(candidates.items()) if name not in rescued}


def _why(roots: list[Going]) -> str:
    named = " and ".join(f"{g.name} {g.version}" for g in roots[:3])
    more = f" and {len(roots) - 3} more" if len(roots) > 3 else ""
    hows = {g.how for g in roots}
    which = next(iter(hows)) if len(hows) == 1 else "replaced or removed"
    verb = "is" if len(roots) == 1 else "are"
    return f"only required by {named}{more}, which {verb} {which}"
