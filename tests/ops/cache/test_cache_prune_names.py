"""`cache prune` removes an entry by the name the scan found (issue 31, item 5): a name with a
control character or longer than the display cut is removed itself, never the fresh entry whose
name it displays like; the name is escaped only where it is shown."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from neuronctl.ops.cache import apply_prune, plan_prune, show_caches

STALE_CTRL, FRESH_CTRL = "fresh\x01model", "fresh?model"
STALE_LONG, FRESH_LONG = "m" * 201, "m" * 200


def _cache_entry(cache: Path, name: str, age_days: float) -> None:
    folder = cache / name
    folder.mkdir(parents=True)
    (folder / "model.neff").write_bytes(b"N" * 100)
    when = time.time() - age_days * 86400
    for path in (folder / "model.neff", folder):
        os.utime(path, (when, when))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    for name in (STALE_CTRL, STALE_LONG):
        _cache_entry(cache, name, 40)
    for name in (FRESH_CTRL, FRESH_LONG):
        _cache_entry(cache, name, 0)
    monkeypatch.setenv("NEURON_CC_FLAGS", f"--cache_dir={cache}")
    for var in ("NEURON_COMPILE_CACHE_URL", "TORCH_NEURONX_NEFF_CACHE_DIR", "VLLM_CACHE_ROOT"):
        monkeypatch.delenv(var, raising=False)
    return cache


def test_prune_removes_the_stale_raw_names_and_keeps_the_fresh_look_alikes(cli, cache) -> None:
    r = cli("cache", "prune", "--keep-compiler", "2.28.7631.0", "--older-than", "30", "--yes",
            "--json")
    assert r.code == 0, r.err
    assert sorted(os.listdir(cache)) == sorted([FRESH_CTRL, FRESH_LONG])
    doc = json.loads(r.out)
    shown = sorted(i["name"] for i in doc["items"])
    assert shown == sorted(["fresh?model", "m" * 200 + "..."])  # escaped for display only
    assert not any("\x01" in line for line in doc["removed"])


def test_text_output_escapes_the_control_character(cli, cache) -> None:
    r = cli("cache", "prune", "--keep-compiler", "2.28.7631.0", "--older-than", "30")
    assert r.code == 0 and "\x01" not in r.out and "fresh?model" in r.out
    assert sorted(os.listdir(cache)) == sorted([STALE_CTRL, STALE_LONG, FRESH_CTRL, FRESH_LONG])


def test_an_entry_replaced_after_the_scan_is_left_alone(cache) -> None:
    """Re-checked just before removal: a folder put in the stale one's place (another inode)
    since the scan is not removed."""
    items, notes = plan_prune(show_caches(os.environ, "2.28.7631.0", "test"), 30)
    assert sorted(i.name for i in items) == sorted([STALE_CTRL, STALE_LONG])
    os.rename(cache / STALE_CTRL, cache.parent / "moved")
    _cache_entry(cache, STALE_CTRL, 0)  # a new entry under the same raw name
    outcome = apply_prune(items, notes, yes=True)
    assert [f.split(": ", 1)[1] for f in outcome.failed] == \
        ["fresh?model is no longer the entry that was read"]
    assert (cache / STALE_CTRL / "model.neff").is_file() and not (cache / STALE_LONG).exists()
