"""`neuronctl download` (a verified wheelhouse from a lock) and `install --lock --find-links DIR
[--offline]` from it, against the loopback indexes, with real venvs and both engines."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.universe import running
from support.venvs import installed

from neuronctl.toml_emit import dumps
from neuronctl.tomlfile import read_toml

pytestmark = pytest.mark.slow
STAGING = ".neuronctl-partial"


def locked_files(lock: Path) -> dict[str, str]:
    """file name -> sha256 of every wheel the lock lists."""
    data = read_toml(lock, "lock")
    return {w["name"]: w["hashes"]["sha256"] for p in data["packages"] for w in p["wheels"]}


def final_files(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.is_file()}


def staged_files(folder: Path) -> list[Path]:
    """The staged files now; a running download prunes its per-hash folders as files land, so
    a folder may vanish mid-walk (os.walk skips it where rglob raised)."""
    import os

    return [Path(root, name) for root, _, names in os.walk(folder / STAGING) for name in names
            if Path(root, name).is_file()]


def file_hits(uni) -> list[str]:
    return [path for _m, path, _r in uni.all_hits() if path.endswith(".whl")]


@pytest.fixture
def two_pythons(cli, uni) -> Path:
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--python", "3.13")
    assert r.code == 0, r.err
    return Path("pylock.toml").resolve()


def test_download_fetches_every_locked_file_verified_and_a_rerun_fetches_nothing(cli, uni, two_pythons,
                                                                                 tmp_path):
    house = tmp_path / "house"
    r = cli("download", "--lock", str(two_pythons), "-d", str(house))
    assert r.code == 0, r.err + r.out
    want = locked_files(two_pythons)
    assert final_files(house) == want  # every wheel of both targets, each exactly as locked
    assert any("cp312" in n for n in want) and any("cp313" in n for n in want)
    assert not staged_files(house)
    assert "sha256 ok" in r.err  # a line per file without a terminal
    uni.pypi.reset_counts(), uni.torch.reset_counts(), uni.neuron.reset_counts()
    r = cli("download", "--lock", str(two_pythons), "-d", str(house), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert {f["status"] for f in doc["files"]} == {"present"} and not file_hits(uni)
    assert doc["command"] == "download" and len(doc["files"]) == len(want)


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_downloaded_files_are_readable_as_the_umask_allows_not_private_temporaries(cli, uni, two_pythons,
                                                                                  tmp_path, umask, mode):
    """A wheelhouse on shared storage is read by other users and hosts: its files get the mode
    any new file gets under the umask, not the 0600 of the staged download."""
    import os
    import stat

    house = tmp_path / "house"
    old = os.umask(umask)
    try:
        r = cli("download", "--lock", str(two_pythons), "-d", str(house))
    finally:
        os.umask(old)
    assert r.code == 0, r.err
    modes = {stat.S_IMODE((house / name).stat().st_mode) for name in final_files(house)}
    assert modes == {mode}


def test_download_for_one_python_takes_only_its_files(cli, uni, two_pythons, tmp_path):
    house = tmp_path / "house"
    r = cli("download", "--lock", str(two_pythons), "-d", str(house), "--python", "3.13")
    assert r.code == 0, r.err
    got = set(final_files(house))
    assert got and not any("cp312" in n for n in got) and any("cp313" in n for n in got)
    assert any(n.endswith("-py3-none-any.whl") for n in got)
    r = cli("download", "--lock", str(two_pythons), "-d", str(house), "--platform", "manylinux_2_28_x86_64")
    assert r.code == 2 and "--platform needs --python" in r.err


def test_a_wrong_file_in_the_wheelhouse_is_replaced_and_a_wrong_download_never_lands(cli, uni, two_pythons,
                                                                                     tmp_path):
    from support.wheels import build_wheel

    house = tmp_path / "house"
    assert cli("download", "--lock", str(two_pythons), "-d", str(house)).code == 0
    nki = next(n for n in locked_files(two_pythons) if n.startswith("nki-"))
    (house / nki).write_bytes(b"torn")
    r = cli("download", "--lock", str(two_pythons), "-d", str(house), "--json")
    assert r.code == 0, r.err
    status = {f["file"]: f["status"] for f in json.loads(r.out)["files"]}
    assert status[nki] == "replaced" and final_files(house) == locked_files(two_pythons)
    # The index now serves another nki: the download fails naming it, and nothing of it lands.
    (house / nki).unlink()
    uni.neuron.projects["nki"][0].path = build_wheel(tmp_path / "evil", "nki", "0.7.0", summary="evil")
    r = cli("download", "--lock", str(two_pythons), "-d", str(house))
    assert r.code == 2 and "sha256 mismatch" in r.err and nki in r.err
    assert not (house / nki).exists() and not staged_files(house)


def test_unsafe_file_names_in_the_lock_name_nothing(cli, uni, two_pythons, tmp_path):
    data = read_toml(two_pythons, "lock")
    data["packages"][0]["wheels"][0]["name"] = "../../escape.whl"
    Path("pylock.evil.toml").write_text(dumps(data, arrays_of_tables=("packages",)))
    r = cli("download", "--lock", "pylock.evil.toml", "-d", str(tmp_path / "house"))
    assert r.code == 2 and "escape.whl" in r.err and "pylock.evil.toml" in r.err
    assert not (tmp_path / "escape.whl").exists() and not (tmp_path / "house").exists()


@pytest.mark.parametrize(("signame", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_stopped_download_leaves_no_partial_file_and_a_rerun_resumes(cli, uni, two_pythons, tmp_path,
                                                                       signame, code):
    from support.locks import big_nki_lock
    from support.waiting import wait_until

    lock, big = big_nki_lock(uni, two_pythons, tmp_path, 8)
    uni.neuron.trickle[big.name] = (64 << 10, 0.25)  # 8 MB in about 32 s
    house = tmp_path / "house"
    proc = subprocess.Popen([sys.executable, "-m", "neuronctl", "download", "--lock", str(lock),
                             "-d", str(house)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def midway() -> bool:
        return uni.neuron.trickling.is_set() and any(p.name.startswith("nki-") for p in staged_files(house))

    try:
        wait_until(midway, proc)
        proc.send_signal(getattr(signal, signame))
        _, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    done = final_files(house)
    want = locked_files(lock)
    assert big.name not in done and not staged_files(house)
    assert all(want[name] == sha for name, sha in done.items())  # what has a final name is whole
    del uni.neuron.trickle[big.name]
    uni.pypi.reset_counts(), uni.torch.reset_counts(), uni.neuron.reset_counts()
    r = cli("download", "--lock", str(lock), "-d", str(house), "--json")
    assert r.code == 0, r.err
    status = {f["file"]: f["status"] for f in json.loads(r.out)["files"]}
    assert status[big.name] == "downloaded"
    assert all(status[name] == "present" for name in done)
    assert sorted(p.rsplit("/", 1)[-1] for p in file_hits(uni)) == sorted(set(want) - set(done))
    assert final_files(house) == want


@pytest.mark.parametrize("engine", ["pip", "uv"])
def test_install_from_the_wheelhouse_offline_with_the_indexes_gone(cli, wheels, tmp_path, engine):
    house = tmp_path / "house"
    with running(wheels) as uni:
        assert cli("lock", *uni.index_flags(), "--python", "3.12").code == 0
        assert cli("download", "--lock", "pylock.toml", "-d", str(house)).code == 0
    venv = tmp_path / "env"
    r = cli("install", "--lock", "pylock.toml", "--find-links", str(house), "--offline",
            "--venv", str(venv), "--venv-python", "3.12", "--engine", engine, "--no-check")
    assert r.code == 0, r.err + r.out
    assert f"from the wheelhouse {house}" in r.out
    got = installed(venv / "bin" / "python")
    assert got["torch"] == "2.14.0+cpu" and got["torch-neuronx"] == "2.14.3.0"


def test_a_missing_or_mismatching_wheelhouse_file_is_an_error_naming_it(cli, wheels, tmp_path, engines_fail_fast):
    house = tmp_path / "house"
    with running(wheels) as uni:
        assert cli("lock", *uni.index_flags(), "--python", "3.12").code == 0
        assert cli("download", "--lock", "pylock.toml", "-d", str(house)).code == 0
    nki = next(house.glob("nki-*.whl"))
    venv = tmp_path / "env"
    args = ("install", "--lock", "pylock.toml", "--find-links", str(house), "--venv", str(venv),
            "--venv-python", "3.12", "--engine", "uv", "--no-check")
    data = nki.read_bytes()
    nki.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # same size, one bit off: the engine refuses it
    r = cli(*args)
    assert r.code == 2 and nki.name in r.err and "sha256 mismatch" in r.err and not venv.exists()
    # A file of another size is refused before any engine runs: even a dry run says so.
    nki.write_bytes(data + b"\0")
    for extra in ((), ("--dry-run",)):
        r = cli(*args, *extra)
        assert r.code == 2 and f"{nki.name}: {len(data) + 1:,} bytes, the lock says {len(data):,}" in r.err
        assert "install failed" not in r.err and not venv.exists()
    nki.unlink()
    r = cli(*args, "--offline")
    assert r.code == 2 and "1 locked files missing" in r.err and nki.name in r.err
    assert "neuronctl download" in r.err and not venv.exists()
    # Without --offline a missing file comes from its URL: here the indexes are gone, so it fails
    # naming the index, and the venv is removed again.
    r = cli(*args)
    assert r.code != 0 and not venv.exists()
    r = cli("install", "--find-links", str(house), "--venv", str(venv))
    assert r.code == 2 and "pass --lock" in r.err


def test_without_offline_a_missing_file_comes_from_its_url_and_a_note_names_it(cli, uni, tmp_path):
    house = tmp_path / "house"
    assert cli("lock", *uni.index_flags(), "--python", "3.12").code == 0
    assert cli("download", "--lock", "pylock.toml", "-d", str(house)).code == 0
    nki = next(house.glob("nki-*.whl"))
    nki.unlink()
    uni.pypi.reset_counts(), uni.torch.reset_counts(), uni.neuron.reset_counts()
    venv = tmp_path / "env"
    r = cli("install", "--lock", "pylock.toml", "--find-links", str(house), "--venv", str(venv),
            "--venv-python", "3.12", "--engine", "uv", "--no-check")
    assert r.code == 0, r.err + r.out
    assert f"{nki.name} is not in {house}; it comes from its URL" in r.err
    assert {p.rsplit("/", 1)[-1] for p in file_hits(uni)} == {nki.name}  # only it, from its index
    assert installed(venv / "bin" / "python")["nki"] == "0.7.0"


def flipped_inside(path: Path) -> None:
    """One byte of the first member's modification time flipped: the same size and still a
    sound zip, so only a check of the bytes against the lock's sha256 can tell."""
    data = bytearray(path.read_bytes())
    assert data[:4] == b"PK\x03\x04"
    data[10] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("engine", ["pip", "uv"])
def test_a_tampered_wheelhouse_file_is_named_and_no_environment_is_changed(cli, wheels, tmp_path,
                                                                           stack_wheels, engine):
    """neuronctl does not hash the wheelhouse on the way in: the engine checks each file against
    the lock's sha256 as it reads it, before it changes anything. Its failure then names the file,
    as bad input; a new venv is removed, an existing one (another stack installed) is left byte
    for byte as it was."""
    from support.venvs import legacy_venv, snapshot

    house = tmp_path / "house"
    with running(wheels) as uni:
        assert cli("lock", *uni.index_flags(), "--python", "3.12").code == 0
        assert cli("download", "--lock", "pylock.toml", "-d", str(house)).code == 0
    nki = next(house.glob("nki-*.whl"))
    flipped_inside(nki)
    args = ("install", "--lock", "pylock.toml", "--find-links", str(house), "--offline", "--engine",
            engine, "--yes", "--no-check")
    venv = tmp_path / "env"
    r = cli(*args, "--venv", str(venv), "--venv-python", "3.12")
    assert r.code == 2, r.err
    assert f"{nki.name}: sha256 mismatch: the lock says {locked_files(Path('pylock.toml'))[nki.name]}, " \
           f"the file is {hashlib.sha256(nki.read_bytes()).hexdigest()}; refusing it" in r.err
    assert f"removed the new venv {venv}" in r.err and "neuronctl download" in r.err
    assert not venv.exists()
    existing = legacy_venv(tmp_path, stack_wheels)
    before = snapshot(existing)
    r = cli(*args, "--python", str(existing / "bin" / "python"))
    assert r.code == 2, r.err
    assert f"{nki.name}: sha256 mismatch" in r.err and "nothing changed" in r.err
    assert snapshot(existing) == before
