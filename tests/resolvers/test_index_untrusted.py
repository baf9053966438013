"""A hostile package index: hashes that name paths, unsafe file names and links, fields of the wrong
type, API versions from the future, sidecars that lie about their wheel, Requires-Python gaps
between page and metadata. Nothing it serves may become a path, crash neuronctl or be used."""

import hashlib
import json
import shutil
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar
from urllib.parse import quote, unquote

import pytest
from support.locks import versions
from support.loopback import QuietHandler, serving
from support.wheels import build_wheel

from neuronctl.errors import InputError
from neuronctl.resolvers.pylock import load_pylock
from neuronctl.resolvers.simple_index import parse_project_page

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile_index.py)

JSON = "application/vnd.pypi.simple.v1+json"
PAGE_URL = "http://127.0.0.1:1/simple/nki/"
GOOD = "nki-0.7.0-py3-none-any.whl"
SHA = "ab" * 32


def page(*files: dict, meta: object = None) -> str:
    return json.dumps({"meta": {"api-version": "1.1"} if meta is None else meta, "name": "nki",
                       "files": list(files)})


def entry(**over) -> dict:
    base = {"filename": GOOD, "url": f"/files/{GOOD}", "hashes": {"sha256": SHA}}
    base.update(over)
    return {k: v for k, v in base.items() if v is not ...}


def one(body: str, ctype: str = JSON):
    (dist,) = parse_project_page(body, ctype, PAGE_URL, "nki")
    return dist


# -- the page parsers: every file entry checked where it enters ------------------------------------

@pytest.mark.parametrize("hashes", [
    {"sha256": "/home/user/.ssh"}, {"sha256": "../../../etc"}, {"sha256": "A" * 63},
    {"sha256": "g" * 64}, {"sha256": 5}, {"sha256": SHA, "crc32": "1234abcd"}, ["sha256", SHA],
])
def test_a_hash_that_is_not_hex_of_a_known_algorithm_makes_the_file_unusable(hashes):
    dist = one(page(entry(hashes=hashes)))
    assert dist.unusable and "hash" in dist.unusable
    assert dist.hashes == {}  # nothing unchecked is carried on


@pytest.mark.parametrize(("href", "meta"), [
    (f"/files/{GOOD}#sha256=../../../../tmp/victim", None),
    (f"/files/{GOOD}#md5=0123", None),
    (f"/files/{GOOD}#sha256={SHA}", 'data-core-metadata="sha256=/etc/passwd"'),
])
def test_html_fragments_and_metadata_hashes_are_checked_too(href, meta):
    dist = one(f'<a href="{href}" {meta or ""}>{GOOD}</a>', "text/html")
    assert dist.unusable and "hash" in dist.unusable and dist.hashes == {}


def test_good_entries_keep_their_checked_lowercase_hashes():
    dist = one(page(entry(hashes={"SHA256": SHA.upper()}, **{"core-metadata": {"sha256": SHA}})))
    assert dist.unusable is None and dist.hashes == {"sha256": SHA}
    assert dist.core_metadata == {"sha256": SHA}


@pytest.mark.parametrize(("over", "reason"), [
    ({"filename": "../nki-0.7.0-py3-none-any.whl"}, "not a safe file name"),
    ({"filename": "nki-0.7.0-py3-none-a/../../x.whl"}, "not a safe file name"),
    ({"filename": ".nki-0.7.0-py3-none-any.whl"}, "not a safe file name"),
    ({"filename": "nki\x1b[31m-0.7.0-py3-none-any.whl"}, "not a safe file name"),
    ({"url": "file:///etc/passwd"}, "link to a file: URL"),
    ({"url": "javascript:alert(1)"}, "link to a javascript: URL"),
    ({"url": "http://[::1/x.whl"}, "unreadable link"),
])
def test_unsafe_file_names_and_links_make_the_file_unusable(over, reason):
    dist = one(page(entry(**over)))
    assert dist.unusable and reason in dist.unusable
    assert "\x1b" not in dist.filename  # shown escaped, never raw


@pytest.mark.parametrize(("over", "reason"), [
    ({"requires-python": 5}, "requires-python must be a string"),
    ({"requires-python": "=>3.8"}, "invalid requires-python"),
    ({"yanked": 3}, "yanked must be a boolean or string"),
    ({"upload-time": []}, "upload-time must be a string"),
    ({"size": "x"}, "size must be a non-negative integer"),
    ({"size": 2**64}, "size must be a non-negative integer"),
    ({"size": -1}, "size must be a non-negative integer"),
    ({"size": True}, "size must be a non-negative integer"),
    ({"hashes": "sha256"}, "hashes must be a table"),
    ({"core-metadata": "yes"}, "core-metadata must be"),
    ({"core-metadata": {"sha256": "zz"}}, "is not 64 hex digits"),
])
def test_fields_of_the_wrong_type_make_the_file_unusable(over, reason):
    dist = one(page(entry(**over)))
    assert dist.unusable and reason in dist.unusable


def test_a_deeply_nested_page_is_bad_input_naming_the_url():
    body = '{"meta": {"api-version": "1.1"}, "files": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(InputError, match="nested too deeply") as err:
        parse_project_page(body, JSON, PAGE_URL, "nki")
    assert PAGE_URL in str(err.value)


@pytest.mark.parametrize("meta", [{"api-version": "2.0"}, {"api-version": "10.1"}, {"api-version": 1.1},
                                  {"api-version": "one"}, "1.0"])
def test_an_api_version_this_client_cannot_speak_is_refused(meta):
    with pytest.raises(InputError, match=r"api-version|API version") as err:
        parse_project_page(page(entry(), meta=meta), JSON, PAGE_URL, "nki")
    assert PAGE_URL in str(err.value)


def test_a_newer_minor_api_version_is_read_with_a_warning():
    with pytest.warns(Warning, match="1.9"):
        dist = one(page(entry(), meta={"api-version": "1.9"}))
    assert dist.unusable is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert one(page(entry(), meta={"api-version": "1.1"})).unusable is None


# -- a hostile PyPI-like index, end to end ------------------------------------------------------------

@dataclass
class Served:
    path: Path
    over: dict = field(default_factory=dict)
    """Fields replacing the honest ones on the page (... drops a field)."""
    sidecar: bytes | None = None
    """A sidecar other than the wheel's own METADATA (its core-metadata hash still matches)."""

    def metadata(self) -> bytes:
        if self.sidecar is not None:
            return self.sidecar
        with zipfile.ZipFile(self.path) as zf:
            return zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA")))


class Hostile(QuietHandler):
    projects: ClassVar[dict[str, list[Served]]] = {}
    hits: ClassVar[list[str]] = []

    def do_GET(self):
        path = unquote(self.path)
        self.hits.append(path)
        if path.startswith("/simple/"):
            served = self.projects.get(path.split("/")[2])
            if served is None:
                self.send_error(404)
                return
            files = []
            for s in served:
                item = {"filename": s.path.name, "url": f"/files/{quote(s.path.name)}",
                        "hashes": {"sha256": hashlib.sha256(s.path.read_bytes()).hexdigest()},
                        "core-metadata": {"sha256": hashlib.sha256(s.metadata()).hexdigest()}}
                item.update(s.over)
                files.append({k: v for k, v in item.items() if v is not ...})
            self.reply(json.dumps({"meta": {"api-version": "1.1"}, "name": "x", "files": files}), JSON)
            return
        name = path.removeprefix("/files/")
        for s in (s for group in self.projects.values() for s in group):
            if name == s.path.name + ".metadata":
                self._bytes(200, s.metadata())
                return
            if name == s.path.name:
                self._file(s.path.read_bytes())
                return
        self.send_error(404)

    def _file(self, data: bytes) -> None:
        rng = self.headers.get("Range", "")
        if not rng.startswith("bytes="):
            self._bytes(200, data)
            return
        first, _, last = rng.removeprefix("bytes=").partition("-")
        start, end = (len(data) - int(last), len(data)) if not first else (int(first), int(last) + 1)
        start = max(start, 0)
        self._bytes(206, data[start:end], {"Content-Range": f"bytes {start}-{end - 1}/{len(data)}"})

    def _bytes(self, status: int, body: bytes, headers: dict | None = None) -> None:
        self.send_response(status)
        for k, v in {"Content-Type": "application/octet-stream", "Content-Length": str(len(body)),
                     **(headers or {})}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def hostile_index(wheels, tmp_path):
    """A PyPI-like index with what the Neuron stack needs from PyPI; tests add their traps."""
    honest = [w for w, _ in wheels["json"] if w.name.split("-")[0] in ("filelock", "numpy")
              or w.name.startswith("typing_extensions-4.12.2")]
    Hostile.projects, Hostile.hits = {}, []
    for wheel in honest:
        Hostile.projects.setdefault(wheel.name.split("-")[0].replace("_", "-"), []).append(Served(wheel))
    with serving(Hostile) as url:
        yield f"{url}/simple"


def lock_against(cli, uni, pypi: str, *extra: str):
    flags = [f for f in uni.index_flags() if not f.startswith("--index=pypi=")]
    return cli("lock", *flags, f"--index=pypi={pypi}", "--python", "3.12", *extra)


def add_te(tmp_path, version: str, *, over=None, sidecar=None, **wheel) -> Path:
    path = build_wheel(tmp_path / "traps", "typing-extensions", version, **wheel)
    Hostile.projects["typing-extensions"].append(Served(path, over or {}, sidecar))
    return path


def test_a_file_whose_hash_names_a_path_is_never_used_and_is_reported(cli, uni, hostile_index, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep me")
    trap = add_te(tmp_path, "4.13.0", over={"hashes": {"sha256": str(victim)}})
    r = lock_against(cli, uni, hostile_index)
    assert r.code == 0, r.err
    assert versions(load_pylock(Path("pylock.toml")))["typing-extensions"] == ["4.12.2"]
    assert not [h for h in Hostile.hits if trap.name in h]  # never fetched, not even its metadata
    r = lock_against(cli, uni, hostile_index, "--with", "typing-extensions==4.13.0")
    assert r.code == 1 and "Traceback" not in r.err
    assert f"turned away: {trap.name}: unusable:" in r.err and "is not 64 hex digits" in r.err
    assert (victim / "precious").read_text() == "keep me"


def test_a_sidecar_that_lies_about_its_wheel_is_set_aside_for_the_wheels_own_metadata(
        cli, uni, hostile_index, tmp_path):
    lie = b"Metadata-Version: 2.1\nName: evil\nVersion: 4.13.0\nRequires-Dist: evil-dep\n\n"
    trap = add_te(tmp_path, "4.13.0", sidecar=lie)
    r = lock_against(cli, uni, hostile_index)
    assert r.code == 0, r.err
    assert versions(load_pylock(Path("pylock.toml")))["typing-extensions"] == ["4.13.0"]
    assert "/simple/evil-dep/" not in Hostile.hits  # the lie's dependency was never followed
    assert f"/files/{trap.name}" in Hostile.hits  # the wheel's own METADATA, by range requests


def test_metadata_contradicting_the_page_on_requires_python_is_refused(cli, uni, hostile_index, tmp_path):
    # The page says any Python 3.8+ will do; the wheel (and its sidecar) say 3.13+.
    trap = add_te(tmp_path, "5.0.0", requires_python=">=3.13", over={"requires-python": ">=3.8"})
    r = lock_against(cli, uni, hostile_index)
    assert r.code == 0, r.err
    assert versions(load_pylock(Path("pylock.toml")))["typing-extensions"] == ["4.12.2"]
    r = lock_against(cli, uni, hostile_index, "--with", "typing-extensions>=5")
    assert r.code == 1 and f"{trap.name}: unusable:" in r.err and "trusting neither" in r.err


def test_requires_python_known_only_from_metadata_backtracks(cli, uni, hostile_index, tmp_path):
    add_te(tmp_path, "5.0.0", requires_python=">=3.13")  # the page states none
    r = lock_against(cli, uni, hostile_index)
    assert r.code == 0, r.err
    assert versions(load_pylock(Path("pylock.toml")))["typing-extensions"] == ["4.12.2"]
    r = lock_against(cli, uni, hostile_index, "--with", "typing-extensions>=5")
    assert r.code == 1 and "requires-python >=3.13 (its metadata)" in r.err


def test_a_dependency_on_a_direct_url_makes_the_candidate_unusable(cli, uni, hostile_index, tmp_path):
    add_te(tmp_path, "4.13.0", requires=("evil @ http://127.0.0.1:9/evil-1.0-py3-none-any.whl",))
    r = lock_against(cli, uni, hostile_index)
    assert r.code == 0, r.err
    assert versions(load_pylock(Path("pylock.toml")))["typing-extensions"] == ["4.12.2"]
    assert "/simple/evil/" not in Hostile.hits


def test_a_dependency_marker_that_cannot_be_evaluated_makes_the_candidate_unusable(
        cli, uni, hostile_index, tmp_path):
    trap = add_te(tmp_path, "4.13.0", requires=('evil; python_version ~= "foo"',))
    r = lock_against(cli, uni, hostile_index)
    assert r.code == 0, r.err
    assert versions(load_pylock(Path("pylock.toml")))["typing-extensions"] == ["4.12.2"]
    r = lock_against(cli, uni, hostile_index, "--with", "typing-extensions==4.13.0")
    assert r.code == 1 and f"{trap.name}: unusable: a Requires-Dist marker cannot be evaluated" in r.err


def test_a_flat_file_mirror_with_a_wheel_for_a_newer_python_still_locks(cli, uni, wheels, tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    for wheel, _ in wheels["json"]:
        shutil.copy(wheel, mirror)  # typing-extensions 5.0.0 says >=3.13 only in its METADATA
    r = lock_against(cli, uni, mirror.as_uri())
    assert r.code == 0, r.err
    lock = load_pylock(Path("pylock.toml"))
    assert versions(lock)["typing-extensions"] == ["4.12.2"]


def test_a_direct_reference_is_refused_not_replaced_by_an_index_version(cli, uni):
    r = cli("lock", *uni.index_flags(), "--python", "3.12",
            "--with", "typing-extensions @ https://example.invalid/typing_extensions-9-py3-none-any.whl")
    assert r.code == 2 and "direct references (name @ URL) cannot be locked" in r.err
    assert not Path("pylock.toml").exists()


def test_a_yank_reason_is_shown_without_control_characters_and_sizes_fit_a_lock():
    from neuronctl.resolvers.candidates import select_files
    from neuronctl.resolvers.targets import PlatformTarget

    files = parse_project_page(page(entry(yanked="bad\x1b[2J build", size=12)),
                               JSON, PAGE_URL, "nki")
    _, rejected = select_files("nki", files, PlatformTarget("3.12", "manylinux_2_28_x86_64"))
    assert rejected[0].reason == "yanked (bad?[2J build)"
    assert "below 2**63" in one(page(entry(size=2**63))).unusable


def test_a_page_without_an_api_version_is_read_as_1_0_as_pip_and_uv_do():
    assert one(json.dumps({"name": "nki", "files": [entry()]})).unusable is None
    assert one(page(entry(), meta={})).unusable is None
