"""The site-packages snapshot behind an apply's failure report: which changes it explains by a
package change, which it reports as strays, and which new paths it offers to remove."""

from __future__ import annotations

import os
from pathlib import Path

from neuronctl.backend.snapshot import existing_dirs, file_changes, take


def _installed_dist(site: Path, name: str, version: str, files: dict[str, str]) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Name: {name}\nVersion: {version}\n")
    for rel, text in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)
    listed = [*files, f"{info.name}/METADATA", f"{info.name}/RECORD"]
    (info / "RECORD").write_text("".join(f"{p},,\n" for p in listed))


def test_nothing_changed_is_an_empty_report(tmp_path):
    _installed_dist(tmp_path, "torch", "2.9.0", {"torch/__init__.py": "x"})
    assert file_changes(take([str(tmp_path)])) == []


def test_a_half_unpacked_package_is_a_stray_that_can_go(tmp_path):
    _installed_dist(tmp_path, "numpy", "2.0.0", {"numpy/__init__.py": "x"})
    before = take([str(tmp_path)])
    (tmp_path / "nki" / "sub").mkdir(parents=True)
    for i in range(3):
        (tmp_path / "nki" / "sub" / f"m{i}.py").write_text("x")
    (tmp_path / "nki-0.7.0.dist-info").mkdir()  # METADATA written, RECORD not yet
    (tmp_path / "nki-0.7.0.dist-info" / "METADATA").write_text("Name: nki\n")
    strays = file_changes(before)
    assert [s.describe() for s in strays] == [
        f"3 files added under {tmp_path.name}/nki/ with no dist-info",
        f"1 file added under {tmp_path.name}/nki-0.7.0.dist-info/ with no dist-info"]
    assert [p for s in strays for p in s.removable] == [str(tmp_path / "nki"),
                                                        str(tmp_path / "nki-0.7.0.dist-info")]


def test_changes_a_package_change_explains_are_not_strays(tmp_path):
    """torch 2.9.0 replaced by a complete 2.14.0: its files changed, were added and removed, all
    accounted for by the version change; nothing is offered for removal."""
    _installed_dist(tmp_path, "torch", "2.9.0", {"torch/__init__.py": "old", "torch/old.py": "x"})
    before = take([str(tmp_path)])
    for p in ("torch/old.py", "torch-2.9.0.dist-info/METADATA", "torch-2.9.0.dist-info/RECORD"):
        (tmp_path / p).unlink()
    (tmp_path / "torch-2.9.0.dist-info").rmdir()
    _installed_dist(tmp_path, "torch", "2.14.0", {"torch/__init__.py": "new!", "torch/new/x.py": "x"})
    assert file_changes(before) == []


def test_files_removed_from_a_package_still_installed_are_reported(tmp_path):
    _installed_dist(tmp_path, "torch", "2.9.0", {"torch/__init__.py": "x", "torch/lib/a.so": "y", "torch/lib/b.so": "z"})
    before = take([str(tmp_path)])
    (tmp_path / "torch" / "lib" / "a.so").unlink()
    (tmp_path / "torch" / "lib" / "b.so").unlink()
    (tmp_path / "torch" / "__init__.py").write_text("truncat")  # its RECORD was not rewritten
    (tmp_path / "stray.py").write_text("new")
    strays = file_changes(before)
    assert [s.describe() for s in strays] == [
        f"1 file added under {tmp_path.name}/stray.py with no dist-info",
        f"2 files removed, 1 file modified under {tmp_path.name}/torch/ that no finished install "
        "accounts for"]
    assert strays[0].removable == (str(tmp_path / "stray.py"),) and strays[1].removable == ()


def test_a_new_path_with_installed_files_inside_is_not_offered_for_removal(tmp_path):
    before = take([str(tmp_path)])
    _installed_dist(tmp_path, "nki", "0.7.0", {"nki/__init__.py": "x"})
    (tmp_path / "nki" / "leftover.tmp").write_text("x")
    strays = file_changes(before)
    assert [s.describe() for s in strays] == [f"1 file added under {tmp_path.name}/nki/ with no dist-info"]
    assert strays[0].removable == ()  # removing nki/ would break the installed nki


def test_symlinks_are_not_followed_and_control_characters_are_not_shown(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_text("x")
    site = tmp_path / "site"
    site.mkdir()
    (site / "link").symlink_to(outside)
    before = take([str(site)])
    assert set(before.entries[str(site)]) == {"link"}
    (site / "evil\x1b[2Jname").write_text("x")
    (outside / "more").write_text("x")  # behind the link: not the environment's
    [stray] = file_changes(before)
    assert "\x1b" not in stray.describe() and "\\x1b[2Jname" in stray.describe()
    assert stray.removable == ()


def test_site_dirs_are_the_interpreters_own_as_its_inspection_reports_them(tmp_path):
    import sys
    import sysconfig

    from neuronctl.probes.pyenv import inspect_python

    env = inspect_python(sys.executable, tags=False)
    assert existing_dirs(env.site_dirs) == tuple(dict.fromkeys(
        os.path.realpath(sysconfig.get_path(k)) for k in ("purelib", "platlib")))


def test_only_absolute_existing_directories_are_watched(tmp_path):
    real = tmp_path / "site"
    real.mkdir()
    (tmp_path / "file").write_text("x")
    link = tmp_path / "link"
    link.symlink_to(real)
    reported = [str(real), "relative/site", str(tmp_path / "file"), str(tmp_path / "gone"), 7, str(link)]
    assert existing_dirs(reported) == (str(real.resolve()),)
