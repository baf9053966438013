"""`init` writes only inside the project it runs in (issue 22, item 19): a pyproject.toml that is
a symbolic link out of the project, a dangling one or a loop is refused with one line and exit 2,
and nothing anywhere changes; a link to a file inside the project is edited there, and the
message names the file written and the link."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_files_init.py)

OUTSIDE = "[project]\nname = 'someone-elses'\n"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


def test_a_link_out_of_the_project_is_refused_and_its_target_unchanged(cli, tmp_path):
    outside = tmp_path / "elsewhere" / "pyproject.toml"
    outside.parent.mkdir()
    outside.write_text(OUTSIDE)
    Path("pyproject.toml").symlink_to(outside)
    r = cli("init", "--torch", "2.13")
    assert r.code == 2, (r.code, r.out, r.err)
    assert "outside the project" in r.err and "Traceback" not in r.err
    assert outside.read_text() == OUTSIDE
    assert Path("pyproject.toml").is_symlink()
    assert os.listdir(outside.parent) == ["pyproject.toml"]  # no temp file left beside it


def test_a_relative_link_that_climbs_out_is_refused(cli, tmp_path):
    outside = tmp_path / "up.toml"
    outside.write_text(OUTSIDE)
    Path("pyproject.toml").symlink_to(os.path.relpath(outside, Path.cwd()))
    assert cli("init").code == 2
    assert outside.read_text() == OUTSIDE


@pytest.mark.parametrize("make", ["loop", "pair", "dangling", "dir", "fifo"])
def test_a_loop_a_dangling_link_a_folder_or_a_fifo_is_one_line_exit_2(cli, tmp_path, make):
    here = Path.cwd()
    if make == "loop":
        Path("pyproject.toml").symlink_to("pyproject.toml")
    elif make == "pair":
        Path("other.toml").symlink_to("pyproject.toml")
        Path("pyproject.toml").symlink_to("other.toml")
    elif make == "dangling":
        Path("pyproject.toml").symlink_to("missing/pyproject.toml")
    elif make == "dir":
        (here / "sub").mkdir()
        Path("pyproject.toml").symlink_to("sub")
    else:
        os.mkfifo("real.toml")
        Path("pyproject.toml").symlink_to("real.toml")
    before = _tree(tmp_path)
    r = cli("init")
    assert r.code == 2, (r.code, r.err)
    lines = r.err.strip().splitlines()
    assert lines and "pyproject.toml" in lines[0] and "internal error" not in r.err.lower(), r.err
    assert "Traceback" not in r.err
    assert _tree(tmp_path) == before
    assert not (here / "missing").exists()


def test_a_link_inside_the_project_is_edited_there_and_both_are_named(cli):
    real = Path.cwd() / "config" / "pyproject.toml"
    real.parent.mkdir()
    real.write_text("[project]\nname = 'mine'\n")
    Path("pyproject.toml").symlink_to("config/pyproject.toml")
    r = cli("init", "--torch", "2.13")
    assert r.code == 0, r.err
    assert str(real) in r.out and "through the link" in r.out, r.out
    assert Path("pyproject.toml").is_symlink() and "torch = \"2.13\"" in real.read_text()
    doc = json.loads(cli("init", "--torch", "2.13", "--json").out)
    assert doc["path"] == str(real) and doc["link"].endswith("pyproject.toml")
