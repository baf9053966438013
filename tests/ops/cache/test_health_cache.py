"""`cache.compile` and `neuronctl cache show|prune` (issue 27): caches from two compiler versions,
an entry that looks failed (never called so: no source documents the marker), links pointing out
of the cache (never followed, never removed), prune dry run by default and atomic per entry."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from support.sysroots import build_host, write

from neuronctl.ops.cache import TRASH, apply_prune, plan_prune, show_caches
from neuronctl.probes.compile_cache import cache_locations

OLD = "neuronxcc-2.27.5334.0+abc12345"
NEW = "neuronxcc-2.28.7631.0+6f180f47"


def cache_tree(cache: Path, outside: Path) -> None:
    write(cache, f"{OLD}/MODULE_1+aa/model.neff", "N" * 3000)
    write(cache, f"{OLD}/MODULE_1+aa/compile_flags.txt", "--lnc=2")
    write(cache, f"{NEW}/MODULE_2+bb/model.neff", "N" * 5000)
    # what a failed compile may leave (AWS's published cache shows a model.log and a 5-byte
    # model.neff); no source says this marks a failure, so it is counted as an entry only
    write(cache, f"{NEW}/MODULE_3+cc/model.log", "ERROR: compilation failed")
    write(cache, f"{NEW}/MODULE_3+cc/model.neff", "xxxxx")
    write(outside, "precious/keep.txt", "do not delete")
    os.symlink(outside / "precious", cache / "neuronxcc-2.0.0+evil")  # a version folder that is a link
    os.symlink(outside / "precious", cache / OLD / "MODULE_link")  # a link inside a stale folder


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    cache, outside = tmp_path / "cache", tmp_path / "outside"
    cache_tree(cache, outside)
    monkeypatch.setenv("NEURON_CC_FLAGS", f"--cache_dir={cache} -O1")
    for var in ("NEURON_COMPILE_CACHE_URL", "TORCH_NEURONX_NEFF_CACHE_DIR", "VLLM_CACHE_ROOT"):
        monkeypatch.delenv(var, raising=False)
    return cache, outside


def test_locations_are_the_documented_ones() -> None:
    assert [(c.kind, c.path, c.source) for c in cache_locations({})] == [
        ("legacy-xla", "/var/tmp/neuron-compile-cache", "default")]
    both = cache_locations({"NEURON_CC_FLAGS": "--cache_dir /a", "NEURON_COMPILE_CACHE_URL":
                            "s3://b/c", "TORCH_NEURONX_NEFF_CACHE_DIR": "/t",
                            "VLLM_CACHE_ROOT": "/v"})
    assert [(c.path, c.remote) for c in both] == [("/a", False), ("s3://b/c", True), ("/t", False),
                                                 ("/v/neuron/compile_cache", False)]


def test_show_sizes_by_version_marks_stale_and_links(cli, tree) -> None:
    _cache, _ = tree
    r = cli("cache", "show", "--keep-compiler", "2.28.7631.0", "--json")
    assert r.code == 0, r.err
    (state,) = json.loads(r.out)["caches"]
    entries = {e["name"]: e for e in state["entries"]}
    assert entries[OLD]["current"] is False and entries[OLD]["size"] == 3007
    assert entries[NEW]["current"] is True and entries[NEW]["files"] == 3
    assert entries["neuronxcc-2.0.0+evil"]["link"] is True
    assert entries["neuronxcc-2.0.0+evil"]["size"] == 0  # never followed
    assert "failed" not in json.dumps(state)
    text = cli("cache", "show", "--keep-compiler", "2.28.7631.0")
    assert f"{OLD}: " in text.out and "(stale)" in text.out and "(current)" in text.out


def test_prune_is_a_dry_run_without_yes(cli, tree) -> None:
    cache, _ = tree
    r = cli("cache", "prune", "--keep-compiler", "2.28.7631.0")
    assert r.code == 0 and f"would remove: {cache}/{OLD}" in r.out and "--yes" in r.out
    assert (cache / OLD).is_dir()
    assert "neuronxcc-2.0.0+evil: a symbolic link, left alone" in r.out


def test_prune_removes_other_compilers_and_nothing_outside(cli, tree) -> None:
    cache, outside = tree
    r = cli("cache", "prune", "--keep-compiler", "2.28.7631.0", "--yes", "--json")
    assert r.code == 0, r.out + r.err
    doc = json.loads(r.out)
    assert doc["removed"] == [f"{cache.resolve()}/{OLD}"]
    assert not (cache / OLD).exists() and (cache / NEW / "MODULE_3+cc" / "model.log").is_file()
    assert (outside / "precious" / "keep.txt").read_text() == "do not delete"
    assert (cache / "neuronxcc-2.0.0+evil").is_symlink() and not (cache / TRASH).exists()


def test_older_than_prunes_by_age(cli, tree) -> None:
    cache, _ = tree
    old = time.time() - 40 * 86400
    for base, _dirs, files in os.walk(cache / NEW):
        for name in [*files, *_dirs, "."]:
            os.utime(os.path.join(base, name), (old, old), follow_symlinks=False)
    os.utime(cache / NEW, (old, old))
    r = cli("cache", "prune", "--keep-compiler", "2.28.7631.0", "--older-than", "30", "--json")
    names = {i["name"]: i["reason"] for i in json.loads(r.out)["items"]}
    assert "30 days" in names[NEW] and "2.27.5334.0" in names[OLD]
    assert cli("cache", "prune", "--older-than", "0").code == 2
    assert cli("cache", "prune", "--older-than", "nan").code == 2


def test_prune_without_a_compiler_to_keep_is_exit_2(cli, tree, tmp_path: Path) -> None:
    # this interpreter (neuronctl's own venv) has no neuronx-cc
    r = cli("cache", "prune", "--yes")
    assert r.code == 2 and "--keep-compiler" in r.err
    assert (tree[0] / OLD).is_dir()
    assert cli("cache", "prune", "--keep-compiler", "../../etc").code == 2


def test_a_cache_folder_that_is_a_link_is_neither_read_nor_pruned(cli, tree, tmp_path: Path,
                                                                  monkeypatch) -> None:
    cache, _outside = tree
    link = tmp_path / "cache-link"
    link.symlink_to(cache)
    monkeypatch.setenv("NEURON_CC_FLAGS", f"--cache_dir={link}")
    r = cli("cache", "prune", "--keep-compiler", "2.28.7631.0", "--yes", "--json")
    doc = json.loads(r.out)
    assert doc["removed"] == [] and any("symbolic link" in n for n in doc["notes"])
    assert (cache / OLD).is_dir()


def test_an_entry_swapped_for_a_link_after_the_plan_is_refused(tree, tmp_path: Path) -> None:
    cache, outside = tree
    report = show_caches(os.environ, "2.28.7631.0", "test")
    items, notes = plan_prune(report, None)
    assert [i.name for i in items] == [OLD]
    import shutil

    shutil.rmtree(cache / OLD)
    os.symlink(outside / "precious", cache / OLD)  # swapped between the plan and the removal
    outcome = apply_prune(items, notes, yes=True)
    assert outcome.removed == () and len(outcome.failed) == 1
    assert (outside / "precious" / "keep.txt").is_file()


def test_a_planted_trash_link_is_not_followed(tree) -> None:
    cache, outside = tree
    os.symlink(outside, cache / TRASH)
    report = show_caches(os.environ, "2.28.7631.0", "test")
    items, notes = plan_prune(report, None)
    outcome = apply_prune(items, notes, yes=True)
    assert outcome.failed and (cache / OLD).is_dir()
    assert sorted(p.name for p in outside.iterdir()) == ["precious"]


# -------------------------------------------------------------------------- doctor cache.compile

def doctor_cache(cli, root: Path, *extra: str) -> dict:
    r = cli("doctor", "--level", "1", "--only", "cache.compile", "--json", "--sysroot", str(root),
            *extra)
    (check,) = json.loads(r.out)["checks"]
    return check


def test_doctor_names_stale_entries_of_another_compiler(cli, stacks, tmp_path: Path,
                                                        monkeypatch) -> None:
    monkeypatch.delenv("NEURON_CC_FLAGS", raising=False)
    monkeypatch.delenv("NEURON_COMPILE_CACHE_URL", raising=False)
    root = build_host(tmp_path / "h", "trn2")
    cache_tree(root / "var/tmp/neuron-compile-cache", tmp_path / "outside")
    check = doctor_cache(cli, root, "--python", str(stacks["native"]))
    assert check["status"] == "warn" and check["severity"] == "fix"
    assert "1 entry for another neuronx-cc" in check["message"]
    assert "neuronctl cache prune --python" in check["fix"]
    assert any("compiler versions 2.27.5334.0+abc12345, 2.28.7631.0+6f180f47" in d
               for d in check["details"])


def test_doctor_no_cache_yet_passes_and_fsx_warns(cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("NEURON_COMPILE_CACHE_URL", raising=False)
    monkeypatch.delenv("NEURON_CC_FLAGS", raising=False)
    root = build_host(tmp_path / "h", "trn2")
    assert doctor_cache(cli, root)["status"] == "pass"
    write(root, "/proc/self/mountinfo",
          "22 1 259:1 / / rw,relatime - ext4 /dev/nvme0n1p1 rw\n"
          "40 22 0:50 / /fsx rw,relatime - lustre 172.31.0.5@tcp:/abc rw\n")
    (root / "fsx/cache").mkdir(parents=True)
    monkeypatch.setenv("NEURON_CC_FLAGS", "--cache_dir=/fsx/cache")
    check = doctor_cache(cli, root)
    assert check["status"] == "warn" and "lustre (FSx)" in check["message"]
    assert "Errno 61" in check["message"]


def test_options_before_the_subcommand_and_show_by_default(cli, tree) -> None:
    cache, _ = tree
    shown = cli("cache", "--keep-compiler", "2.28.7631.0", "--json")
    assert shown.code == 0 and json.loads(shown.out)["compiler"] == "2.28.7631.0"
    pruned = cli("cache", "--keep-compiler", "2.28.7631.0", "prune", "--yes")
    assert pruned.code == 0 and not (cache / OLD).exists() and (cache / NEW).is_dir()
