"""The held inspection reads a .pth file's executable lines as opaque code (issue 22, item 5):
site.py exec()s every line that starts with `import `, and what such a line imports by any
spelling (`__import__('x')` after a `;`, a name in a string, a module imported in turn) changing
in the install means a fresh interpreter answers. Real venvs, real interpreters; the "install"
is the file change an engine would make, done while the held interpreter waits."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.held import dist_folder, held_and_up, starts
from support.wheels import make_venv, site_packages

from neuronctl.errors import FaultError
from neuronctl.probes.held_inspection import PTH_READ_CAP, startup_files

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_proc_pth.py)

BREAKS_START = "import os\nos._exit(7)\n"
"""A module that, imported at start-up, ends the interpreter (site.py catches Exception only)."""


def _venv(tmp_path: Path) -> Path:
    make_venv(tmp_path / "venv")
    return site_packages(tmp_path / "venv")


def test_setuptools_style_dunder_import_whose_module_the_install_breaks_is_not_healthy(tmp_path):
    """setuptools' distutils-precedence.pth: `import os; ...; __import__('_distutils_hack')`.
    The install replaces the module with one that stops every interpreter start: the held
    interpreter (started before) must not answer for the venv."""
    site = _venv(tmp_path)
    (site / "zz-precedence.pth").write_text(
        "import os; var = 'ZZ_USE'; enabled = os.environ.get(var, 'local') == 'local'; "
        "enabled and __import__('zz_hack').add_shim(); \n")
    (site / "zz_hack.py").write_text("def add_shim():\n    pass\n")
    held = held_and_up(tmp_path / "venv", tmp_path / "starts.log")
    (site / "zz_hack.py").write_text(BREAKS_START)
    with pytest.raises(FaultError):
        held.result()


def test_a_module_named_in_a_string_that_the_install_adds_is_run_as_at_a_new_start(tmp_path):
    """`importlib.import_module("zz_late")` in a try: absent at the held start, installed by the
    install: a new interpreter would import it."""
    site = _venv(tmp_path)
    (site / "zz-late.pth").write_text(
        "import importlib; exec('try: importlib.import_module(\\'zz_late\\')\\nexcept ImportError: pass')\n")
    held = held_and_up(tmp_path / "venv", tmp_path / "starts.log")
    dist_folder(tmp_path / "extra", "via-late")
    (site / "zz_late").mkdir()
    (site / "zz_late" / "__init__.py").write_text(
        f"import sys; sys.path.append({str(tmp_path / 'extra')!r})\n")
    assert held.result().get("via-late") is not None


def test_a_module_imported_in_turn_that_the_install_changes_is_run_as_at_a_new_start(tmp_path):
    """The .pth names zz_outer; zz_outer imports zz_inner by a computed name; the install changes
    zz_inner: the held interpreter loaded the old one as it started, and says so itself."""
    site = _venv(tmp_path)
    (site / "zz-outer.pth").write_text("import zz_outer\n")
    (site / "zz_outer.py").write_text("import importlib\nimportlib.import_module('zz_' + 'inner')\n")
    (site / "zz_inner.py").write_text("")
    held = held_and_up(tmp_path / "venv", tmp_path / "starts.log")
    dist_folder(tmp_path / "extra", "via-inner")
    (site / "zz_inner.py").write_text(f"import sys; sys.path.append({str(tmp_path / 'extra')!r})\n")
    assert held.result().get("via-inner") is not None


def test_an_executable_line_after_a_bom_or_a_carriage_return_counts(tmp_path):
    """site.py reads a .pth as utf-8-sig with universal newlines: a BOM before `import` and a
    lone \\r between lines still make executable lines, whose modules are then watched."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.pth").write_bytes(b"\xef\xbb\xbfimport zz_bom\rimport zz_cr\n")
    before = startup_files([str(site)])
    for name in ("zz_bom.py", "zz_cr.py"):
        (site / name).write_text("")
        after = startup_files([str(site)])
        assert after != before, name
        before = after


def test_a_pth_too_long_to_read_makes_any_change_to_its_folder_count(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "big.pth").write_text("import os" + " " * PTH_READ_CAP + "\n")
    before = startup_files([str(site)])
    (site / "anything.py").write_text("")
    assert startup_files([str(site)]) != before


def test_words_of_an_executable_line_that_name_nothing_new_keep_the_held_answer(tmp_path):
    """Opaque code is watched by what it can name, not by everything: an install that adds an
    unrelated package beside setuptools-style code keeps the held interpreter's answer."""
    site = _venv(tmp_path)
    (site / "zz-precedence.pth").write_text("import os; __import__('zz_hack')\n")
    (site / "zz_hack.py").write_text("")
    time.sleep(0.2)  # changed just before the interpreter started reads as changed while it ran
    held = held_and_up(tmp_path / "venv", tmp_path / "starts.log")
    dist_folder(site, "unrelated")
    (site / "unrelated.py").write_text("")
    assert held.result().get("unrelated") is not None
    assert len(starts(tmp_path / "starts.log")) == 1  # the held interpreter answered


def test_a_submodule_an_executable_line_names_is_watched_before_the_engine(tmp_path):
    """`import zzp.sub`: the install rewriting zzp/sub.py in place (its folder's listing stays
    the same) counts, without waiting for the held interpreter to notice."""
    site = tmp_path / "site"
    (site / "zzp").mkdir(parents=True)
    (site / "zzp" / "__init__.py").write_text("")
    (site / "zzp" / "sub.py").write_text("")
    (site / "a.pth").write_text("import zzp.sub\n")
    before = startup_files([str(site)])
    (site / "zzp" / "sub.py").write_text("import sys\n")
    assert startup_files([str(site)]) != before
