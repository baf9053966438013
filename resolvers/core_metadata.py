"""Parse a wheel's core metadata (METADATA / the PEP 658 sidecar): only what resolution needs."""

from __future__ import annotations

from dataclasses import dataclass
from email.parser import HeaderParser

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name

from neuronctl.errors import InputError


@dataclass(frozen=True)
class CoreMetadata:
    name: NormalizedName
    version: str
    requires_dist: tuple[Requirement, ...]
    requires_python: SpecifierSet | None


def parse_core_metadata(text: str, where: str) -> CoreMetadata:
    msg = HeaderParser().parsestr(text)
    name, version = msg.get("Name"), msg.get("Version")
    if not name or not version:
        raise InputError(f"{where}: metadata has no Name or Version")
    requires = []
    for raw in msg.get_all("Requires-Dist") or []:
        try:
            requires.append(Requirement(str(raw)))
        except InvalidRequirement as exc:
            reason = str(exc).splitlines()[0]
            raise InputError(f"{where}: invalid Requires-Dist {str(raw)!r}: {reason}") from None
    rp = msg.get("Requires-Python")
    try:
        requires_python = SpecifierSet(str(rp)) if rp else None
    except InvalidSpecifier:
        raise InputError(f"{where}: invalid Requires-Python {rp!r}") from None
    return CoreMetadata(canonicalize_name(str(name)), str(version), tuple(requires), requires_python)
