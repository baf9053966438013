"""Hand-made PEP 751 locks and their wheels, for the install and engine tests."""

from __future__ import annotations

import hashlib
from pathlib import Path

from packaging.pylock import Pylock

from neuronctl.toml_emit import dumps
from neuronctl.tomlfile import read_toml
from support.venvs import sha256_of
from support.wheels import build_wheel


def versions(lock: Pylock) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in lock.packages:
        out.setdefault(str(p.name), []).append(str(p.version))
    return out


def write_lock(path: Path, *packages: tuple[str, str, dict[str, object]]) -> Path:
    """A PEP 751 lock of (name, version, wheel entry), nothing of neuronctl's own in it."""
    doc = {"lock-version": "1.0", "created-by": "tests", "requires-python": ">=3.10",
           "packages": [{"name": n, "version": v, "wheels": [w]} for n, v, w in packages]}
    path.write_text(dumps(doc, arrays_of_tables=("packages",)))
    return path


def demo_wheel(folder: Path, name: str = "demo", version: str = "1.0", said: str = "good") -> Path:
    return build_wheel(folder, name, version, files={f"{name}/__init__.py": f"SAID = {said!r}\n"})


def big_nki_lock(uni, locked, tmp_path, mb: int) -> tuple[Path, Path]:
    """A copy of the lock whose nki wheel is a large one the neuron index now serves."""
    big = build_wheel(tmp_path / "big", "nki", "0.7.0", blob_size=mb << 20)
    uni.neuron.projects["nki"][0].path = big
    data = read_toml(locked, "lock")
    for pkg in data["packages"]:
        if pkg["name"] == "nki":
            pkg["wheels"][0].update(size=big.stat().st_size,
                                    hashes={"sha256": hashlib.sha256(big.read_bytes()).hexdigest()})
    lock = Path("pylock.big.toml").resolve()
    lock.write_text(dumps(data, arrays_of_tables=("packages",)))
    return lock, big


def broken_nki_lock(locked: Path, tmp_path: Path) -> Path:
    """A copy of the lock (./pylock.broken.toml) whose nki wheel is a local truncated zip with
    its own right sha256: it passes the hash check and fails as the engine unpacks it."""
    broken = tmp_path / "nki-0.7.0-py3-none-any.whl"
    broken.write_bytes(b"PK\x03\x04 truncated")
    data = read_toml(locked, "lock")
    for pkg in data["packages"]:
        if pkg["name"] == "nki":
            pkg["wheels"] = [{"name": broken.name, "url": broken.as_uri(),
                              "hashes": {"sha256": sha256_of(broken)}}]
    lock = Path("pylock.broken.toml").resolve()
    lock.write_text(dumps(data, arrays_of_tables=("packages",)))
    return lock
