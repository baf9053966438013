"""Where the repository and the shared reference files are (the test tree's one reading of them)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
DATA = TESTS / "data"
SHARED = REPO.parent / "shared" / "reference"
N2_MANIFEST = SHARED / "n2-manifest.json"
FACTS = SHARED / "NEURON-FACTS.md"
