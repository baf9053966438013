"""Malformed manifests are bad input (exit 2, one line naming the file and the field), never an
internal error: deeply nested JSON, wrong JSON types, and a Hypothesis fuzz over mutated copies
of the bundled releases.json."""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neuronctl.errors import InputError
from neuronctl.release.manifest import load_manifest_file

BUNDLED = json.loads(resources.files("neuronctl.data").joinpath("releases.json").read_text("utf-8"))
TRIED = {"inputs": 0, "loaded": 0, "refused": 0}


def _paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*at, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _paths(value, (*at, i))
    return found


PATHS = _paths(BUNDLED)
TEXT = json.dumps(BUNDLED, indent=1).encode()
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children,
                                                                       max_size=4),
    max_leaves=10)


def _changed_at(doc: Any, path: tuple[Any, ...], how: str, value: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    if not path:
        return value if how != "nest" else [doc]
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if how == "delete":
        del parent[last]
    elif how == "nest":
        parent[last] = [[[parent[last]]]]
    elif how == "stringify":
        parent[last] = json.dumps(parent[last])
    else:
        parent[last] = value
    return doc


def _load(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "manifest.json"
    path.write_bytes(data)
    TRIED["inputs"] += 1
    try:
        manifest = load_manifest_file(path)
    except InputError as exc:
        TRIED["refused"] += 1
        assert str(path) in exc.message and "\n" not in exc.message
        return
    TRIED["loaded"] += 1
    # What commands then do with a manifest that loaded must not fail either.
    json.dumps(manifest.to_json())
    for release in manifest.releases:
        release.default_framework()
        manifest.nearest(release.version)
        for fw in release.frameworks:
            assert release.framework_for_torch(fw.torch) is not None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.integers(0, len(PATHS) - 1), how=st.sampled_from(["replace", "delete", "nest", "stringify"]),
       value=JSON_VALUES)
def test_mutated_manifests_load_or_are_refused_as_bad_input(tmp_path, index, how, value):
    doc = _changed_at(BUNDLED, PATHS[index], how, value)
    _load(tmp_path, json.dumps(doc, allow_nan=True).encode())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300), cut=st.integers(0, len(TEXT)), keep=st.integers(0, len(TEXT)))
def test_truncated_and_spliced_bytes_load_or_are_refused_as_bad_input(tmp_path, data, cut, keep):
    _load(tmp_path, TEXT[:cut] + data + TEXT[max(cut, keep):])


def test_a_source_url_with_an_unbalanced_bracket_is_refused_as_bad_input(tmp_path):
    """The fuzzer once spliced a `[` into a source URL: urlsplit raised ValueError ("Invalid IPv6
    URL"), an internal error, where every other bad URL is bad input naming the file."""
    at = next(p for p in PATHS if p and p[0] == "sources" and isinstance(_at(BUNDLED, p), str)
              and str(_at(BUNDLED, p)).startswith("https://"))
    manifest = tmp_path / "manifest.json"
    for url in ("http://[", "https://[::1/x"):
        manifest.write_text(json.dumps(_changed_at(BUNDLED, at, "replace", url)))
        with pytest.raises(InputError, match="is not a URL") as refused:
            load_manifest_file(manifest)
        assert str(manifest) in refused.value.message


def _place(path: tuple[Any, ...]) -> tuple[Any, ...]:
    """Where `path` is in the schema: its list indices as `*` (`releases.3.packages` and
    `releases.9.packages` are read by the same code)."""
    return tuple("*" if isinstance(step, int) else step for step in path)


def test_every_table_or_list_set_to_null_is_refused_or_loads(tmp_path):
    """The fuzzer once drew a release's `packages` table set to null: Fields.obj returned None for
    a required key and an assert fired (an internal error). Every table and list, each in turn:
    the first and the last of each place in the schema (the newest and the oldest release's, the
    first and the last rule's), not all 1,600 (30 s of the suite, the same code read each time)."""
    containers = [path for path in PATHS if path and isinstance(_at(BUNDLED, path), dict | list)]
    by_place: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for path in containers:
        by_place.setdefault(_place(path), []).append(path)
    assert len(by_place) > 80 and ("releases", "*", "packages") in by_place
    for paths in by_place.values():
        for path in {paths[0], paths[-1]}:
            _load(tmp_path, json.dumps(_changed_at(BUNDLED, path, "replace", None)).encode())


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def test_fuzz_counts_are_reported(capsys):
    """Runs after the fuzz tests above (file order): their counts, for the record."""
    with capsys.disabled():
        print(f"\nmanifest fuzz: {TRIED['inputs']} inputs, {TRIED['loaded']} loaded, "
              f"{TRIED['refused']} refused as bad input, 0 other errors")
    assert TRIED["inputs"] == 0 or TRIED["loaded"] + TRIED["refused"] == TRIED["inputs"]


@pytest.mark.parametrize("depth", [2_000, 100_000])
def test_deeply_nested_json_is_bad_input(tmp_path, depth):
    path = tmp_path / "deep.json"
    path.write_text('{"schema": 1, "releases": ' + "[" * depth + "]" * depth + "}")
    with pytest.raises(InputError, match=f"{path}: JSON nested too deeply"):
        load_manifest_file(path)


@pytest.mark.parametrize(("field", "value", "says"), [
    (("releases", 0, "python"), 5, "releases[0].python: expected a list of strings, got a number (5)"),
    (("releases", 0, "frameworks", 0, "chips"), "trn2", "frameworks[0].chips: expected a list"),
    (("releases", 0, "packages"), [], "releases[0].packages: expected an object, got a list"),
    (("releases", 0, "version"), math.inf, "releases[0].version: expected a string, got a number (inf)"),
    (("schema",), "1", "schema: expected an integer"),
])
def test_wrong_json_types_name_the_file_and_the_field(tmp_path, field, value, says):
    doc = _changed_at(BUNDLED, field, "replace", value)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc, allow_nan=True))
    with pytest.raises(InputError) as caught:
        load_manifest_file(path)
    assert caught.value.message.startswith(f"{path}: ") and says in caught.value.message


def test_an_endless_file_is_refused_without_reading_it_all(tmp_path):
    with pytest.raises(InputError, match="not a regular file"):  # never opened for reading
        load_manifest_file(Path("/dev/zero"))
    big = tmp_path / "big.json"
    with big.open("wb") as fh:  # sparse: 65 MB of nothing, read only as far as the limit
        fh.truncate((64 << 20) + 1)
    with pytest.raises(InputError, match="larger than 64 MB"):
        load_manifest_file(big)
