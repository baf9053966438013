"""Parse a wheel's core metadata (METADATA / the PEP 658 sidecar): only what resolution needs,
checked against the file it claims to describe."""

from __future__ import annotations

from email.parser import HeaderParser

from msgspec import Struct
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, NormalizedName, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from neuronctl.errors import InputError


class MetadataMismatch(InputError):
    """Metadata that contradicts its own file (name, version) or the index page (Requires-Python):
    one of them lies, so the file is not used."""


class CoreMetadata(Struct, frozen=True):
    """The parts of a wheel's METADATA the resolver uses: name, version, dependencies."""

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
            raise InputError(f"{where}: invalid Requires-Dist {str(raw)[:200]!r}: {reason}") from None
    rp = msg.get("Requires-Python")
    try:
        requires_python = SpecifierSet(str(rp)) if rp else None
    except InvalidSpecifier:
        raise InputError(f"{where}: invalid Requires-Python {str(rp)[:80]!r}") from None
    return CoreMetadata(canonicalize_name(str(name)), str(version), tuple(requires), requires_python)


def checked_metadata(text: str, filename: str, page_requires_python: str | None,
                     where: str) -> CoreMetadata:
    """The parsed metadata; MetadataMismatch unless its Name and Version are the wheel file
    name's and its Requires-Python is the page's (where both state one)."""
    md = parse_core_metadata(text, where)
    try:
        name, version, _build, _tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return md  # not a wheel: nothing in its name to hold the metadata to
    if md.name != name:
        raise MetadataMismatch(f"{where}: its metadata names project {md.name!r}, the file is {name!r}")
    try:
        same_version = Version(md.version) == version
    except InvalidVersion:
        same_version = False
    if not same_version:
        raise MetadataMismatch(f"{where}: its metadata says version {md.version[:40]!r}, "
                               f"the file is {version}")
    if page_requires_python and md.requires_python is not None:
        try:
            page = SpecifierSet(page_requires_python)
        except InvalidSpecifier:
            page = None
        if page != md.requires_python:
            raise MetadataMismatch(f"{where}: the index page says requires-python "
                                   f"{page_requires_python[:80]!r}, its metadata "
                                   f"{str(md.requires_python)!r}; trusting neither")
    return md
