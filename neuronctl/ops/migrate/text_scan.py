"""Requirement lists and settings outside Python: requirements/constraints files, pyproject.toml,
setup.cfg, Dockerfiles, shell scripts and YAML (CI files, Kubernetes specs). Read line by line,
never run: an environment variable is found where it is named, a requirement where a line (or a
`pip install` word) parses as one of the watched packages."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from msgspec import Struct
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from neuronctl.ops.migrate.python_scan import Hit, env_rule

_ENV_WORD = re.compile(r"(?<![A-Za-z0-9_])(PJRT_DEVICE|XLA_[A-Z0-9_]+|NEURON_CC_FLAGS)(?![A-Za-z0-9_])")
_INSTALL = re.compile(r"\b(?:pip3?|uv\s+pip|uv)\s+(?:install|add)\b(?P<rest>.*)")
_XLA_LIBRARIES = {"neuronx-distributed", "transformers-neuronx", "optimum-neuron"}
WATCHED = {"torch-neuronx", "torch-xla", "libneuronxla", "neuronx-cc", "libtorch-neuronx-lite",
           *_XLA_LIBRARIES}


class Versions(Struct, frozen=True):
    """What the native line looks like, from the release data: the versions a pin must allow."""

    torch_neuronx: tuple[str, ...]
    neuronx_cc: tuple[str, ...]
    recipe: str


def _allows_any(spec: SpecifierSet, versions: tuple[str, ...]) -> bool:
    return any(spec.contains(v, prereleases=True) for v in versions)


def requirement_rule(text: str, versions: Versions) -> tuple[str, str] | None:
    """(rule, requirement as written) for a requirement of the legacy line, or None."""
    try:
        req = Requirement(text.strip())
    except InvalidRequirement:
        return None
    name = canonicalize_name(req.name)
    if name not in WATCHED or req.url:
        return None
    spec = req.specifier
    if name == "torch-neuronx":
        legacy = not str(spec) or not _allows_any(spec, versions.torch_neuronx)
        return ("NRN701", str(req)) if legacy else None
    if name == "torch-xla":
        return "NRN702", str(req)
    if name == "libneuronxla":
        return ("NRN703", str(req)) if str(spec) and not _allows_any(spec, ("3.0.0", "3.9999")) else None
    if name == "neuronx-cc":
        old = str(spec) and versions.neuronx_cc and not _allows_any(spec, versions.neuronx_cc)
        return ("NRN704", str(req)) if old else None
    if name == "libtorch-neuronx-lite":
        return "NRN705", str(req)
    return "NRN706", str(req)


def _code(line: str, comment: str = "#") -> str:
    """The line without its comment (a '#' at the start or after a space)."""
    if line.lstrip().startswith(comment):
        return ""
    cut = line.find(" " + comment)
    return line if cut < 0 else line[:cut]


def requirements_file(text: str, versions: Versions) -> Iterator[Hit]:
    for number, line in enumerate(text.splitlines(), 1):
        code = _code(line).strip().removesuffix("\\").strip()  # a trailing backslash: --hash lines follow
        if not code or code.startswith("-"):
            continue
        found = requirement_rule(code.split(" --")[0], versions)  # options (--hash) after it
        if found:
            yield Hit(number, line.find(code) + 1, found[0], found[1])


def strings_in_lines(text: str, strings: list[str], versions: Versions) -> Iterator[Hit]:
    """Requirement strings (from a parsed TOML or setup.py) located by their first line."""
    lines = text.splitlines()
    for value in strings:
        found = requirement_rule(value, versions)
        if not found:
            continue
        needle = value if any(value in line for line in lines) else Requirement(value).name
        number = next((i for i, line in enumerate(lines, 1) if needle in line), 1)
        col = lines[number - 1].find(needle) + 1 if lines else 1
        yield Hit(number, max(col, 1), found[0], found[1])


def pyproject_requirements(data: dict[str, object]) -> list[str]:
    """Every dependency string of a pyproject.toml: [project] dependencies and extras, PEP 735
    dependency groups, build-system requires."""
    found: list[str] = []

    def take(value: object) -> None:
        if isinstance(value, list):
            found.extend(v for v in value if isinstance(v, str))

    project = data.get("project")
    if isinstance(project, dict):
        take(project.get("dependencies"))
        extras = project.get("optional-dependencies")
        for value in extras.values() if isinstance(extras, dict) else ():
            take(value)
    groups = data.get("dependency-groups")
    for value in groups.values() if isinstance(groups, dict) else ():
        take(value)
    build = data.get("build-system")
    if isinstance(build, dict):
        take(build.get("requires"))
    tool = data.get("tool")
    uv = tool.get("uv") if isinstance(tool, dict) else None
    for key in ("dev-dependencies", "constraint-dependencies", "override-dependencies"):
        take(uv.get(key) if isinstance(uv, dict) else None)
    poetry = tool.get("poetry") if isinstance(tool, dict) else None
    if isinstance(poetry, dict):
        found.extend(_poetry(poetry))
    return found


def _poetry(poetry: dict[str, Any]) -> Iterator[str]:
    """Poetry's dependency tables as requirement strings (its caret and tilde constraints
    translated as Poetry defines them)."""
    tables = [poetry.get("dependencies"), poetry.get("dev-dependencies")]
    groups = poetry.get("group")
    if isinstance(groups, dict):
        tables += [g.get("dependencies") for g in groups.values() if isinstance(g, dict)]
    for table in tables:
        for name, spec in table.items() if isinstance(table, dict) else ():
            version = spec.get("version", "*") if isinstance(spec, dict) else spec
            if isinstance(name, str) and isinstance(version, str):
                yield name + _poetry_spec(version.strip())


def _poetry_spec(version: str) -> str:
    """`^2.1` -> `>=2.1,<3`, `~2.1` -> `>=2.1,<2.2`, `2.1.2` -> `==2.1.2`, `*` -> ``."""
    if version in ("", "*"):
        return ""
    if version[0] in "^~":
        parts = [p for p in version[1:].split(".") if p.isdigit()]
        if not parts:
            return ""
        if version[0] == "^":
            cut = next((i for i, p in enumerate(parts) if int(p)), len(parts) - 1)
        else:
            cut = min(len(parts) - 1, 1)
        upper = [*parts[:cut], str(int(parts[cut]) + 1)]
        return f">={'.'.join(parts)},<{'.'.join(upper)}"
    return f"=={version}" if version[0].isdigit() else version


_CFG_KEYS = ("install_requires", "setup_requires", "tests_require")


def setup_cfg(text: str, versions: Versions) -> Iterator[Hit]:
    """The requirement lists of a setup.cfg: [options] install_requires / setup_requires /
    tests_require, and every key of [options.extras_require]; values on the key's line or on
    its indented continuation lines."""
    section, inside = "", False
    for number, line in enumerate(text.splitlines(), 1):
        code = _code(line, "#").rstrip()
        if not code.strip():
            continue
        if code.startswith("["):
            section, inside = code.strip("[] "), False
            continue
        if not code[0].isspace():  # a key = value line
            key, eq, value = code.partition("=")
            inside = bool(eq) and (section == "options.extras_require"
                                   or (section == "options" and key.strip() in _CFG_KEYS))
            if inside and value.strip():
                yield from _one(number, line, value.strip(), versions)
        elif inside:
            yield from _one(number, line, code.strip(), versions)


def _one(number: int, line: str, text: str, versions: Versions) -> Iterator[Hit]:
    found = requirement_rule(text, versions)
    if found:
        yield Hit(number, max(line.find(text), 0) + 1, found[0], found[1])


def settings_and_installs(text: str, versions: Versions, comment: str = "#") -> Iterator[Hit]:
    """Dockerfiles, shell and YAML: each XLA-era variable named on a line, each watched package
    a `pip install` / `uv add` on a line names."""
    for number, line in enumerate(text.splitlines(), 1):
        code = _code(line, comment)
        if not code.strip():
            continue
        for match in _ENV_WORD.finditer(code):
            rule_id = env_rule(match.group(1))
            if rule_id:
                yield Hit(number, match.start() + 1, rule_id, match.group(1))
        install = _INSTALL.search(code)
        if install:
            yield from _install_words(number, code, install.start("rest"), versions)


def _install_words(number: int, code: str, start: int, versions: Versions) -> Iterator[Hit]:
    for word in re.finditer(r"\S+", code[start:]):
        token = word.group(0).strip("\"'\\")
        if token in ("&&", ";", "|", "||"):
            return
        if token.startswith("-") or "$" in token or not token:
            continue
        found = requirement_rule(token, versions)
        if found:
            yield Hit(number, start + word.start() + 1, found[0], found[1])
