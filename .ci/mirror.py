"""The package as it is installed, built from symlinks: one `neuronctl` namespace with resolvers/,
probes/ and backend/ mapped in (pyproject's package-dir). mypy and lint-imports do not follow
setuptools' editable finder, so `.ci/typecheck` and tests/project/test_layering.py check this mirror; both
build it here, so they cannot drift apart. Usage: `python .ci/mirror.py DEST` (DEST may exist but
holds no neuronctl/ yet)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PARTS = ("resolvers", "probes", "backend")


def build(dest: Path, repo: Path = REPO) -> Path:
    """Link every entry of neuronctl/ and each part into `dest`/neuronctl; returns `dest`."""
    package = dest / "neuronctl"
    package.mkdir(parents=True)
    sources = {entry.name: entry for entry in (repo / "neuronctl").iterdir()}
    sources.update({part: repo / part for part in PARTS})
    for name, source in sources.items():
        (package / name).symlink_to(source)
    return dest


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: mirror.py DEST")
    build(Path(sys.argv[1]))
