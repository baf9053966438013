"""A lock of the partly published Neuron 2.34.0 against the loopback indexes: the pins AWS has
not published are resolved from the index within AWS's recipe constraint, and said so."""

from __future__ import annotations

from pathlib import Path

from support.universe import running

from neuronctl.resolvers.pylock import load_pylock
from neuronctl.tomlfile import read_toml


def test_lock_2_34_resolves_the_unpublished_pins_from_the_index(cli, wheels_2_34):
    with running(wheels_2_34) as uni:
        r = cli("lock", *uni.index_flags(), "--release", "2.34.0", "--python", "3.12")
    assert r.code == 0, r.err
    lock = load_pylock(Path("pylock.toml"))
    got = {str(p.name): str(p.version) for p in lock.packages}
    assert got["torch-neuronx"] == "2.14.3.1" and got["torch"] == "2.14.0+cpu"
    assert got["neuronx-cc"] == "2.28.7631.0"  # newest within ==2.*: 3.0.1.0 is outside it
    assert got["nki"] == "0.7.0"
    index_of = {str(p.name): p.index for p in lock.packages}
    assert index_of["neuronx-cc"] == index_of["nki"] == uni.urls["neuron"]  # never PyPI's 99.0.0
    tool = read_toml(Path("pylock.toml"), "lock")["tool"]["neuronctl"]
    assert tool["release"] == "2.34.0" and "neuronx-cc" not in tool["pins"]
