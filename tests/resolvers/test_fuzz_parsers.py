"""Fuzzing (Hypothesis) the readers of untrusted text: the pylock reader with install's selection,
and the index page parsers (PEP 691 JSON, PEP 503 HTML) with candidate selection.

Whatever the input, the only exception is InputError; nothing is written, renamed or deleted
anywhere (an audit hook watches every such call); and whatever is accepted is safe to use: file
names are one plain path component, hashes are hex of a known algorithm, links are http(s).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from collections import Counter
from pathlib import Path

import pytest
import tomlkit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet

from neuronctl.errors import InputError
from neuronctl.ops.install.source import from_lock
from neuronctl.probes.pyenv import PythonEnv
from neuronctl.release.manifest import load_bundled_manifest
from neuronctl.resolvers.candidates import select_files
from neuronctl.resolvers.pylock import load_pylock
from neuronctl.resolvers.simple_index import parse_project_page
from neuronctl.resolvers.targets import PlatformTarget
from neuronctl.safety import HEX_LENGTHS, contained, safe_filename

FUZZ = settings(max_examples=250, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.filter_too_much, HealthCheck.data_too_large])
COUNTS: Counter[str] = Counter()
TARGET = PlatformTarget("3.12", "manylinux_2_28_x86_64")
SHA = "5e" * 32

# -- watching the file system ------------------------------------------------------------------------

_WRITES: list[tuple[str, object]] = []
_WATCHING: list[bool] = []
"""Non-empty while a parser runs under watch."""
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_CHANGING = {"os.remove", "os.rmdir", "os.rename", "os.mkdir", "shutil.rmtree", "os.truncate",
             "os.chmod", "os.symlink", "os.link", "os.utime", "shutil.copyfile", "shutil.move"}


def _audit(event: str, args: tuple) -> None:
    if not _WATCHING:
        return
    if event == "open":
        path, mode, flags = (*args, None, None)[:3]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
            (isinstance(flags, int) and flags & _WRITE_FLAGS)
        if writing:
            _WRITES.append((event, path))
    elif event in _CHANGING:
        _WRITES.append((event, args[0] if args else None))


sys.addaudithook(_audit)


def watched(work):
    """Run work() with the audit hook recording; the recorded writes must be none."""
    _WRITES.clear()
    _WATCHING.append(True)
    try:
        return work()
    finally:
        _WATCHING.clear()
        assert not _WRITES, f"the parser changed the file system: {_WRITES[:3]}"


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    yield
    print("\nfuzz counts:", dict(sorted(COUNTS.items())))


# -- hostile values -------------------------------------------------------------------------------

HOSTILE_TEXT = st.sampled_from([
    "", ".", "..", "../../../etc/passwd", "/etc/passwd", "/tmp", "~", "C:\\x", "a/b", "\x00", "\x1b[2J",
    "nki-0.7.0-py3-none-/tmp/x.whl", "nki-0.7.0-py3-none-any.whl", "numpy-2.1.0-cp312-cp312-linux_x86_64.whl",
    "file:///etc/passwd", "http://user:pass@127.0.0.1:9/x.whl", "javascript:x", "http://[::1/x", SHA,
    SHA.upper(), "0" * 63, "sha256=" + SHA, ">=3.8", ">=3.13", "=>3", "2.33.0", "9.99.0", "1.0", "2.0",
    "1.99", "é" * 3, "x" * 300, 'python_version ~= "foo"', 'extra == "x"',
])
SCALARS = st.one_of(
    HOSTILE_TEXT, st.text(max_size=40), st.integers(min_value=-2**70, max_value=2**70), st.booleans(),
    st.floats(allow_nan=True), st.datetimes(timezones=st.just(dt.timezone.utc)),
)
TOML_VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(HOSTILE_TEXT, st.text(max_size=8)),
                                                 inner, max_size=4)), max_leaves=12)
JSON_SCALARS = st.one_of(st.none(), HOSTILE_TEXT, st.text(max_size=40), st.booleans(),
                         st.integers(min_value=-2**70, max_value=2**70), st.floats(allow_nan=False))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(HOSTILE_TEXT, st.text(max_size=8)),
                                                 inner, max_size=4)), max_leaves=12)


def paths_of(doc: object, prefix: tuple = ()) -> list[tuple]:
    """Every key/index path into a nested document."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths_of(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths_of(v, (*prefix, i))
    return out


def mutate(doc: object, data: st.DataObject, values: st.SearchStrategy, rounds: int) -> None:
    """Replace or delete what sits at a few random paths."""
    for _ in range(rounds):
        paths = paths_of(doc)
        if not paths:
            return
        path = data.draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(values)


# -- the lock reader and install's selection --------------------------------------------------------

def base_lock() -> dict:
    def wheel(name: str, version: str, tag: str) -> dict:
        filename = f"{name.replace('-', '_')}-{version}-{tag}.whl"
        return {"name": filename, "url": f"http://127.0.0.1:9/files/{filename}", "size": 10,
                "upload-time": dt.datetime(2026, 10, 19, tzinfo=dt.timezone.utc),
                "hashes": {"sha256": SHA}}

    return {
        "lock-version": "1.0",
        "environments": [TARGET.marker],
        "requires-python": ">=3.12",
        "created-by": "neuronctl",
        "packages": [
            {"name": "nki", "version": "0.7.0", "index": "http://127.0.0.1:9/simple",
             "wheels": [wheel("nki", "0.7.0", "py3-none-any")]},
            {"name": "numpy", "version": "2.1.0", "marker": 'python_version >= "3.12"',
             "wheels": [wheel("numpy", "2.1.0", "cp312-cp312-manylinux_2_17_x86_64"),
                        wheel("numpy", "2.1.0", "cp313-cp313-manylinux_2_17_x86_64")]},
        ],
        "tool": {"neuronctl": {"release": "2.33.0", "torch": "2.14",
                               "indexes": {"pypi": "http://127.0.0.1:9/simple"}}},
    }


def fuzz_target_env() -> PythonEnv:
    return PythonEnv(python="3.12.0", implementation="cpython", executable="/nonexistent/python",
                     prefix="/nonexistent", base_prefix="/nonexistent-base", platform="linux",
                     machine="x86_64", system="Linux", libc=("glibc", "2.28"), markers=TARGET.markers,
                     tags=tuple(str(t) for t in TARGET.tags))


MANIFEST = load_bundled_manifest()


def read_and_select(path: Path) -> None:
    lock = load_pylock(path)
    source = from_lock(path, lock, fuzz_target_env(), TARGET, MANIFEST, None)
    for wanted in source.wanted:
        safe_filename(wanted.filename, "fuzz")
        assert wanted.sha256 is not None and len(wanted.sha256) == 64
        assert set(wanted.sha256) <= set("0123456789abcdef")


def test_the_watch_sees_a_write_and_a_delete(tmp_path):
    victim = tmp_path / "victim"
    with pytest.raises(AssertionError, match="changed the file system"):
        watched(lambda: victim.write_text("x"))
    with pytest.raises(AssertionError, match=r"os\.remove"):
        watched(victim.unlink)


def test_the_unmutated_lock_is_read_and_selected(tmp_path):
    path = tmp_path / "pylock.toml"
    path.write_text(tomlkit.dumps(base_lock()))
    watched(lambda: read_and_select(path))  # also warms up every lazy import


@FUZZ
@given(data=st.data(), rounds=st.integers(0, 4), garble=st.booleans())
def test_fuzzed_locks_are_read_or_refused_as_input_errors(tmp_path, data, rounds, garble):
    doc = base_lock()
    mutate(doc, data, TOML_VALUES, rounds)
    try:
        raw = tomlkit.dumps(doc).encode("utf-8", "surrogatepass")
    except Exception:  # a value TOML cannot hold (tomlkit's own limits): not an input to test
        COUNTS["lock: not expressible as TOML"] += 1
        return
    if garble:  # and bytes as they come: cut, spliced, not UTF-8
        at = data.draw(st.integers(0, len(raw)))
        raw = raw[:at] + data.draw(st.binary(max_size=8)) + raw[at + data.draw(st.integers(0, 8)):]
    path = tmp_path / "pylock.toml"
    path.write_bytes(raw)
    COUNTS["lock: tried"] += 1
    try:
        watched(lambda: read_and_select(path))
        COUNTS["lock: accepted"] += 1
    except InputError as exc:
        assert "Traceback" not in str(exc)
        COUNTS["lock: refused (InputError)"] += 1


# -- the index page parsers ------------------------------------------------------------------------

PAGE_URL = "http://127.0.0.1:9/simple/nki/"


def base_json_page() -> dict:
    return {"meta": {"api-version": "1.1"}, "name": "nki", "versions": ["0.6.0", "0.7.0"], "files": [
        {"filename": "nki-0.7.0-py3-none-any.whl", "url": "/files/nki-0.7.0-py3-none-any.whl",
         "hashes": {"sha256": SHA}, "requires-python": ">=3.12", "core-metadata": {"sha256": SHA},
         "size": 1234, "upload-time": "2026-10-19T00:00:00Z", "yanked": False},
        {"filename": "nki-0.6.0-py3-none-any.whl", "url": "nki-0.6.0-py3-none-any.whl",
         "hashes": {"sha256": SHA}, "yanked": "broken", "dist-info-metadata": True},
    ]}


def check_files(tmp_path: Path, body: str, ctype: str) -> None:
    COUNTS[f"page {ctype}: tried"] += 1
    try:
        files = watched(lambda: parse_project_page(body, ctype, PAGE_URL, "nki"))
    except InputError as exc:
        assert "index response from http://127.0.0.1:9/simple/nki/" in str(exc)
        COUNTS[f"page {ctype}: refused (InputError)"] += 1
        return
    COUNTS[f"page {ctype}: read"] += 1
    for dist in files:
        if getattr(dist, "unusable", None):  # (so this test also runs, and finds, before it existed)
            COUNTS[f"page {ctype}: files unusable"] += 1
            assert dist.hashes == {}
            continue
        COUNTS[f"page {ctype}: files usable"] += 1
        assert contained(tmp_path, safe_filename(dist.filename, "fuzz")).parent == tmp_path.resolve()
        for algorithm, digest in dist.hashes.items():
            assert len(digest) == HEX_LENGTHS[algorithm] and set(digest) <= set("0123456789abcdef")
        if isinstance(dist.core_metadata, dict):
            assert all(len(v) == HEX_LENGTHS[k] for k, v in dist.core_metadata.items())
        assert dist.url.startswith(("http://", "https://"))
        assert dist.size is None or (isinstance(dist.size, int) and dist.size >= 0)
        assert dist.requires_python is None or SpecifierSet(dist.requires_python) is not None
        assert isinstance(dist.yanked, bool | str) and isinstance(dist.upload_time, str | None)
    watched(lambda: select_files("nki", files, TARGET))


@FUZZ
@pytest.mark.filterwarnings("ignore:Unsupported API minor version")
@given(data=st.data(), rounds=st.integers(1, 5))
def test_fuzzed_json_pages_give_checked_files_or_input_errors(tmp_path, data, rounds):
    doc = base_json_page()
    mutate(doc, data, JSON_VALUES, rounds)
    body = json.dumps(doc)
    if data.draw(st.integers(0, 9)) == 0:
        cut = data.draw(st.integers(0, len(body)))
        body = body[:cut] + data.draw(st.text(max_size=5)) + body[cut:]
    check_files(tmp_path, body, "application/vnd.pypi.simple.v1+json")


ATTRS = st.sampled_from(["data-requires-python", "data-yanked", "data-core-metadata",
                         "data-dist-info-metadata", "data-gpg-sig", "href"])


@st.composite
def html_pages(draw: st.DrawFn) -> str:
    parts = []
    if draw(st.booleans()):
        parts.append(f'<meta name="pypi:repository-version" content="{draw(HOSTILE_TEXT)}">')
    for _ in range(draw(st.integers(0, 5))):
        href = draw(st.one_of(HOSTILE_TEXT, st.text(max_size=30)))
        if draw(st.booleans()):
            href += "#" + draw(st.one_of(HOSTILE_TEXT, st.just("sha256=" + SHA), st.text(max_size=20)))
        attrs = [f'href="{href}"'] + [f'{draw(ATTRS)}="{draw(HOSTILE_TEXT)}"'
                                      for _ in range(draw(st.integers(0, 3)))]
        parts.append(f"<a {' '.join(attrs)}>{draw(st.one_of(HOSTILE_TEXT, st.text(max_size=20)))}</a>")
    if draw(st.booleans()):
        parts.append(draw(st.text(max_size=40)))  # and whatever markup
    return "<html><body>" + "\n".join(parts) + "</body></html>"


@FUZZ
@pytest.mark.filterwarnings("ignore:Unsupported API minor version")
@given(body=html_pages())
def test_fuzzed_html_pages_give_checked_files_or_input_errors(tmp_path, body):
    check_files(tmp_path, body, "text/html")
