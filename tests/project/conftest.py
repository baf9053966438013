"""Fixtures of the repository-level tests (the Action, the pre-commit hook)."""

from __future__ import annotations

import pytest
from support.hooks_wheelhouse import build_wheelhouse


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory):
    """neuronctl's dependencies as wheels, for pip with no index (built once a module)."""
    return build_wheelhouse(tmp_path_factory.mktemp("wheelhouse"))
