"""Each fact once (issue 13): one `neuronctl lock` parses the manifest once and talks HTTP through
one Fetcher and one requests Session; `lock --check` reads the lock once and fetches nothing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import requests

import neuronctl.release.manifest
import neuronctl.resolvers.lock_record
import neuronctl.resolvers.pylock
from neuronctl.resolvers.http_fetch import Fetcher


@pytest.fixture
def lock_calls(monkeypatch) -> Counter:
    seen: Counter = Counter()

    def counting(key, original):
        def wrapper(*args, **kwargs):
            seen[key] += 1
            return original(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(Fetcher, "__init__", counting("fetcher", Fetcher.__init__))
    original_session = requests.Session

    class CountingSession(original_session):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:
            seen["session"] += 1
            super().__init__()

    monkeypatch.setattr(requests, "Session", CountingSession)
    monkeypatch.setattr(neuronctl.release.manifest, "parse_manifest",
                        counting("manifest", neuronctl.release.manifest.parse_manifest))
    # a lock is read through the reader (neuronctl.resolvers.pylock) or, for --check, through
    # lock_record's own reference to it and its requirements reader: each counts
    reader, record = neuronctl.resolvers.pylock, neuronctl.resolvers.lock_record
    monkeypatch.setattr(reader, "load_pylock", counting("lock read", reader.load_pylock))
    monkeypatch.setattr(record, "load_pylock", counting("lock read", record.load_pylock))
    monkeypatch.setattr(record, "_requirements_lines",
                        counting("lock read", record._requirements_lines))
    return seen


def test_lock_parses_the_manifest_once_on_one_fetcher_and_one_session(cli, uni, lock_calls):
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--python", "3.13")
    assert r.code == 0, r.err
    assert lock_calls == {"fetcher": 1, "session": 1, "manifest": 1}  # the lock is written, never read


@pytest.mark.parametrize("output", ["pylock.toml", "requirements.txt"])
def test_lock_check_reads_the_lock_once_and_fetches_nothing(cli, uni, lock_calls, output):
    assert cli("lock", *uni.index_flags(), "--python", "3.12", "-o", output).code == 0
    lock_calls.clear()
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "-o", output, "--check")
    assert r.code == 0 and "up to date" in r.out, r.err
    assert lock_calls == {"manifest": 1, "lock read": 1}
    lock_calls.clear()
    r = cli("lock", *uni.index_flags(), "--python", "3.13", "-o", output, "--check")
    assert r.code == 1 and "targets" in r.err
    assert lock_calls == {"manifest": 1, "lock read": 1}
    assert Path(output).exists()
