"""`install --find-links DIR --engine pip`: a wheelhouse file replaced after it was checked is
never installed. pip hashes a local file and then opens it again to install it; neuronctl hands it
a private copy, hashed as it is copied (the wheelhouse file is read once), so what pip checks and
installs is a file nobody else can change.

The swap is done at the worst moment, from inside the real pip: a hook in the target venv (a .pth
that wraps pip's hash check) replaces the wheelhouse file with another wheel of the same name the
moment pip's check of a file has passed."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from support.locks import demo_wheel, write_lock
from support.venvs import copied_venv, said, sha256_of
from support.wheels import site_packages

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_engine_swap.py)


HOOK = '''
import importlib.abc, importlib.util, os, sys

class _SwapAfterCheck(importlib.abc.MetaPathFinder):
    """Wraps pip's Hashes.check_against_path: once a check passes, the wheelhouse file is replaced."""

    def find_spec(self, name, path, target=None):
        if name != "pip._internal.utils.hashes":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            checked = module.Hashes.check_against_path

            def check_then_swap(self, path):
                result = checked(self, path)
                src = os.environ["NEURONCTL_TEST_SWAP_FROM"]
                if os.path.exists(src):
                    os.replace(src, os.environ["NEURONCTL_TEST_SWAP_TO"])
                    open(os.environ["NEURONCTL_TEST_SWAPPED"], "w").write(path)
                return result

            module.Hashes.check_against_path = check_then_swap

        spec.loader.exec_module = exec_module
        return spec

if os.environ.get("NEURONCTL_TEST_SWAP_FROM"):
    sys.meta_path.insert(0, _SwapAfterCheck())
'''


@pytest.fixture
def private_tmp(tmp_path, monkeypatch) -> Path:
    """This test's own temporary directory, to see what neuronctl leaves in it."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _locked(wheel: Path, tmp_path: Path, pip_venvs) -> tuple[Path, Path]:
    """A lock of `wheel` by name and hash alone (no size), and a venv with pip to install it in."""
    entry = {"name": wheel.name, "url": f"http://127.0.0.1:9/files/{wheel.name}",
             "hashes": {"sha256": sha256_of(wheel)}}
    lock = write_lock(tmp_path / "pylock.toml", ("demo", "1.0", entry))
    return lock, copied_venv(pip_venvs, "3.12", tmp_path / "env")


def _install_from(cli, lock: Path, house: Path, python: Path):
    return cli("install", "--lock", str(lock), "--find-links", str(house), "--offline",
               "--python", str(python), "--engine", "pip", "--no-check")


def test_a_wheelhouse_file_swapped_after_the_check_is_never_installed(cli, tmp_path, pip_venvs,
                                                                    monkeypatch, private_tmp):
    house = tmp_path / "house"
    good = demo_wheel(house)
    evil = demo_wheel(tmp_path / "evil", said="evil")  # the same file name, other bytes
    evil_sha = sha256_of(evil)
    assert evil.name == good.name and evil_sha != sha256_of(good)
    entry = {"name": good.name, "url": f"http://127.0.0.1:9/files/{good.name}",
             "size": good.stat().st_size, "hashes": {"sha256": sha256_of(good)}}
    lock = write_lock(tmp_path / "pylock.toml", ("demo", "1.0", entry))
    python = copied_venv(pip_venvs, "3.12", tmp_path / "env")
    sp = site_packages(tmp_path / "env")
    (sp / "zz_swap_hook.py").write_text(HOOK)
    (sp / "zz_swap_hook.pth").write_text("import zz_swap_hook\n")
    swapped = tmp_path / "swapped"
    monkeypatch.setenv("NEURONCTL_TEST_SWAP_FROM", str(evil))
    monkeypatch.setenv("NEURONCTL_TEST_SWAP_TO", str(house / good.name))
    monkeypatch.setenv("NEURONCTL_TEST_SWAPPED", str(swapped))
    r = _install_from(cli, lock, house, python)
    assert swapped.exists(), "the hook never ran: pip's check was not reached"
    assert sha256_of(house / good.name) == evil_sha  # the wheelhouse now holds the other file
    assert said(python) == "SAID = 'good'\n", "the file swapped in after the check was installed"
    assert r.code == 0, r.err
    assert not list(private_tmp.iterdir()), "the private copies were left behind"


def test_a_wheelhouse_file_that_is_not_the_locked_one_is_refused_before_pip_runs(cli, tmp_path,
                                                                               pip_venvs,
                                                                               private_tmp):
    """Already swapped when neuronctl copies it (the lock gives no size, so nothing before the
    copy can tell): the copy's hash is the check, exit 2 naming the file, nothing installed."""
    house = tmp_path / "house"
    good = demo_wheel(tmp_path / "good")
    evil = demo_wheel(house, said="evil")
    lock, python = _locked(good, tmp_path, pip_venvs)
    r = _install_from(cli, lock, house, python)
    assert r.code == 2, r.err + r.out
    err = " ".join(r.err.split())
    assert f"--find-links {house}: {evil.name}: sha256 mismatch: the lock says {sha256_of(good)}, the file " \
           f"is {sha256_of(evil)}; refusing it" in err and "nothing changed" in err
    assert said(python) is None and not list(private_tmp.iterdir())


def test_a_fifo_in_place_of_a_wheelhouse_file_is_refused_not_waited_on(cli, tmp_path, pip_venvs):
    house = tmp_path / "house"
    good = demo_wheel(tmp_path / "good")
    house.mkdir()
    os.mkfifo(house / good.name)
    lock, python = _locked(good, tmp_path, pip_venvs)
    r = _install_from(cli, lock, house, python)
    assert r.code == 2 and "is not a file" in r.err and said(python) is None


def test_a_fifo_swapped_in_after_the_source_check_is_refused_not_waited_on(tmp_path):
    """Between the cheap check (a regular file) and the copy, or before the failure path hashes
    the wheelhouse: neither open waits for a writer."""
    from neuronctl.errors import InputError
    from neuronctl.locked_file import LockedFile
    from neuronctl.ops.install.find_links import mismatched
    from neuronctl.ops.install.private_copy import private_copy

    house = tmp_path / "house"
    house.mkdir()
    name = "demo-1.0-py3-none-any.whl"
    os.mkfifo(house / name)
    file = LockedFile("demo", "1.0", name, (house / name).as_uri(), "a" * 64)
    with pytest.raises(InputError, match="not a regular file"):
        private_copy(file, tmp_path / "copies")
    refused = mismatched(house, [file])
    assert refused is not None and refused.message == f"--find-links {house}: {name} is not a file"
