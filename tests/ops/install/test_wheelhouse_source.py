"""`install --find-links DIR` without a hash pass of neuronctl's own on the way in: the pure parts.

Taking a lock's files from a wheelhouse checks only what costs nothing (a safe name, a regular
file, the lock's size); the engine checks each file's bytes against the lock's sha256 as it reads
it. Only when the engine has failed are the wheelhouse files hashed, and one that is not the
locked file is the error, naming it (exit 2). The engines, end to end: tests/ops/wheelhouse/test_wheelhouse.py.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from neuronctl.backend.pip_engine import PipEngine
from neuronctl.errors import FaultError, InputError, Interrupted
from neuronctl.locked_file import LockedFile
from neuronctl.ops.install.apply import ApplyFailure
from neuronctl.ops.install.failure import failure_error
from neuronctl.ops.install.find_links import from_wheelhouse, mismatched
from neuronctl.ops.install.source_types import InstallSource
from neuronctl.ops.install.target import InstallTarget
from neuronctl.ops.reporter import CollectingReporter
from neuronctl.probes.pyenv import PythonEnv

GOOD = b"the locked wheel's bytes" * 1000
NAME = "nki-0.7.0-py3-none-any.whl"
REMOTE = f"https://127.0.0.1:9/files/{NAME}"


def bytes_sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def source_for(data: bytes = GOOD, size: int | None = len(GOOD)) -> InstallSource:
    wanted = LockedFile("nki", "0.7.0", NAME, REMOTE, bytes_sha(data), size)
    return InstallSource((wanted,), None, None, "lock pylock.toml", Path("pylock.toml"))


def tampered(data: bytes) -> bytes:
    """The same size, one byte inside flipped."""
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:]


def engine_file(url: str, digest: str = bytes_sha(GOOD)) -> LockedFile:
    return LockedFile("nki", "0.7.0", NAME, url, digest)


def test_a_same_size_file_with_other_bytes_is_handed_to_the_engine_unhashed(tmp_path):
    """The success path reads no byte of the file: its content is the engine's to check (it runs
    with --require-hashes and the lock's sha256), so a wrong content is not an error here."""
    (tmp_path / NAME).write_bytes(tampered(GOOD))
    got = from_wheelhouse(source_for(), tmp_path, offline=True, reporter=CollectingReporter())
    (wanted,) = got.wanted
    assert wanted.url == (tmp_path / NAME).resolve().as_uri()
    assert wanted.sha256 == bytes_sha(GOOD)  # the lock's hash goes with it, for the engine to check
    assert got.describe == f"lock pylock.toml from the wheelhouse {tmp_path}"


def test_a_wrong_size_or_a_non_file_is_refused_before_the_engine_naming_it(tmp_path):
    (tmp_path / NAME).write_bytes(GOOD + b"!")
    with pytest.raises(InputError) as err:
        from_wheelhouse(source_for(), tmp_path, offline=True, reporter=CollectingReporter())
    assert NAME in err.value.message and f"the lock says {len(GOOD):,}" in err.value.message
    assert "neuronctl download" in (err.value.hint or "")
    # Without a size in the lock the content is all there is: the engine checks it.
    got = from_wheelhouse(source_for(size=None), tmp_path, offline=True, reporter=CollectingReporter())
    assert got.wanted[0].url.startswith("file://")
    (tmp_path / NAME).unlink()
    (tmp_path / NAME).mkdir()
    with pytest.raises(InputError, match=f"{NAME} is not a file"):
        from_wheelhouse(source_for(), tmp_path, offline=True, reporter=CollectingReporter())


def test_after_an_engine_failure_the_mismatching_wheelhouse_file_is_named(tmp_path):
    path = tmp_path / NAME
    path.write_bytes(tampered(GOOD))
    local = engine_file(path.resolve().as_uri())
    err = mismatched(tmp_path, [engine_file(REMOTE, bytes_sha(b"other")), local])
    assert err is not None and err.exit_code == 2
    assert err.message == (f"--find-links {tmp_path}: {NAME}: sha256 mismatch: the lock says "
                           f"{bytes_sha(GOOD)}, the file is {bytes_sha(tampered(GOOD))}; refusing it")
    assert err.hint == "fetch it again with neuronctl download"
    path.write_bytes(GOOD)
    assert mismatched(tmp_path, [local]) is None  # the engine failed for another reason
    # Only files handed on from this wheelhouse are looked at: not a URL, nor a file elsewhere.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / NAME).write_bytes(b"x")
    assert mismatched(tmp_path, [engine_file(REMOTE, bytes_sha(b"x")),
                                 engine_file((elsewhere / NAME).as_uri(), bytes_sha(b"y"))]) is None
    path.unlink()
    gone = mismatched(tmp_path, [local])
    assert gone is not None and NAME in gone.message and "cannot read it" in gone.message


def new_venv_failure(tmp_path: Path, error: FaultError) -> tuple[ApplyFailure, InstallTarget]:
    venv = tmp_path / "env"
    return ApplyFailure("install", error, venv), InstallTarget("python3", venv, new_venv=True)


def test_an_engine_failure_on_a_tampered_wheelhouse_file_is_bad_input_naming_it(tmp_path):
    house = tmp_path / "house"
    house.mkdir()
    path = house / NAME
    path.write_bytes(tampered(GOOD))
    files = [engine_file(path.resolve().as_uri())]
    failure, target = new_venv_failure(tmp_path, FaultError("uv failed: Hash mismatch for `nki==0.7.0`"))
    before = PythonEnv("3.12.1", "cpython", "python3", "/", "/", "linux", "x86_64", "Linux", ("glibc", "2.35"))
    err = failure_error(failure, target, PipEngine(), before, str, wheelhouse=house, files=files)
    assert type(err) is InputError and err.exit_code == 2
    assert err.message.startswith(f"--find-links {house}: {NAME}: sha256 mismatch: the lock says {bytes_sha(GOOD)}")
    assert err.message.endswith(f"; refusing it; removed the new venv {tmp_path / 'env'}")
    assert err.hint == "fetch it again with neuronctl download"
    # Every file is the locked one: the engine's own failure, as before.
    path.write_bytes(GOOD)
    err = failure_error(failure, target, PipEngine(), before, str, wheelhouse=house, files=files)
    assert type(err) is FaultError and err.message.startswith("install failed: uv failed: Hash mismatch")
    # Interrupted: nothing is hashed, the interrupt keeps its exit code.
    path.write_bytes(tampered(GOOD))
    stopped, _ = new_venv_failure(tmp_path, Interrupted("interrupted"))
    err = failure_error(stopped, target, PipEngine(), before, str, wheelhouse=house, files=files)
    assert type(err) is Interrupted and "sha256" not in err.message
    # Without --find-links nothing is looked at.
    err = failure_error(failure, target, PipEngine(), before, str, files=files)
    assert type(err) is FaultError
