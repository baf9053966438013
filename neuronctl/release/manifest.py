"""neuronctl's release manifest: what each Neuron release pins.

The bundled `data/releases.json` is the offline default; `--manifest PATH` (or config
`manifest`, or `NEURONCTL_MANIFEST`) points at another file in the same format, for example
one written by `neuronctl releases import`; `neuronctl releases update` stores fetched data in
the user data directory, used when it is newer than the bundled data. The data types it builds
live in neuronctl.release.model (import them from there).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from msgspec.structs import replace
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from neuronctl.chips import CHIP_IDS
from neuronctl.data import bundled_text
from neuronctl.errors import InputError
from neuronctl.jsonfields import Fields
from neuronctl.release.model import (
    FLAVOURS,
    MANIFEST_SCHEMA,
    MAX_JSON_BYTES,
    Artifact,
    Framework,
    Manifest,
    OnDemand,
    Release,
    Source,
)
from neuronctl.release.rules import parse_rules
from neuronctl.release.source_checks import check_date, check_url
from neuronctl.safety import open_regular


def _check_version(value: str, fields: Fields, key: str) -> str:
    try:
        Version(value)
    except InvalidVersion:
        raise fields.fail(key, f"{value!r} is not a PEP 440 version") from None
    return value


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SYSTEM_VERSION = re.compile(r"[0-9][A-Za-z0-9.+~-]{0,63}")


def _check_name(name: str, fields: Fields) -> str:
    if not _NAME.fullmatch(name):
        raise fields.fail(name[:40], "not a package name")
    return name


def _check_system_version(value: str, fields: Fields, key: str) -> str:
    if not _SYSTEM_VERSION.fullmatch(value):
        raise fields.fail(key, f"{value[:40]!r} is not a package version")
    return value


def _check_chips(values: Iterable[str], fields: Fields, key: str) -> tuple[str, ...]:
    chips = tuple(values)
    for chip in chips:
        if chip not in CHIP_IDS:
            raise fields.fail(key, f"unknown chip {chip!r} (known: {', '.join(CHIP_IDS)})")
    return chips


def _nullable_texts(f: Fields, key: str, unpublished: list[str], value_key: str) -> tuple[str, ...]:
    """A list the data may hold as null: not published (recorded under `value_key`)."""
    if key in f.data and f.data[key] is None:
        unpublished.append(value_key)
        return ()
    return tuple(f.texts(key, required=False))


def _parse_frameworks(f: Fields, unpublished: list[str]) -> tuple[Framework, ...]:
    frameworks = []
    for fw in f.objects("frameworks", required=False):
        flavour = fw.req_text("backend")  # the data's key for the flavour
        if flavour not in ("native", "xla"):
            raise fw.fail("backend", f"expected native or xla, got {flavour!r}")
        tnx = _check_version(fw.req_text("torch_neuronx"), fw, "torch_neuronx")
        base = f"frameworks.{tnx}"
        frameworks.append(Framework(
            flavour="native" if flavour == "native" else "xla",
            torch=_check_version(fw.req_text("torch"), fw, "torch"),
            torch_neuronx=tnx,
            chips=_check_chips(_nullable_texts(fw, "chips", unpublished, f"{base}.chips"), fw,
                               "chips"),
            python=_nullable_texts(fw, "python", unpublished, f"{base}.python"),
        ))
    return tuple(frameworks)


def _parse_artifacts(f: Fields, unpublished: list[str]) -> tuple[Artifact, ...]:
    out = []
    for a in f.objects("artifacts", required=False):
        name, version = a.req_text("name"), a.req_text("version")
        base = f"artifacts.{name}=={version}"
        out.append(Artifact(name, version,
                            _check_chips(_nullable_texts(a, "chips", unpublished, f"{base}.chips"),
                                         a, "chips"),
                            _nullable_texts(a, "python", unpublished, f"{base}.python")))
    return tuple(out)


def _parse_constraints(f: Fields) -> dict[str, str]:
    table = f.obj("unpublished", required=False)
    if table is None:
        return {}
    out = {}
    for name in table:
        spec = table.req_text(name)
        try:
            SpecifierSet(spec)
        except InvalidSpecifier:
            raise table.fail(name, f"{spec[:40]!r} is not a version constraint") from None
        out[name] = spec
    return out


def _parse_release(f: Fields) -> Release:
    version = _check_version(f.req_text("version"), f, "version")
    flavour = f.req_text("backend")  # the data's key for the flavour
    if flavour not in FLAVOURS:
        raise f.fail("backend", f"expected one of {', '.join(FLAVOURS)}, got {flavour!r}")
    packages_f = f.obj("packages")
    assert packages_f is not None
    packages: dict[str, tuple[str, ...]] = {}
    for name in packages_f:
        _check_name(name, packages_f)
        packages[name] = tuple(_check_version(v, packages_f, name) for v in packages_f.texts(name))
    system_f = f.obj("system")
    assert system_f is not None
    # System versions reach the doctor's fix commands (apt-get install 'PKG=VERSION*'): a fetched
    # manifest's are checked as strictly as a lock's.
    system = {_check_name(name, system_f): _check_system_version(system_f.req_text(name), system_f,
                                                                 name)
              for name in system_f}
    unpublished: list[str] = []
    frameworks = _parse_frameworks(f, unpublished)
    artifacts = _parse_artifacts(f, unpublished)
    sources_f = f.obj("sources", required=False)
    date = f.text("date", required=False)
    return Release(
        version=version,
        flavour=flavour,  # type: ignore[arg-type]
        torch=tuple(_check_version(t, f, "torch") for t in f.texts("torch")),
        python=tuple(f.texts("python")),
        chips=_check_chips(f.texts("chips"), f, "chips"),
        packages=packages,
        system=system,
        status=f.text("status", required=False, default="ga") or "ga",
        date=check_date(date, f"{f.where}: {f.path}.date") if date else None,
        frameworks=frameworks,
        artifacts=artifacts,
        notes=tuple(f.texts("notes", required=False)),
        constraints=_parse_constraints(f),
        sources={k: sources_f.req_text(k) for k in sources_f} if sources_f else {},
        unpublished=tuple(unpublished),
    )


def _parse_sources(top: Fields) -> dict[str, Source]:
    table = top.obj("sources", required=False)
    if table is None:
        return {}
    out = {}
    for sid in table:
        entry = table.obj(sid)
        assert entry is not None
        where = f"{top.where}: sources.{sid}"
        out[sid] = Source(sid, check_url(entry.req_text("url"), f"{where}.url"),
                          check_date(entry.req_text("read"), f"{where}.read"),
                          entry.text("title", required=False) or "")
    return out


def _check_source_ids(index: int, release: Release, sources: Mapping[str, Source],
                      top: Fields) -> None:
    for key, sid in release.sources.items():
        if sid not in sources:
            raise top.fail(f"releases[{index}].sources.{key}", f"unknown source {sid!r}")


def reject_duplicates(releases: list[Release], top: Fields, field_pattern: str) -> None:
    """A release listed twice is bad input: name the second occurrence's field."""
    _reject_duplicate_versions([r.version for r in releases], top, field_pattern)


def _reject_duplicate_versions(versions: list[str], top: Fields, field_pattern: str) -> None:
    seen: set[Version] = set()
    for i, version in enumerate(versions):
        key = Version(version)
        if key in seen:
            raise top.fail(field_pattern.format(i), f"duplicate release {version}")
        seen.add(key)


def parse_manifest(data: object, source: str, origin: str = "file", *,
                   on_demand: bool = False) -> Manifest:
    """The release data, every entry checked (a file, fetched or stored data: each is checked
    where it enters). `on_demand` (the bundled data, which ships with neuronctl and is checked
    whole by its tests) checks the top level, each entry's version and the sources and rules
    now, and each release when it is first read, with the same checks and messages."""
    top = Fields(data, source)
    schema = top.integer("schema")
    if schema != MANIFEST_SCHEMA:
        raise top.fail("schema", f"unsupported manifest schema {schema} (this neuronctl reads "
                                 f"{MANIFEST_SCHEMA}); is this AWS's n2-manifest? "
                                 "convert it with `neuronctl releases import`")
    entries = top.objects("releases")
    if not entries:
        raise top.fail("releases", "no releases")
    if on_demand:
        versions = [_check_version(e.req_text("version"), e, "version") for e in entries]
        _reject_duplicate_versions(versions, top, "releases[{}].version")
    else:
        parsed = [_parse_release(e) for e in entries]
        reject_duplicates(parsed, top, "releases[{}].version")
    gen = top.obj("generated_from", required=False)
    generated = {k: str(gen.data[k]) for k in gen} if gen else {}
    sources = _parse_sources(top)

    def build(index: int, release: Release | None = None) -> Release:
        release = release or _parse_release(entries[index])
        _check_source_ids(index, release, sources, top)
        return replace(release, rules=tuple(x for x in rules if x.applies_to(release.version)))

    if not on_demand:
        for i, release in enumerate(parsed):
            _check_source_ids(i, release, sources, top)
    compiled = top.text("compiled", required=False)
    rules = parse_rules(top, sources)
    releases: Sequence[Release]
    if on_demand:
        keys = [Version(v) for v in versions]
        releases = OnDemand(sorted(range(len(keys)), key=keys.__getitem__, reverse=True), build)
    else:
        releases = [build(i, r) for i, r in enumerate(parsed)]
    return Manifest(releases, source, origin, generated, sources,
                    check_date(compiled, f"{source}: compiled") if compiled else None, rules)


def read_json_file(path: Path) -> object:
    try:
        with open_regular(path) as fh:  # a regular file (not a FIFO, /dev/stdin), bounded
            data = fh.read(MAX_JSON_BYTES + 1)
        if len(data) > MAX_JSON_BYTES:
            raise InputError(f"{path}: larger than {MAX_JSON_BYTES >> 20} MB; not a manifest")
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a JSON file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: "
                         f"{exc.msg}") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply to be a manifest") from None


def decode_json(data: bytes, where: str) -> object:
    """Bytes from elsewhere (a fetched manifest) as JSON, bounded as a file is."""
    if len(data) > MAX_JSON_BYTES:
        raise InputError(f"{where}: larger than {MAX_JSON_BYTES >> 20} MB; not a manifest")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"{where}: not UTF-8 text; not a manifest") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: "
                         f"{exc.msg}") from None
    except RecursionError:
        raise InputError(f"{where}: JSON nested too deeply to be a manifest") from None


def load_manifest_file(path: Path) -> Manifest:
    return parse_manifest(read_json_file(path), str(path), origin="file")


def load_bundled_manifest() -> Manifest:
    text = bundled_text("releases.json")
    # Built on demand: a command reads one or two of its releases (issue 36).
    return parse_manifest(json.loads(text), "bundled manifest", origin="bundled", on_demand=True)


def stored_manifest_path() -> Path:
    """Where `releases update` stores the release data it fetched."""
    from neuronctl.cache_dir import user_data_dir

    return user_data_dir() / "releases.json"


def load_default_manifest() -> Manifest:
    """The release data used without --manifest: what `releases update` stored, unless the
    bundled data is newer (a newer neuronctl's); else the bundled data."""
    bundled = load_bundled_manifest()
    from neuronctl.safety import is_file_here

    path = stored_manifest_path()
    if not is_file_here(path, "the stored release data (XDG_DATA_HOME)"):
        return bundled
    try:
        stored = parse_manifest(read_json_file(path), str(path), origin="stored")
    except InputError as exc:
        raise InputError(str(exc), hint=f"run `neuronctl releases update` again, or remove {path} "
                                        "to use the bundled data") from None
    if (stored.compiled or "") < (bundled.compiled or ""):
        return bundled
    return stored


def load_manifest(path: Path | None) -> Manifest:
    return load_manifest_file(path) if path is not None else load_default_manifest()
