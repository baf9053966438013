"""Every package in the source tree ships in the wheel: pyproject lists packages by hand (the
sibling folders are mapped in by package-dir), and a package left off the list works in an
editable install but is missing from a real one (neuronctl.ops.fleet was: `doctor --format
prometheus` died with an internal error when installed as a wheel)."""

from __future__ import annotations

from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed_for_the_wheel():
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    found = set()
    for package, folder in setuptools["package-dir"].items():
        for init in (REPO / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(REPO / folder)
            if "__pycache__" in relative.parts:
                continue
            found.add(".".join([package, *relative.parts]))
    assert found == listed, (sorted(found - listed), sorted(listed - found))
