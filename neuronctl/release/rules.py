"""The documented rules of the Neuron stack, kept as data (releases.json `rules`), evaluated by
pure functions: support windows (a package line, chip, Python or PyTorch line a release no longer
supports), OS rules, and the driver/runtime/dkms rules AWS states. Every rule carries AWS's words
and its source; a fact that is not known (None) never breaks a rule.

A rule breaks when its release range holds the release, every `when` condition holds, and some
`need` condition does not (a rule without `need` forbids what `when` describes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from msgspec import Struct
from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from neuronctl.errors import InputError
from neuronctl.jsonfields import Fields
from neuronctl.release.model import KINDS, Rule, Source

LIST_KEYS = ("backend", "chips", "python", "torch", "packages", "os")
SPEC_KEYS = ("driver", "runtime")


class Situation(Struct, frozen=True):
    """What is known of a combination: the release and, where known, the rest."""

    release: str
    flavour: str | None = None
    """native or xla: the PyTorch flavour (a rule's `when` and `need` call it "backend")."""
    chip: str | None = None
    python: str | None = None
    """The Python line, "3.12"."""
    torch: str | None = None
    """The PyTorch line, "2.14"."""
    packages: frozenset[str] | None = None
    os: str | None = None
    """"ubuntu 24.04": os-release ID and VERSION_ID."""
    driver: str | None = None
    runtime: str | None = None


FACT_NAMES: Mapping[str, str] = {"chips": "chip", "backend": "flavour"}
"""A rule's key (the data's name) -> the Situation field it reads."""


def _fact(s: Situation, key: str) -> Any:
    return getattr(s, FACT_NAMES.get(key, key))


def _holds(key: str, want: Any, have: Any) -> bool | None:
    """Whether one condition holds; None where the fact is unknown."""
    if have is None:
        return None
    if key in SPEC_KEYS:
        try:
            return Version(have) in SpecifierSet(want)
        except InvalidVersion:
            return None
    if key == "packages":
        return bool(set(want) & set(have))
    if key == "os":  # "ubuntu" holds for every Ubuntu, "ubuntu 24.04" for that one
        return any(have == w or have.startswith(f"{w} ") for w in want)
    return have in want


def broken(rule: Rule, s: Situation) -> bool:
    """Whether `s` breaks `rule`: a rule whose facts are not all known does not break."""
    try:
        if rule.releases and Version(s.release) not in SpecifierSet(rule.releases):
            return False
    except InvalidVersion:
        return False
    for key, want in rule.when.items():
        if _holds(key, want, _fact(s, key)) is not True:
            return False
    if not rule.need:
        return True
    return any(_holds(key, want, _fact(s, key)) is False for key, want in rule.need.items())


def broken_rules(rules: Iterable[Rule], s: Situation, kinds: Iterable[str] = KINDS) -> list[Rule]:
    wanted = set(kinds)
    return [r for r in rules if r.kind in wanted and broken(r, s)]


def describe(rule: Rule, cite: str | None = None) -> str:
    """A broken rule as a user reads it: AWS's words and where they are."""
    return f"{rule.says} [{rule.id}; source: {cite or rule.citation or rule.source}]"


_RANGE_ITEM = re.compile(r"(~=|==|!=|<=|>=|<|>)[0-9A-Za-z.!+*_-]{1,64}")


def normal_range(spec: str) -> str:
    """A version range in its normal form: PEP 440 comparisons (packaging's Specifier), each as
    packaging writes it, in the given order, joined by commas, no spaces. ValueError for what is
    not one, and for `===` (arbitrary equality takes any string: quotes, newlines)."""
    parts = [p for p in spec.split(",") if p.strip()] if spec.strip() else []
    try:
        SpecifierSet(spec)
        normal = [str(Specifier(p.strip())) for p in parts]
    except InvalidSpecifier:
        raise ValueError(f"{spec[:40]!r} is not a version range") from None
    bad = [n for n in normal if not _RANGE_ITEM.fullmatch(n)]
    if bad or len(normal) > 16:
        raise ValueError(f"{spec[:40]!r} is not a version range (PEP 440 comparisons only)")
    return ",".join(normal)


def version_range(f: Fields, name: str, spec: str) -> str:
    """A rule's range, checked where it is loaded (naming the rule's field) and kept in its
    normal form: what the Dockerfile's labels and doctor's messages show."""
    try:
        return normal_range(spec)
    except ValueError as exc:
        raise f.fail(name, str(exc)) from None


def _conditions(f: Fields, key: str) -> dict[str, Any]:
    table = f.obj(key, required=False)
    if table is None:
        return {}
    out: dict[str, Any] = {}
    for name in table:
        if name in LIST_KEYS:
            out[name] = tuple(table.texts(name))
        elif name in SPEC_KEYS:
            out[name] = version_range(table, name, table.req_text(name))
        else:
            raise table.fail(name, f"unknown condition (known: {', '.join(LIST_KEYS + SPEC_KEYS)})")
    return out


def parse_rules(top: Fields, sources: Mapping[str, Source]) -> tuple[Rule, ...]:
    out = []
    seen: set[str] = set()
    for f in top.objects("rules", required=False):
        rule_id, kind, source = f.req_text("id"), f.req_text("kind"), f.req_text("source")
        if kind not in KINDS:
            raise f.fail("kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
        if source not in sources:
            raise f.fail("source", f"unknown source {source!r}")
        if rule_id in seen:
            raise f.fail("id", f"duplicate rule {rule_id!r}")
        seen.add(rule_id)
        releases = version_range(f, "releases", f.text("releases", required=False) or "")
        severity = f.text("severity", required=False) or "fail"
        if severity not in ("fail", "warn"):
            raise f.fail("severity", f"expected fail or warn, got {severity!r}")
        cite = sources[source].cite()
        out.append(Rule(rule_id, kind, f.req_text("says"), source, releases,  # type: ignore[arg-type]
                        _conditions(f, "when"), _conditions(f, "need"),
                        "fail" if severity == "fail" else "warn", cite))
    return tuple(out)


def enforce(rules: Iterable[Rule], situations: Iterable[Situation],
            cite: Callable[[str], str] | None = None, *, allow: bool, what: str) -> list[str]:
    """lock's and install's check: a combination a fail-severity rule forbids is an InputError
    (exit 2) naming the rule and its source, unless `allow` (--allow-unsupported); returns the
    lines to show as notes (warn-severity rules, and the rules --allow-unsupported overrode)."""
    found: dict[str, Rule] = {}
    for s in situations:
        for rule in broken_rules(rules, s):
            found.setdefault(rule.id, rule)
    forbidding = [r for r in found.values() if r.severity == "fail"]
    if forbidding and not allow:
        raise InputError(f"{what}: " + "; ".join(_said(r, cite) for r in forbidding),
                         hint="--allow-unsupported proceeds where you know better (a source "
                              "build, a container with another OS)")
    return [("allowed (--allow-unsupported): " if r.severity == "fail" else "")
            + _said(r, cite) for r in found.values()]


def _said(rule: Rule, cite: Callable[[str], str] | None) -> str:
    return describe(rule, cite(rule.source) if cite else None)
