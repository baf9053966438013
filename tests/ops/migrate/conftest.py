"""Fixtures of the migrate tests."""

from __future__ import annotations

import pytest

from neuronctl.ops.migrate import native_versions
from neuronctl.release.manifest import load_bundled_manifest


@pytest.fixture(scope="module")
def versions():
    return native_versions(load_bundled_manifest())
