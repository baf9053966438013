"""`.ci/mirror.py`, the one builder of the mirror (the package as installed: one `neuronctl`
namespace with the parts mapped in) that `.ci/typecheck`, the layering test and the import-cycle
test all read. It is a script, not a package: loaded here by path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from support.paths import REPO


def build_mirror(destination: Path) -> Path:
    """The mirror built at `destination`; returns its root (the folder holding `neuronctl`)."""
    spec = importlib.util.spec_from_file_location("ci_mirror", REPO / ".ci" / "mirror.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    root: Path = module.build(destination)
    return root
