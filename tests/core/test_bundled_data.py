"""neuronctl.data.bundled_text reads through the package's own loader, as pkgutil.get_data does
(issue 36: without importing pkgutil): the same bytes from an unpacked install and from a zip."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import neuronctl.data
from neuronctl.data import bundled_text


@pytest.mark.parametrize("name", ["releases.json", "routing.json", "prices.json"])
def test_each_bundled_file_reads_as_pkgutil_reads_it(name: str) -> None:
    expected = pkgutil.get_data("neuronctl.data", name)
    assert expected is not None and bundled_text(name) == expected.decode("utf-8")


def test_a_missing_file_is_an_os_error_as_before() -> None:
    with pytest.raises(FileNotFoundError):
        bundled_text("no-such-file.json")


def test_the_reader_works_from_a_zip_archive(tmp_path: Path) -> None:
    """The same module, imported by zipimport (a zipped install): its loader reads the file."""
    archive = tmp_path / "zipped.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zipped_pkg/__init__.py", "")
        zf.write(Path(neuronctl.data.__file__), "zipped_pkg/data/__init__.py")
        zf.writestr("zipped_pkg/data/sample.json", '{"zipped": true}\n')
    code = ("import sys; sys.path.insert(0, sys.argv[1])\n"
            "from zipped_pkg.data import bundled_text\n"
            "print(type(bundled_text.__globals__['__spec__'].loader).__name__)\n"
            "print(bundled_text('sample.json'), end='')\n")
    done = subprocess.run([sys.executable, "-c", code, str(archive)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'zipimporter\n{"zipped": true}\n'
