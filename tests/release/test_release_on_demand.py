"""The bundled release data is built one release at a time, when read (issue 36): the same
releases, in the same order, with the same checks and messages as the whole-file parse."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.bundled_releases import VERSIONS

from neuronctl.data import bundled_text
from neuronctl.errors import InputError
from neuronctl.release.manifest import load_bundled_manifest, parse_manifest
from neuronctl.release.model import OnDemand


def _bundled_data() -> dict[str, Any]:
    data = json.loads(bundled_text("releases.json"))
    assert isinstance(data, dict)
    return data


def test_the_bundled_data_on_demand_is_the_whole_parse() -> None:
    eager = parse_manifest(_bundled_data(), "bundled manifest", origin="bundled")
    lazy = load_bundled_manifest()
    assert isinstance(lazy.releases, OnDemand) and not isinstance(eager.releases, OnDemand)
    assert [r.version for r in lazy.releases] == [r.version for r in eager.releases]
    assert list(lazy.releases) == list(eager.releases)  # rules attached, every field the same
    assert lazy.to_json() == eager.to_json()
    assert lazy.releases[1:3] == eager.releases[1:3]
    assert list(reversed(lazy.releases)) == list(reversed(eager.releases))


def test_the_default_release_builds_only_what_it_reads() -> None:
    manifest = load_bundled_manifest()
    releases = manifest.releases
    assert isinstance(releases, OnDemand) and releases.built == 0
    default = manifest.default
    assert releases.built <= VERSIONS.index(default.version) + 1 < len(releases)  # newest to it
    assert manifest.find(default.version) is default
    assert manifest.get("latest") is default


def _with_bad_oldest(change: dict[str, Any]) -> dict[str, Any]:
    data = _bundled_data()
    oldest = min(range(len(data["releases"])),
                 key=lambda i: [int(p) for p in data["releases"][i]["version"].split(".")])
    data["releases"][oldest].update(change)
    return data


@pytest.mark.parametrize(("change", "message"), [
    ({"torch": ["not a version"]}, r"releases\[\d+\]\.torch: 'not a version' is not a PEP 440"),
    ({"chips": ["trn9"]}, r"releases\[\d+\]\.chips: unknown chip 'trn9'"),
    ({"sources": {"torch": "nowhere"}}, r"releases\[\d+\]\.sources\.torch: unknown source"),
    ({"packages": None}, r"releases\[\d+\]\.packages: expected an object, got null"),
])
def test_a_bad_release_is_refused_with_the_same_message_when_read(change: dict[str, Any],
                                                                  message: str) -> None:
    data = _with_bad_oldest(change)
    with pytest.raises(InputError, match=message) as whole:
        parse_manifest(data, "m.json")
    lazy = parse_manifest(data, "m.json", on_demand=True)
    assert lazy.default.version  # the newest releases are good: read without the bad one
    with pytest.raises(InputError) as read:
        list(lazy.releases)
    assert str(read.value) == str(whole.value)


@pytest.mark.parametrize(("change", "message"), [
    ({"version": "two"}, r"m\.json: releases\[\d+\]\.version: 'two' is not a PEP 440 version"),
    ({"version": None}, r"m\.json: releases\[\d+\]\.version: expected a string, got null"),
])
def test_each_version_is_checked_at_once(change: dict[str, Any], message: str) -> None:
    data = _with_bad_oldest(change)
    for on_demand in (False, True):
        with pytest.raises(InputError, match=message):
            parse_manifest(data, "m.json", on_demand=on_demand)


def test_a_duplicate_release_is_refused_at_once() -> None:
    data = _bundled_data()
    data["releases"].append(dict(data["releases"][0]))
    last = len(data["releases"]) - 1
    for on_demand in (False, True):
        with pytest.raises(InputError, match=rf"releases\[{last}\]\.version: duplicate release"):
            parse_manifest(data, "m.json", on_demand=on_demand)


def test_threads_reading_at_once_share_one_build() -> None:
    """The doctor's checks read the releases from their own threads: each release is built once,
    however many ask for it while it is being built."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    default = load_bundled_manifest().default
    calls: list[int] = []
    started = threading.Barrier(8)

    def slow_build(index: int) -> Any:
        calls.append(index)
        time.sleep(0.05)  # long enough for every other reader to arrive meanwhile
        return default

    releases = OnDemand([0], slow_build)

    def read(_: int) -> int:
        started.wait()
        return id(releases[0])

    with ThreadPoolExecutor(8) as pool:
        seen = set(pool.map(read, range(8)))
    assert calls == [0] and seen == {id(default)} and releases.built == 1
