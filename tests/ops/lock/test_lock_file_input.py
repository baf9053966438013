"""A crafted pylock.toml (or pyproject.toml) is bad input, exit 2 naming the file and the package,
before anything is fetched, planned or deleted: hashes that name paths, wheel names that climb out
of the cache, releases nobody knows, bytes that are not UTF-8, nesting that never ends."""

import json
from pathlib import Path

import pytest

from neuronctl.errors import InputError
from neuronctl.resolvers.pylock import load_pylock
from neuronctl.toml_emit import dumps
from neuronctl.tomlfile import read_toml

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile_lock.py)


@pytest.fixture
def lock_doc(cli, uni) -> dict:
    r = cli("lock", *uni.index_flags(), "--python", "3.12")
    assert r.code == 0, r.err
    return read_toml(Path("pylock.toml"), "lock")


def write_tampered(doc: dict, name: str = "pylock.tampered.toml") -> Path:
    path = Path(name).resolve()
    path.write_text(dumps(doc, arrays_of_tables=("packages",)))
    return path


def package(doc: dict, name: str) -> dict:
    return next(p for p in doc["packages"] if p["name"] == name)


def install_dry_run(cli, lock: Path, tmp_path):
    return cli("install", "--lock", str(lock), "--venv", str(tmp_path / "env"), "--dry-run")


@pytest.fixture
def victim(tmp_path) -> Path:
    d = tmp_path / "victim"
    d.mkdir()
    (d / "numpy-2.1.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl").write_text("mine")
    return d


def untouched(victim: Path) -> bool:
    return [(p.name, p.read_text()) for p in victim.iterdir()] == \
        [("numpy-2.1.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "mine")]


@pytest.mark.parametrize("digest", ["{victim}", "../../../{victim}", "0" * 63, "z" * 64, ""])
def test_a_hash_that_is_not_hex_is_exit_2_naming_the_lock_and_package(cli, lock_doc, tmp_path, victim, digest):
    package(lock_doc, "numpy")["wheels"][0]["hashes"] = {"sha256": digest.format(victim=victim)}
    lock = write_tampered(lock_doc)
    r = install_dry_run(cli, lock, tmp_path)
    assert r.code == 2, r.err + r.out
    assert str(lock) in r.err and "(numpy 2.1.0)" in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) <= 2
    assert not (tmp_path / "env").exists() and untouched(victim)


def test_an_unknown_hash_algorithm_is_no_guarantee(lock_doc):
    package(lock_doc, "nki")["wheels"][0]["hashes"] = {"crc32": "deadbeef"}
    with pytest.raises(InputError, match=r"\(nki 0.7.0\): wheels\[0\]: unknown hash algorithm 'crc32'"):
        load_pylock(write_tampered(lock_doc))


@pytest.mark.parametrize("name", ["nki-0.7.0-py3-none-/tmp/x.whl", "nki-0.7.0-py3-none-x\x1b.whl"])
def test_a_wheel_name_that_is_not_one_plain_file_name_is_refused(cli, lock_doc, tmp_path, victim, name):
    # packaging's own check accepts these: a tag component may hold '/' and control characters.
    package(lock_doc, "nki")["wheels"][0]["name"] = name
    lock = write_tampered(lock_doc)
    r = install_dry_run(cli, lock, tmp_path)
    assert r.code == 2 and str(lock) in r.err and "(nki 0.7.0)" in r.err
    assert "is not a safe file name" in r.err and untouched(victim)


def test_an_unknown_release_in_a_lock_names_the_lock_and_the_release(cli, lock_doc, tmp_path):
    lock_doc["tool"]["neuronctl"]["release"] = "9.99.0"
    lock = write_tampered(lock_doc)
    r = install_dry_run(cli, lock, tmp_path)
    assert r.code == 2 and "Traceback" not in r.err
    assert f"{lock}: [tool.neuronctl] release '9.99.0': unknown Neuron release" in r.err
    lock_doc["tool"]["neuronctl"]["release"] = {"not": "a string"}
    r = install_dry_run(cli, write_tampered(lock_doc), tmp_path)
    assert r.code == 2 and "[tool.neuronctl] release must be a string" in r.err


def test_a_marker_that_cannot_be_evaluated_is_bad_input_naming_the_lock(cli, lock_doc, tmp_path):
    package(lock_doc, "nki")["marker"] = 'python_version ~= "foo"'
    lock = write_tampered(lock_doc)
    r = install_dry_run(cli, lock, tmp_path)
    assert r.code == 2 and str(lock) in r.err and "Undefined" in r.err and "Traceback" not in r.err


def test_a_lock_that_is_not_utf8_is_bad_input_naming_it(cli, tmp_path):
    lock = Path("pylock.toml")
    lock.write_bytes(b'lock-version = "1.0"\ncreated-by = "\xff\xfe"\n')
    r = install_dry_run(cli, lock, tmp_path)
    assert r.code == 2 and "pylock.toml: lock file is not UTF-8 text" in r.err
    r = cli("doctor", "--lock", str(lock), "--no-device-probe")
    assert r.code == 2 and "not UTF-8" in r.err and "Traceback" not in r.err


def test_a_pyproject_that_is_not_utf8_is_bad_input_naming_it(cli):
    Path("pyproject.toml").write_bytes(b'[tool.neuronctl]\nrelease = "2.33\xe9"\n')
    r = cli("lock", "--check")
    assert r.code == 2 and "pyproject.toml: config file is not UTF-8 text" in r.err
    assert "Traceback" not in r.err


def test_toml_nested_without_end_is_bad_input(tmp_path):
    path = tmp_path / "pylock.toml"
    path.write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(InputError, match="nested too deeply") as err:
        load_pylock(path)
    assert str(path) in str(err.value)


def test_json_and_a_lock_on_stdout_are_refused_together(cli):
    """`lock --json -o -` once wrote the TOML alone to stdout and no JSON document: one stdout
    cannot hold both."""
    r = cli("lock", "--offline", "--json", "-o", "-")
    assert r.code == 2 and "-o - writes the lock to stdout, where --json writes its document" in r.err
    document = json.loads(r.out)
    assert document["status"] == "failed" and document["error"]["kind"] == "input"
    assert not list(Path.cwd().iterdir())
