"""Fixtures shared by the operations' tests: the real Slurm cluster and the CUDA-like index."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.slurm_cluster import SlurmCluster, running_cluster
from support.universe import build_cuda_universe, running_with_cuda


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A real two-node Slurm cluster on this machine, one a module (tests that use it skip where
    slurm-wlm and munge are absent: slurm_available)."""
    with running_cluster(tmp_path_factory.mktemp("slurm")) as running:
        yield running


@pytest.fixture(scope="session")
def cuda_wheels(tmp_path_factory: pytest.TempPathFactory):
    """The CUDA-like index's wheels, built once (read only: each test gets its own index state)."""
    return build_cuda_universe(tmp_path_factory.mktemp("cuda-universe"))


@pytest.fixture
def cu(wheels, cuda_wheels, monkeypatch):
    """The loopback universe plus a PyTorch-CUDA-like index, fresh per test."""
    # Like conftest does for the other indexes: anything not pointed at loopback fails fast.
    monkeypatch.setenv("NEURONCTL_INDEX_PYTORCH_CUDA", "http://127.0.0.1:9/simple")
    with running_with_cuda(wheels, cuda_wheels) as u:
        yield u
