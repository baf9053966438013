"""The scripts that run inside target interpreters are real files: shipped in the wheel, found by
importlib.resources, standalone, runnable on every Python neuronctl inspects; and no product module
keeps code in a string literal instead."""

import ast
import runpy
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.wheels import find_python, make_venv

from neuronctl.errors import InputError
from neuronctl.probes.device import run_device_probe
from neuronctl.probes.pyenv import Inspection, resolve_python

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = ("device_probe.py", "inspect_env.py", "python_version.py")
# Loaded by path by the scripts above (smoke_run.py and its helpers; inspect_env.py's wait).
HELPERS = ("smoke_run.py", "smoke_compare.py", "descendants.py", "reference_model.py",
           "inspect_hold.py")
PRODUCT_DIRS = ("neuronctl", "probes", "resolvers", "backend")
SCRIPT = runpy.run_path(str(REPO / "probes" / "scripts" / "inspect_env.py"))
"""inspect_env.py's functions, loaded as the file it is (not run: __name__ is not __main__)."""


def _python(minor):
    try:
        return find_python(minor)
    except RuntimeError:
        pytest.skip(f"no Python {minor} here")


@pytest.mark.parametrize("name", SCRIPTS + HELPERS)
def test_each_script_is_a_real_file_of_the_installed_package(name):
    path = resources.files("neuronctl.probes.scripts").joinpath(name)
    assert isinstance(path, Path) and path.is_file()
    assert path.resolve() == (REPO / "probes" / "scripts" / name).resolve()


@pytest.mark.parametrize("name", SCRIPTS + HELPERS)
def test_each_script_stands_alone_on_the_standard_library(name):
    tree = ast.parse((REPO / "probes" / "scripts" / name).read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    # packaging and pip are the target's own, optional (tags); importlib.metadata is 3.8+, and
    # only reached where the plain .dist-info scan is not enough.
    assert imported - set(sys.stdlib_module_names) <= {"packaging", "pip"}
    assert "neuronctl" not in imported
    assert not any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
                   for node in ast.walk(tree))  # 3.6 has no `annotations` future


@pytest.mark.parametrize("minor", ["3.6", "3.8", "3.13"])
def test_the_inspection_runs_on_old_and_new_pythons(minor):
    python = _python(minor)
    env = Inspection(python, bundled_pip=True).result()
    assert env.python.startswith(minor + ".")
    assert env.markers["python_version"] == minor
    assert env.bundled_pip.endswith(".whl")


@pytest.mark.parametrize("minor", ["3.6", "3.8"])
def test_the_device_probe_runs_on_old_pythons(tmp_path, minor):
    py = make_venv(tmp_path / "venv", _python(minor))
    report = run_device_probe(str(py), "auto", timeout=60)
    assert report.outcome == "no-torch", report.detail


def test_python_version_answers_even_on_python_2():
    python = _python("2.7")
    with pytest.raises(InputError, match=r"it is Python 2\.7; neuronctl inspects Python 3\.6 and newer"):
        resolve_python(python)
    assert resolve_python(_python("3.6")) == _python("3.6")


def _code_in_strings(path):
    """String literals (docstrings aside) of six lines or more that are Python code."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                and node.value.count("\n") >= 5):
            try:
                compile(node.value, str(path), "exec")
            except SyntaxError:
                continue
            yield f"{path.relative_to(REPO)}:{node.lineno}"


def test_no_product_module_holds_code_in_a_string_literal():
    found = [hit for folder in PRODUCT_DIRS for path in sorted((REPO / folder).rglob("*.py"))
             for hit in _code_in_strings(path)]
    assert found == []


@pytest.mark.slow
def test_the_wheel_ships_the_scripts(tmp_path):
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                    str(tmp_path), str(REPO)], check=True, capture_output=True)
    names = zipfile.ZipFile(next(tmp_path.glob("neuronctl-*.whl"))).namelist()
    for name in ("__init__.py", *SCRIPTS, *HELPERS):
        assert f"neuronctl/probes/scripts/{name}" in names
    # the stand-in backend is a test double: it never reaches the wheel
    assert not [n for n in names if "standin" in n or n.startswith(("torch_neuronx", "rival_backend",
                                                                      "_torch_neuronx_autoload"))]


PLATFORM_SAYS = ("import json, platform, sys; print(json.dumps({'version': platform.python_version(), "
                 "'machine': platform.machine(), 'system': platform.system(), 'release': platform.release(), "
                 "'os_version': platform.version(), 'implementation': platform.python_implementation(), "
                 "'libc': ' '.join(platform.libc_ver())}))")


@pytest.mark.parametrize("minor", ["3.8", "3.10", "3.11", "3.12", "3.13"])
def test_the_inspection_says_what_the_platform_module_says_without_loading_it(minor):
    """The inspection reads os.uname(), sys.version and glibc's confstr instead of importing
    platform (with re and enum, the larger part of its time): the same answers, on every Python."""
    import json

    python = _python(minor)
    script = REPO / "probes" / "scripts" / "inspect_env.py"
    fast = subprocess.run([python, "-c", f"import json, runpy; m = runpy.run_path({str(script)!r}); "
                                         "print(json.dumps(m['platform_facts']()))"],
                          capture_output=True, text=True, check=True).stdout
    slow = subprocess.run([python, "-c", PLATFORM_SAYS], capture_output=True, text=True, check=True).stdout
    assert json.loads(fast) == json.loads(slow)
    opts = ["watched=", "packages=1", "tags=0", "bundled_pip=0", "metadata_only=0", "hold=0"]
    run = subprocess.run([python, "-X", "importtime", str(script), "1", *opts], capture_output=True,
                         text=True, check=True)
    names = [line.rsplit("|", 1)[-1] for line in run.stderr.splitlines()]
    # What the interpreter's own start-up loads (site and the .pth files it runs) comes first.
    loaded = {n.strip() for n in names[names.index(" site") + 1:]}
    # json brings re and enum (issue 36: a sixth of the inspection's time): dumps() writes JSON
    assert not loaded & {"platform", "typing", "csv", "json", "re", "enum"}, loaded
    env = Inspection(python, tags=False).result()
    assert env.markers["python_full_version"] == json.loads(slow)["version"] == env.python
    assert " ".join(env.libc) == json.loads(slow)["libc"]


@pytest.mark.parametrize("minor", ["3.10", "3.11", "3.12", "3.13"])
def test_wheel_tags_neuronctl_derives_are_the_interpreters_own(minor):
    """An install does not ask a plain CPython on glibc for its wheel tags (importing packaging
    there costs ~50 ms): neuronctl derives them from the inspected version, glibc and machine.
    Those must be the interpreter's own sys_tags, in order (one harmless extra, cpXY-none-any,
    which older packaging leaves out)."""
    from neuronctl.ops.install.source import env_tags
    from neuronctl.resolvers.targets import target_for_interpreter

    python = _python(minor)
    asked = Inspection(python, tags=True).result()  # from its packaging, or pip's copy
    spared = Inspection(python, tags="unless-derivable").result()
    assert len(asked.tags) > 500 and spared.tags == ()
    target = target_for_interpreter(spared.python, spared.libc, spared.machine)
    derived = [str(t) for t in env_tags(spared, target)]
    assert [t for t in derived if t in set(asked.tags)] == list(asked.tags)
    assert set(derived) - set(asked.tags) <= {f"cp{minor.replace('.', '')}-none-any"}


@pytest.mark.parametrize("record", [
    "torch_neuronx/__init__.py,sha256=abc,12\ntorch_neuronx/xla_impl/a.py,,\n\n",
    'torch_neuronx/__init__.py,sha256=abc,12\n"odd,name.py",sha256=x,1\n"q""uote.py",,\n',
    "",
    "only-path\r\nsecond,h,1\r\n",
])
def test_record_paths_are_the_first_csv_column(record):
    import csv
    import runpy

    script = runpy.run_path(str(REPO / "probes" / "scripts" / "inspect_env.py"))
    assert script["record_paths"](record) == [row[0] for row in csv.reader(record.splitlines()) if row]


ANY_TEXT = st.text(st.characters(exclude_categories=()))
"""Any code point, lone surrogates included (an undecodable file name read with surrogateescape)."""
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=20)


@given(JSON_VALUES)
def test_the_inspection_writes_json_as_json_dumps_does(value):
    """inspect_env.py writes its JSON without importing json (which brings re and enum): the
    same text json.dumps writes, for every value of the types it writes (any text: escapes,
    lone surrogates from undecodable file names, non-ASCII)."""
    import json

    assert SCRIPT["dumps"](value) == json.dumps(value)


def test_without_jsons_accelerator_json_itself_writes(monkeypatch):
    """An interpreter without _json (not CPython): json.dumps writes, the same text."""
    import json

    monkeypatch.setitem(SCRIPT["dumps"].__globals__, "escaper", None)
    value = {"name": "torch-neuronx", "requires": ["torch (==2.14.*)"], "ok": True, "n": None}
    assert SCRIPT["dumps"](value) == json.dumps(value)


def test_the_inspection_reads_its_options_as_pyenv_writes_them():
    options = SCRIPT["options"]
    assert options(["watched=torch-neuronx,nki", "packages=1", "tags=unless-derivable",
                    "bundled_pip=0", "metadata_only=0", "hold=1"]) == {
        "watched": ["torch-neuronx", "nki"], "packages": True, "tags": "unless-derivable",
        "bundled_pip": False, "metadata_only": False, "hold": True}
    rest = ["packages=0", "bundled_pip=0", "metadata_only=0", "hold=0"]
    assert options(["watched=", "tags=1", *rest])["tags"] is True
    assert options(["watched=", "tags=0", *rest])["watched"] == []
    for wrong in (["watched=", "tags=1"], ["watched=", "tags=yes", *rest],
                  ["watched=", "tags=1", "packages=true", *rest[1:]],
                  ["watched=", "tags=1", *rest, "hold=1"], ["watched=", "tags=1", "pakages=1", *rest[1:]]):
        with pytest.raises(ValueError, match=r"inspect_env\.py: options are"):
            options(wrong)  # missing, misspelled, repeated or not 0/1: refused, never a default
    with pytest.raises(TypeError):
        SCRIPT["dumps"](1.5)  # nothing it writes is a float; one would be a mistake, said
