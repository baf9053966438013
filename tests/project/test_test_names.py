"""Issue 36, item 4: a fixture is defined once, in the nearest conftest.py or tests/support, and a
module-level helper's name means one thing across the suite (one word per idea): two files that
define the same name hold two different helpers, or one helper written twice."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
STANDIN = TESTS / "support" / "standin_neuron"
"""The stand-in backend's packages: their functions carry the names torch and torch-neuronx give
them (an `autoload` entry point each, torch-neuronx's `register`), not names of ours."""


def _is_fixture(node: ast.FunctionDef) -> bool:
    return any("fixture" in ast.unparse(d) for d in node.decorator_list)


def _helpers_and_fixtures(tests: Path) -> Iterator[tuple[str, ast.FunctionDef]]:
    """(file under `tests`, function) for each module-level function that is not a test, the
    stand-in backend left out."""
    for path in sorted(tests.rglob("*.py")):
        if STANDIN in path.parents:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("test_"):
                yield str(path.relative_to(tests)), node


def defined(tests: Path) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(fixture name -> files, helper name -> files): the module-level functions of every Python
    file under `tests`, the stand-in backend left out; a helper is neither a test nor a fixture."""
    fixtures: dict[str, set[str]] = defaultdict(set)
    helpers: dict[str, set[str]] = defaultdict(set)
    for where, node in _helpers_and_fixtures(tests):
        # `_run` in one file and `run` in another are one name to a reader (one word per idea)
        (fixtures if _is_fixture(node) else helpers)[node.name.lstrip("_")].add(where)
    return fixtures, helpers


def _twice(names: dict[str, set[str]]) -> dict[str, list[str]]:
    return {name: sorted(files) for name, files in names.items() if len(files) > 1}


def test_each_fixture_is_defined_once() -> None:
    fixtures, _ = defined(TESTS)
    assert fixtures, "no fixture found: the walk is broken"
    assert _twice(fixtures) == {}


def test_each_helper_name_means_one_thing() -> None:
    _, helpers = defined(TESTS)
    assert len(helpers) > 100, "too few helpers found: the walk is broken"
    assert _twice(helpers) == {}


def test_the_walk_finds_a_name_two_files_define(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        run = "_run" if folder == "a" else "run"
        (tmp_path / folder / "test_x.py").write_text(
            "import pytest\n\n@pytest.fixture\ndef home():\n    pass\n\n"
            f"def {run}(x):\n    return x\n\ndef test_run():\n    assert {run}(1)\n")
    fixtures, helpers = defined(tmp_path)
    assert _twice(fixtures) == {"home": ["a/test_x.py", "b/test_x.py"]}
    assert _twice(helpers) == {"run": ["a/test_x.py", "b/test_x.py"]}


def _bodies(tests: Path) -> dict[str, set[str]]:
    """A module-level helper's code with its name and docstring left out -> where it is defined
    (file:name): one helper written twice under two names has one entry with two places."""
    found: dict[str, set[str]] = defaultdict(set)
    for where, node in _helpers_and_fixtures(tests):
        body = node.body[1:] if ast.get_docstring(node) is not None else node.body
        code = ast.dump(ast.Module(body=body, type_ignores=[]))
        found[ast.dump(node.args) + code].add(f"{where}:{node.name}")
    return found


def test_no_helper_is_written_twice_under_two_names() -> None:
    assert _twice(_bodies(TESTS)) == {}


def test_the_walk_finds_one_body_under_two_names(tmp_path: Path) -> None:
    body = "    data = path.read_bytes()\n    return len(data)\n"
    (tmp_path / "a.py").write_text(f"def size(path):\n    '''Its size.'''\n{body}")
    (tmp_path / "b.py").write_text(f"def length_of(path):\n{body}")
    assert list(_twice(_bodies(tmp_path)).values()) == [["a.py:size", "b.py:length_of"]]


def _campaigns() -> set[str]:
    """The markers pyproject.toml registers, as their names (`hostile: ...`)."""
    import tomllib

    data = tomllib.loads((TESTS.parent / "pyproject.toml").read_text(encoding="utf-8"))
    return {m.split(":")[0].strip() for m in data["tool"]["pytest"]["ini_options"]["markers"]}


def test_no_test_file_is_named_for_a_campaign() -> None:
    """Tests are filed by what they test; a review campaign is a marker (`-m hostile`)."""
    campaigns = _campaigns()
    assert {"hostile", "first_hour"} <= campaigns
    named = [str(p.relative_to(TESTS)) for p in TESTS.rglob("test_*.py")
             if any(f"_{c}_" in f"_{p.stem}_" for c in campaigns)]
    assert named == []
