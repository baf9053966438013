"""The transport against a hostile server or lock: no path from untrusted text, every request
bounded in time and size, prompt stops, and each failure a one-line error (exit 2 for bad input
from the server, exit 1 for a fault after its retries), never an internal error."""

from __future__ import annotations

import hashlib
import io
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from support.index_server import IndexState, index_server, zip_bomb_wheel
from support.wheels import build_wheel

from neuronctl.errors import FaultError, InputError, Interrupted
from neuronctl.resolvers.download import cached_wheel_path, download_verified
from neuronctl.resolvers.http_fetch import Fetcher
from neuronctl.resolvers.lazy_wheel import RangeFile, read_metadata_from_zip
from neuronctl.resolvers.simple_index import IndexClient
from neuronctl.toml_emit import dumps
from neuronctl.tomlfile import read_toml

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile_transport.py)


@pytest.fixture
def hostile_server():
    state = IndexState("json")
    with index_server(state) as url:
        yield state, url
    state.released.set()


def fetcher(timeout: float = 2.0, retries: int = 2) -> Fetcher:
    return Fetcher(timeout=timeout, retries=retries, backoff=0.01)


# 1. A hash or a file name never becomes a path outside the cache; nothing of the user's is deleted.

def _victim(tmp_path: Path, name: str) -> Path:
    home = tmp_path / "precious"
    home.mkdir(exist_ok=True)
    victim = home / name
    victim.write_text("the user's own file\n")
    return victim


@pytest.mark.parametrize("shape", ["absolute", "dotdot", "short"])
def test_a_hash_that_is_a_path_deletes_nothing(tmp_path, shape):
    source = build_wheel(tmp_path / "src", "nki", "0.7.0")
    victim = _victim(tmp_path, source.name)
    cache = tmp_path / "cache"
    bad = {"absolute": str(victim.parent), "dotdot": "../../../precious",
           "short": "ab"}[shape]
    with pytest.raises(InputError, match="sha256"):
        download_verified(Fetcher(offline=True), source.as_uri(), source.name, cache, sha256=bad,
                          size=None)
    assert victim.read_text() == "the user's own file\n"
    with pytest.raises(InputError):
        cached_wheel_path(cache, bad, source.name)


@pytest.mark.parametrize("name", ["../../precious/victim.whl", "/tmp/x.whl", ".hidden.whl", "a/b.whl"])
def test_a_file_name_that_is_a_path_is_refused(tmp_path, name):
    source = build_wheel(tmp_path / "src", "nki", "0.7.0")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    with pytest.raises(InputError, match="not a safe file name"):
        download_verified(Fetcher(offline=True), source.as_uri(), name, tmp_path / "cache",
                          sha256=digest, size=None)
    assert not (tmp_path / "precious").exists()


def test_a_corrupt_cached_copy_is_replaced_not_trusted(tmp_path):
    source = build_wheel(tmp_path / "src", "nki", "0.7.0")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    cache = tmp_path / "cache"
    planted = cached_wheel_path(cache, digest, source.name)
    planted.parent.mkdir(parents=True)
    planted.write_bytes(b"tampered")
    path, got = download_verified(Fetcher(offline=True), source.as_uri(), source.name, cache,
                                  sha256=digest, size=None)
    assert path == planted and got == digest and path.read_bytes() == source.read_bytes()


def test_install_from_a_lock_whose_hash_is_a_path(cli, uni, tmp_path):
    assert cli("lock", *uni.index_flags(), "--python", "3.12").code == 0
    data = read_toml(Path("pylock.toml"), "lock")
    nki = next(p for p in data["packages"] if p["name"] == "nki")
    victim = _victim(tmp_path, nki["wheels"][0]["name"])
    nki["wheels"][0]["hashes"] = {"sha256": str(victim.parent)}
    Path("evil.toml").write_text(dumps(data, arrays_of_tables=("packages",)))
    for extra in (["--dry-run"], []):
        r = cli("install", "--lock", "evil.toml", "--venv", str(tmp_path / "new"), "--venv-python",
                "3.12", "--engine", "uv", "--no-check", *extra)
        assert r.code == 2, r.err
        assert "internal error" not in r.err and "Traceback" not in r.err
        assert victim.read_text() == "the user's own file\n"
        assert not (tmp_path / "new").exists()


def test_lock_against_an_index_whose_hash_is_a_path(cli, wheels, tmp_path):
    from support.universe import running

    with running(wheels, neuron_ranges=False) as uni:  # metadata by whole download
        entry = uni.neuron.projects["neuronx-cc"][0]
        victim = _victim(tmp_path, entry.filename)
        for e in uni.neuron.projects["neuronx-cc"]:
            uni.neuron.hash_override[e.filename] = str(victim.parent)
        r = cli("lock", *uni.index_flags(), "--python", "3.12")
    assert r.code in (1, 2) and "internal error" not in r.err, r.err
    assert victim.read_text() == "the user's own file\n"
    assert not Path("pylock.toml").exists()


# 2. Time: --timeout bounds a whole request; sizes: every body has a limit.

def test_a_slow_loris_page_fails_at_the_timeout_not_per_read(hostile_server):
    state, url = hostile_server
    state.hostile["/simple/x/"] = "slow-loris"
    state.loris_interval = 0.3  # well inside the 1 s per-read timeout: reads never time out
    start = time.monotonic()
    with pytest.raises(FaultError, match=r"not complete within 1s") as err:
        IndexClient(fetcher(timeout=1.0)).project_files(f"{url}/simple", "x")
    assert time.monotonic() - start < 3.0
    assert url in str(err.value)
    assert [p for _, p, _ in state.hits].count("/simple/x/") == 1  # a trickle is not retried


def test_lock_against_a_slow_loris_index_fails_in_about_the_timeout(cli, uni):
    uni.pypi.hostile["/simple/filelock/"] = "slow-loris"
    uni.pypi.loris_interval = 0.5
    start = time.monotonic()
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--timeout", "2")
    uni.pypi.released.set()
    assert r.code == 1 and "not complete within 2s" in r.err and "index 'pypi'" in r.err, r.err
    assert time.monotonic() - start < 8


def test_a_silent_server_is_retried_then_reported(hostile_server):
    state, url = hostile_server
    state.hostile["/simple/x/"] = "hang"
    start = time.monotonic()
    with pytest.raises(FaultError, match=r"timed out after 0.5s \(after 2 attempts\)"):
        IndexClient(fetcher(timeout=0.5, retries=1)).project_files(f"{url}/simple", "x")
    assert time.monotonic() - start < 3.0


def test_an_endless_download_stops_at_the_declared_size(hostile_server, tmp_path):
    state, url = hostile_server
    state.hostile["/files/big.whl"] = "endless"
    cache = tmp_path / "cache"
    with pytest.raises(InputError, match=r"larger than the 100,000 bytes the lock or index declares"):
        download_verified(fetcher(), f"{url}/files/big.whl", "big.whl", cache, sha256="a" * 64,
                          size=100_000)
    assert not [p for p in cache.rglob("*") if p.is_file()]


def test_an_endless_page_is_capped(hostile_server, monkeypatch):
    from neuronctl.resolvers import http_fetch

    monkeypatch.setattr(http_fetch, "MAX_PAGE", 1 << 20)
    state, url = hostile_server
    state.hostile["/simple/x/"] = "endless"
    with pytest.raises(InputError, match=r"/simple/x/: the response is larger than"):
        IndexClient(fetcher()).project_files(f"{url}/simple", "x")


def test_a_trickled_download_has_a_size_scaled_deadline(hostile_server, tmp_path, wheels):
    state, url = hostile_server
    state.add(build_wheel(tmp_path / "w", "nki", "0.7.0"))
    entry = state.projects["nki"][0]
    state.trickle[entry.filename] = (1, 0.2)  # a byte every 0.2 s: never a per-read timeout
    start = time.monotonic()
    with pytest.raises(FaultError, match="not complete within 1s"):
        download_verified(fetcher(timeout=1.0), f"{url}/files/{entry.filename}", entry.filename,
                          tmp_path / "cache", sha256=entry.sha256, size=entry.path.stat().st_size)
    assert time.monotonic() - start < 4.0


def test_stopping_a_trickled_download_is_prompt(hostile_server, tmp_path):
    state, url = hostile_server
    state.add(build_wheel(tmp_path / "w", "nki", "0.7.0", blob_size=1 << 20))
    entry = state.projects["nki"][0]
    state.trickle[entry.filename] = (512, 0.5)
    stop = threading.Event()
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            download_verified(fetcher(timeout=30), f"{url}/files/{entry.filename}", entry.filename,
                              tmp_path / "cache", sha256=entry.sha256, size=entry.path.stat().st_size,
                              stop=stop.is_set)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    assert state.trickling.wait(10)
    time.sleep(0.3)
    stop.set()
    start = time.monotonic()
    worker.join(5)
    assert not worker.is_alive() and time.monotonic() - start < 1.5
    assert isinstance(outcome[0], Interrupted), outcome
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]


def test_a_zip_bomb_metadata_fails_fast_in_bounded_memory(tmp_path):
    bomb = zip_bomb_wheel(tmp_path, mb=200)
    assert bomb.stat().st_size < 2 << 20
    tracemalloc.start()
    start = time.monotonic()
    try:
        with pytest.raises(ValueError, match="MiB neuronctl reads"):
            read_metadata_from_zip(str(bomb), "bomb")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 << 20 and time.monotonic() - start < 5


def test_lock_refuses_a_zip_bomb_read_by_range_requests(cli, uni, tmp_path):
    uni.neuron.add(zip_bomb_wheel(tmp_path, mb=100))
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--with", "bomb", "--route", "bomb=neuron")
    assert r.code == 2 and "MiB neuronctl reads" in r.err and "bomb-1.0" in r.err, r.err
    served = sum(1 for _, p, _ in uni.neuron.hits if p.endswith("bomb-1.0-py3-none-any.whl"))
    assert served <= 3  # the tail and the directory, never the 100 MB


def test_bad_zip_ranges_are_not_a_readable_wheel(tmp_path):
    wheel = build_wheel(tmp_path, "nki", "0.7.0")
    data = wheel.read_bytes()

    def short(start: int, end: int) -> bytes:  # a server that sends less than the range asked
        return data[start:end][:-5]

    with pytest.raises(ValueError, match="not a readable wheel"):
        read_metadata_from_zip(RangeFile(len(data), short), "nki")
    # A central directory that says it starts past the end of the file.
    eocd = data.rindex(b"PK\x05\x06")
    broken = bytearray(data)
    broken[eocd + 16:eocd + 20] = (len(data) * 4).to_bytes(4, "little")
    with pytest.raises(ValueError, match="not a readable wheel"):
        read_metadata_from_zip(io.BytesIO(bytes(broken)), "nki")


def test_a_directory_that_claims_gigabytes_is_refused_before_it_is_fetched(tmp_path):
    wheel = build_wheel(tmp_path, "nki", "0.7.0")
    data = bytearray(wheel.read_bytes())
    eocd = data.rindex(b"PK\x05\x06")
    data[eocd + 12:eocd + 16] = (1 << 31).to_bytes(4, "little")  # central directory size
    asked: list[tuple[int, int]] = []

    def fetch(start: int, end: int) -> bytes:
        asked.append((start, end))
        return bytes((end - start) * [0])

    fake_size = 3 << 30
    tail = bytes(data[-4096:])
    with pytest.raises(ValueError):
        read_metadata_from_zip(RangeFile(fake_size, fetch, tail), "nki")
    assert sum(e - s for s, e in asked) <= 64 << 20


def test_cache_entries_are_read_back_bounded(tmp_path, monkeypatch):
    from neuronctl.resolvers import http_cache
    from neuronctl.resolvers.http_cache import CachedPage, HttpCache

    monkeypatch.setattr(http_cache, "MAX_ENTRY", 1000)
    cache = HttpCache(tmp_path)
    cache.put_page("http://127.0.0.1:1/simple/x/", CachedPage(b"x" * 2000, "text/html", "u", None, None))
    assert cache.get_page("http://127.0.0.1:1/simple/x/") is None
    cache.put_blob("metadata", "k", b"y" * 2000)
    assert cache.get_blob("metadata", "k") is None
    cache.put_blob("metadata", "k", b"y" * 10)
    assert cache.get_blob("metadata", "k") == b"y" * 10


# 4. Malformed transport: exit 2 for bad input from the server, exit 1 after retries, never internal.

@pytest.mark.parametrize(("mode", "error", "message"), [
    ("bad-gzip", InputError, "does not decode as its Content-Encoding"),
    ("redirect-loop", InputError, "redirect loop"),
    ("redirect-file", InputError, r"not http\(s\)"),
    ("redirect-ftp", InputError, r"not http\(s\)"),
    ("short", FaultError, r"ended early .*\(after 3 attempts\)"),
])
def test_malformed_transport_is_a_clear_error(hostile_server, mode, error, message):
    state, url = hostile_server
    state.hostile["/simple/x/"] = mode
    with pytest.raises(error, match=message) as err:
        IndexClient(fetcher()).project_files(f"{url}/simple", "x")
    assert type(err.value) is error and f"{url}/simple/x/" in str(err.value)
    if mode == "short":
        assert [p for _, p, _ in state.hits].count("/simple/x/") == 3


@pytest.mark.parametrize("bad", ["http://127.0.0.1:99999999/x", "http://127.0.0.1:abc/x", "http:///x",
                                 "http://[::1/x"])
def test_invalid_urls_are_input_errors(bad):
    with pytest.raises(InputError, match="not a valid URL"):
        fetcher().get(bad)


@pytest.mark.parametrize(("mode", "code", "text"), [
    ("bad-gzip", 2, "does not decode"), ("redirect-file", 2, "not http(s)"),
    ("short", 1, "ended early"), ("bad-url", 2, "not a valid URL"),
])
def test_lock_reports_malformed_transport_without_internal_errors(cli, uni, mode, code, text):
    uni.pypi.hostile["/simple/filelock/"] = mode
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--timeout", "5")
    assert r.code == code and text in r.err, r.err
    assert "internal error" not in r.err and "Traceback" not in r.err


# 3. Ctrl-C and SIGTERM stop at once, whatever the network is doing.

@pytest.mark.parametrize(("signame", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_stopping_a_lock_against_a_hanging_index_is_prompt(uni, signame, code):
    uni.pypi.hostile["/simple/filelock/"] = "hang"
    proc = subprocess.Popen([sys.executable, "-m", "neuronctl", "lock", *uni.index_flags(), "--python",
                             "3.12", "--timeout", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 60
        while not any(p == "/simple/filelock/" for _, p, _ in uni.pypi.hits):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(getattr(signal, signame))
        start = time.monotonic()
        _, err = proc.communicate(timeout=20)
        took = time.monotonic() - start
    finally:
        proc.kill()
        uni.pypi.released.set()
    assert proc.returncode == code, err
    assert took < 2.5, took
    assert "Traceback" not in err and not Path("pylock.toml").exists()


# 5 (issue 12). Errors that say where neuronctl looked and how to change it.

def test_an_unreachable_index_is_named_with_the_ways_to_move_it(cli, uni):
    flags = [f for f in uni.index_flags() if "pytorch-cpu" not in f]
    r = cli("lock", *flags, "--index", "pytorch-cpu=http://alice:s3cret@127.0.0.1:9/whl/cpu", "--python",
            "3.12", "--timeout", "1")
    assert r.code == 1, r.err
    assert "index 'pytorch-cpu'" in r.err and "127.0.0.1:9/whl/cpu" in r.err and "s3cret" not in r.err
    for way in ("--index pytorch-cpu=URL", "NEURONCTL_INDEX_PYTORCH_CPU", "`indexes`"):
        assert way in r.err, r.err


def test_a_missing_package_hint_names_the_other_indexes_not_the_one_used(cli, uni):
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--with", "nosuchpkg")
    assert r.code == 2, r.err
    assert "--route nosuchpkg=pypi" not in r.err
    assert "index 'pypi'" in r.err and "check the name" in r.err
    assert "--route nosuchpkg=INDEX" in r.err and "pytorch-cpu" in r.err and "neuron" in r.err


def test_a_wheel_index_page_with_thousands_of_files_passes(hostile_server):
    state, url = hostile_server
    files = [{"filename": f"x-1.{i}-py3-none-any.whl", "url": f"/files/x-1.{i}-py3-none-any.whl",
              "hashes": {"sha256": "ab" * 32}} for i in range(20_000)]
    import json

    state.corrupt_page["x"] = json.dumps({"meta": {"api-version": "1.1"}, "name": "x", "files": files})
    state.projects["x"] = []
    got = IndexClient(fetcher()).project_files(f"{url}/simple", "x")
    assert got is not None and len(got) == 20_000


def test_the_zip_bomb_helper_is_a_real_wheel(tmp_path):
    bomb = zip_bomb_wheel(tmp_path, mb=1)
    with zipfile.ZipFile(bomb) as zf:
        assert zf.getinfo("bomb-1.0.dist-info/METADATA").file_size > 1 << 20


def test_a_streamed_response_stays_under_its_deadline_and_cap(hostile_server):
    """What a caller reads from get(stream=True) (the range-request tail) is bounded too."""
    state, url = hostile_server
    state.hostile["/files/slow.whl"] = "slow-loris"
    state.loris_interval = 0.2
    start = time.monotonic()
    response = fetcher(timeout=1.0).get(f"{url}/files/slow.whl", stream=True)
    with pytest.raises(FaultError, match="not complete within 1s"):
        response.content  # noqa: B018
    assert time.monotonic() - start < 3.0
    state.hostile["/files/endless.whl"] = "endless"
    with pytest.raises(InputError, match="larger than"):
        fetcher().get(f"{url}/files/endless.whl", stream=True, limit=1 << 20).content  # noqa: B018
