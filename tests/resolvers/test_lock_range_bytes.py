"""What `lock` reads of a wheel that has no metadata sidecar (issue 36: at most 1.5x the bytes uv
reads): the zip's last 16 KiB (uv's tail too), the part of a larger central directory the tail
lacks and nothing of it twice, then the METADATA member in one request sized to it."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from support.universe import build_universe, running
from support.wheels import build_wheel

from neuronctl.resolvers.lazy_wheel import TAIL, RangeFile, read_metadata_from_zip

MEMBER_REQUEST_MAX = 2048
"""The METADATA member's request: its local header, name, a test wheel's few hundred bytes of
compressed METADATA and the slack for a local extra field, well under uv's 8 KiB."""


def _reader(data: bytes) -> tuple[RangeFile, list[tuple[int, int]]]:
    """A RangeFile over `data` as metadata_fetch makes one: the tail already fetched, then every
    further range recorded."""
    asked: list[tuple[int, int]] = []

    def fetch(start: int, end: int) -> bytes:
        asked.append((start, end))
        return data[start:end]

    return RangeFile(len(data), fetch, data[-TAIL:]), asked


def test_a_large_wheel_costs_the_tail_and_one_request_sized_to_its_metadata(tmp_path):
    wheel = build_wheel(tmp_path, "neuronx-cc", "2.28.7631.0", requires=("numpy>=1.24",),
                        blob_size=1 << 20)
    reader, asked = _reader(wheel.read_bytes())
    text = read_metadata_from_zip(reader, "neuronx-cc")
    assert "Requires-Dist: numpy>=1.24" in text
    assert len(asked) == 1, asked  # the directory was in the tail: only the member is asked for
    start, end = asked[0]
    info = zipfile.ZipFile(wheel).getinfo("neuronx_cc-2.28.7631.0.dist-info/METADATA")
    assert start == info.header_offset and end - start <= MEMBER_REQUEST_MAX


def test_a_directory_bigger_than_the_tail_is_fetched_once_without_the_tail_again(tmp_path):
    files = {f"pkg/{'m' * 40}_{i:05d}.py": "x = 1\n" for i in range(600)}  # ~55 KB of directory
    wheel = build_wheel(tmp_path, "pkg", "1.0", files=files, blob_size=256 << 10)
    data = wheel.read_bytes()
    reader, asked = _reader(data)
    assert "Name: pkg" in read_metadata_from_zip(reader, "pkg")
    tail_start = len(data) - TAIL
    assert all(end <= tail_start or start >= tail_start for start, end in asked), asked
    directory = data.rindex(b"PK\x01\x02")  # the last directory entry: all of them end the file
    assert sum(end - start for start, end in asked) < len(data) - directory + 60_000 + MEMBER_REQUEST_MAX


@pytest.fixture(scope="module")
def big_universe(tmp_path_factory):
    return build_universe(tmp_path_factory.mktemp("big"), big_compiler=8 << 20)


def test_lock_reads_a_sidecarless_compiler_wheel_in_two_small_ranges(cli, big_universe):
    with running(big_universe) as uni:
        r = cli("lock", *uni.index_flags(), "--python", "3.12")
        assert r.code == 0, r.err
        compiler = [rng for method, path, rng in uni.neuron.hits
                    if method == "GET" and path.startswith("/files/neuronx_cc-")]
    assert compiler[0] == f"bytes=-{TAIL}" and len(compiler) == 2, compiler
    first, _, last = compiler[1].removeprefix("bytes=").partition("-")
    assert int(last) + 1 - int(first) <= MEMBER_REQUEST_MAX
    assert Path("pylock.toml").is_file()
