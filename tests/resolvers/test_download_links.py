"""`download` never writes through a symbolic link in DIR (issue 22, item 17): a file name there
that is a link (to a file outside DIR, or to another file in it) is replaced by the verified
file and its target left as it was; a staging folder (`.neuronctl-partial`, or a folder inside
it) that is a link is refused, exit 2, and nothing is written, swept or moved outside DIR. The
same holds in the wheel cache that download_verified fills. Real files, a real lock of file:
URLs, the real CLI."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest
from support.wheels import build_wheel

from neuronctl.errors import InputError
from neuronctl.resolvers.download import cached_wheel_path, download_verified
from neuronctl.resolvers.http_fetch import Fetcher

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_files_download.py)

STAGING = ".neuronctl-partial"
VICTIM = b"the user's own file\n"
OLD = time.time() - 3 * 24 * 3600  # older than the stale-partial sweep's cut-off


def _one_wheel_lock(tmp_path: Path) -> tuple[Path, Path, str]:
    wheel = build_wheel(tmp_path / "src", "nki", "0.7.0")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    lock = tmp_path / "pylock.toml"
    lock.write_text(f'''lock-version = "1.0"
created-by = "tests"

[[packages]]
name = "nki"
version = "0.7.0"

[[packages.wheels]]
name = "{wheel.name}"
url = "{wheel.as_uri()}"
size = {wheel.stat().st_size}
hashes = {{sha256 = "{digest}"}}
''')
    return lock, wheel, digest


def _outside(tmp_path: Path) -> Path:
    """A folder outside DIR holding a file of the user's, old enough to be swept as stale."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "keep.whl.abc").write_bytes(VICTIM)
    os.utime(folder / "keep.whl.abc", (OLD, OLD))
    return folder


def _unchanged(folder: Path) -> None:
    assert sorted(p.name for p in folder.iterdir()) == ["keep.whl.abc"]
    assert (folder / "keep.whl.abc").read_bytes() == VICTIM


@pytest.mark.parametrize("where", ["outside", "inside"])
def test_a_file_name_that_is_a_link_is_replaced_not_written_through(cli, tmp_path, where):
    lock, wheel, digest = _one_wheel_lock(tmp_path)
    house = tmp_path / "house"
    house.mkdir()
    target = (_outside(tmp_path) / "keep.whl.abc") if where == "outside" else house / "notes.txt"
    if where == "inside":
        target.write_bytes(VICTIM)
    (house / wheel.name).symlink_to(target)
    r = cli("download", "--lock", str(lock), "-d", str(house))
    assert r.code == 0, r.err
    assert target.read_bytes() == VICTIM and not target.is_symlink()
    final = house / wheel.name
    assert not final.is_symlink() and hashlib.sha256(final.read_bytes()).hexdigest() == digest


@pytest.mark.parametrize("linked", [STAGING, f"{STAGING}/wheels", f"{STAGING}/wheels/partial"])
def test_a_staging_folder_that_is_a_link_is_refused_and_nothing_outside_changes(cli, tmp_path, linked):
    lock, wheel, _ = _one_wheel_lock(tmp_path)
    house = tmp_path / "house"
    outside = _outside(tmp_path)
    (house / linked).parent.mkdir(parents=True)
    (house / linked).symlink_to(outside)
    r = cli("download", "--lock", str(lock), "-d", str(house))
    assert r.code == 2, (r.code, r.err)
    assert len(r.err.strip().splitlines()) == 1 and "symbolic link" in r.err, r.err
    _unchanged(outside)
    assert not (house / wheel.name).exists()


def test_a_cache_folder_that_is_a_link_is_not_written_or_swept(tmp_path):
    _, wheel, digest = _one_wheel_lock(tmp_path)
    outside = _outside(tmp_path)
    cache = tmp_path / "cache"
    (cache / "wheels").mkdir(parents=True)
    (cache / "wheels" / digest[:2]).symlink_to(outside)
    with pytest.raises(InputError, match=r"symbolic link|would leave"):
        download_verified(Fetcher(offline=True), wheel.as_uri(), wheel.name, cache, sha256=digest,
                          size=None)
    _unchanged(outside)


def test_a_cached_copy_that_is_a_link_is_neither_trusted_nor_moved(tmp_path):
    """A link at the cached copy's name, to a file with the right bytes elsewhere: the cache's
    answer is its own verified file, and the linked file stays where it is."""
    _, wheel, digest = _one_wheel_lock(tmp_path)
    cache = tmp_path / "cache"
    elsewhere = tmp_path / "elsewhere.whl"
    elsewhere.write_bytes(wheel.read_bytes())
    planted = cached_wheel_path(cache, digest, wheel.name)
    planted.parent.mkdir(parents=True)
    planted.symlink_to(elsewhere)
    path, got = download_verified(Fetcher(offline=True), wheel.as_uri(), wheel.name, cache,
                                  sha256=digest, size=None)
    assert got == digest and not path.is_symlink() and path.parent == planted.parent
    assert elsewhere.read_bytes() == wheel.read_bytes() and not elsewhere.is_symlink()
