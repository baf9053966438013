"""Every package in the source tree ships in the wheel: pyproject lists packages by hand (the
sibling folders are mapped in by package-dir), and a package left off the list works in an
editable install but is missing from a real one (neuronctl.ops.fleet was: `doctor --format
prometheus` died with an internal error when installed as a wheel)."""

from __future__ import annotations

from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[2]


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


def test_every_data_file_beside_the_code_is_declared_for_the_wheel():
    """Files a module reads with importlib.resources (the setup script's .sh helpers, the
    bundled .json data) ship only where package-data names them."""
    from fnmatch import fnmatch

    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    declared = setuptools["package-data"]
    for package in setuptools["packages"]:
        top = package.partition(".")[0]
        folder_key = next((k for k in sorted(setuptools["package-dir"], key=len, reverse=True)
                           if package == k or package.startswith(k + ".")), top)
        folder = REPO / setuptools["package-dir"].get(folder_key, folder_key) / \
            package.removeprefix(folder_key).lstrip(".").replace(".", "/")
        for path in folder.iterdir():
            if path.is_file() and path.suffix in (".sh", ".json"):
                patterns = declared.get(package, [])
                assert any(fnmatch(path.name, p) for p in patterns), (package, path.name)
