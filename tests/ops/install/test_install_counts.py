"""Each fact once per `neuronctl install`: the hardware is read once (and handed to the doctor
afterwards), the lock read and validated once (and handed to the doctor's lock.drift), the
manifest parsed once, and one Fetcher (one HTTP session) serves the resolution and the downloads
while an install from a lock makes none (the engine fetches every file itself). Counted by wrapping the functions that gather each, wherever they are bound."""

from __future__ import annotations

import sys
from collections import Counter

import pytest
from support.venvs import installed

import neuronctl.probes.hardware
import neuronctl.release.manifest
import neuronctl.resolvers.pylock
from neuronctl.resolvers.http_fetch import Fetcher

pytestmark = pytest.mark.slow


@pytest.fixture
def install_calls(monkeypatch) -> Counter[str]:
    """name -> calls, for each way a fact is gathered (set up after the lock is written)."""
    seen: Counter[str] = Counter()

    def count(name: str, module: object, attribute: str) -> None:
        original = getattr(module, attribute)

        def counted(*args, **kwargs):
            seen[name] += 1
            return original(*args, **kwargs)

        # Every module that bound it by name (`from x import f`) calls it through its own global.
        for loaded in list(sys.modules.values()):
            if getattr(loaded, attribute, None) is original:
                monkeypatch.setattr(loaded, attribute, counted)

    count("hardware", neuronctl.probes.hardware, "gather_evidence")
    count("lock", neuronctl.resolvers.pylock, "load_pylock")
    count("manifest", neuronctl.release.manifest, "load_manifest")
    init = Fetcher.__init__

    def fetcher_made(self, *args, **kwargs):
        seen["fetcher"] += 1
        init(self, *args, **kwargs)

    monkeypatch.setattr(Fetcher, "__init__", fetcher_made)
    return seen


def test_a_dry_run_from_a_lock_gathers_each_fact_once(cli, locked, tmp_path, install_calls):
    r = cli("install", "--lock", str(locked), "--venv", str(tmp_path / "v"), "--dry-run")
    assert r.code == 0, r.err
    assert install_calls == {"hardware": 1, "lock": 1, "manifest": 1}  # no Fetcher: nothing to resolve


def test_an_install_from_a_lock_hands_its_facts_to_the_doctor(cli, locked, tmp_path, install_calls):
    r = cli("install", "--lock", str(locked), "--venv", str(tmp_path / "v"), "--venv-python", "3.12",
            "--engine", "uv")
    assert r.code == 0, r.err + r.out
    assert "lock.drift" in r.out and "hardware.chip" in r.out  # the doctor ran both on what it was given
    assert installed(tmp_path / "v" / "bin" / "python")["torch-neuronx"] == "2.14.3.0"
    assert install_calls == {"hardware": 1, "lock": 1, "manifest": 1}  # no Fetcher: nothing to resolve


def test_a_fresh_resolution_and_its_downloads_share_one_fetcher(cli, uni, tmp_path, install_calls):
    r = cli("install", *uni.index_flags(), "--torch", "2.13", "--venv", str(tmp_path / "v"),
            "--venv-python", "3.12", "--engine", "uv", "--no-check")
    assert r.code == 0, r.err + r.out
    assert installed(tmp_path / "v" / "bin" / "python")["torch-neuronx"] == "2.13.3.0"
    assert install_calls == {"hardware": 1, "manifest": 1, "fetcher": 1}
