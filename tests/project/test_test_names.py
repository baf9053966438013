"""Issue 36, item 4: a fixture is defined once, in the nearest conftest.py or tests/support, and a
module-level helper's name means one thing across the suite (one word per idea): two files that
define the same name hold two different helpers, or one helper written twice."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
STANDIN = TESTS / "support" / "standin_neuron"
"""The stand-in backend's packages: their functions carry the names torch and torch-neuronx give
them (an `autoload` entry point each, torch-neuronx's `register`), not names of ours."""


def _is_fixture(node: ast.FunctionDef) -> bool:
    return any("fixture" in ast.unparse(d) for d in node.decorator_list)


def defined(tests: Path) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(fixture name -> files, helper name -> files): the module-level functions of every Python
    file under `tests`, the stand-in backend left out; a helper is neither a test nor a fixture."""
    fixtures: dict[str, set[str]] = defaultdict(set)
    helpers: dict[str, set[str]] = defaultdict(set)
    for path in sorted(tests.rglob("*.py")):
        if STANDIN in path.parents:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.FunctionDef) or node.name.startswith("test_"):
                continue
            where = str(path.relative_to(tests))
            (fixtures if _is_fixture(node) else helpers)[node.name].add(where)
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
        (tmp_path / folder / "test_x.py").write_text(
            "import pytest\n\n@pytest.fixture\ndef home():\n    pass\n\n"
            "def run(x):\n    return x\n\ndef test_run():\n    assert run(1)\n")
    fixtures, helpers = defined(tmp_path)
    assert _twice(fixtures) == {"home": ["a/test_x.py", "b/test_x.py"]}
    assert _twice(helpers) == {"run": ["a/test_x.py", "b/test_x.py"]}
