"""The verified download into the wheel cache, on its own."""

import hashlib
import os
import time

from neuronctl.resolvers.download import cached_wheel_path, download_verified
from neuronctl.resolvers.http_fetch import Fetcher


def test_a_download_sweeps_partial_files_left_by_killed_processes(tmp_path):
    source = tmp_path / "nki-0.7.0-py3-none-any.whl"
    source.write_bytes(b"PK wheel bytes")
    partial = tmp_path / "cache" / "wheels" / "partial"
    partial.mkdir(parents=True)
    killed = partial / "torch-2.14.0-cp312-cp312-linux_x86_64.whl.abc123"
    killed.write_bytes(b"x" * 1000)
    two_days_ago = time.time() - 2 * 24 * 3600
    os.utime(killed, (two_days_ago, two_days_ago))
    running = partial / "neuronx_cc-2.28-py3-none-any.whl.def456"  # another process's, in progress
    running.write_bytes(b"y" * 1000)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    path, got = download_verified(Fetcher(offline=True), source.as_uri(), source.name, tmp_path / "cache",
                                  sha256=digest, size=source.stat().st_size)
    assert got == digest and path == cached_wheel_path(tmp_path / "cache", digest, source.name)
    assert path.read_bytes() == source.read_bytes()
    assert not killed.exists() and running.exists()
    assert sorted(p.name for p in partial.iterdir()) == [running.name]
