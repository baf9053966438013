"""Fixtures of the release tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.loopback import self_signed
from support.universe import _cp, build_universe
from support.wheels import build_wheel


@pytest.fixture(scope="module")
def wheels_2_34(tmp_path_factory):
    """The usual universe plus torch-neuronx 2.14.3.1 (2.34.0's) and a neuronx-cc 3.0 the
    recipe's ==2.* keeps out."""
    root = tmp_path_factory.mktemp("universe-2.34")
    wheels = build_universe(root)
    for minor in (12, 13):
        wheels["neuron"].append((build_wheel(
            root / "neuron", "torch-neuronx", "2.14.3.1", tag=_cp(minor), requires_python=">=3.12",
            requires=("torch==2.14.*", "neuronx-cc>=2.28", "nki>=0.7")), {}))
    wheels["neuron"].append((build_wheel(root / "neuron", "neuronx-cc", "3.0.1.0"), {}))
    return wheels


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate and key for a loopback HTTPS server (trusted through
    REQUESTS_CA_BUNDLE by the tests that need it)."""
    return self_signed(tmp_path_factory.mktemp("tls"))
