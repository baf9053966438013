"""lock.drift reports what is installed that the lock does not list (names and sizes, largest
first), not only version differences; pip, setuptools and wheel are never drift."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from msgspec.structs import replace
from packaging.pylock import Pylock
from support.doctor_facts import facts, python_env

from neuronctl.ops.doctor.checks_lock import check_lock, record_size
from neuronctl.tomlfile import loads_toml

LOCK = ('lock-version = "1.0"\ncreated-by = "test"\n'
        '[[packages]]\nname = "nki"\nversion = "0.7.0"\n'
        '[[packages.wheels]]\nurl = "https://example.invalid/nki-0.7.0-py3-none-any.whl"\n'
        'hashes = {sha256 = "' + "b" * 64 + '"}\n')


def drift_lock() -> Pylock:
    return Pylock.from_dict(loads_toml(LOCK, "test lock"))


def dist_info(site: Path, name: str, version: str, record: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text(record)


def env_at(prefix: Path, packages: dict[str, str]):
    return replace(python_env(packages=packages), prefix=str(prefix))


def test_unlisted_packages_warn_with_their_sizes_largest_first(tmp_path):
    site = tmp_path / "lib" / "python3.12" / "site-packages"
    dist_info(site, "nvidia-cublas-cu13", "13.1.0.3",
              "nvidia/cublas/lib/libcublas.so,sha256=x,2500000000\nnvidia/__init__.py,,\n")
    dist_info(site, "triton", "3.6.0", "triton/__init__.py,sha256=x,1200\n")
    (site / "mine").mkdir()
    (site / "mine" / "a.py").write_text("x" * 300)
    dist_info(site, "mine", "1.0", "mine/a.py,,\n../../../outside,,\n")
    env = env_at(tmp_path, {"nki": "0.7.0", "nvidia-cublas-cu13": "13.1.0.3", "triton": "3.6.0",
                            "mine": "1.0", "pip": "25.0", "setuptools": "80", "wheel": "0.45",
                            "ghost": "1.0"})
    out = check_lock(facts(env=env, lock=Path("pylock.toml"), pylock=drift_lock()))
    assert out.status == "warn" and "4 installed packages are not in it" in out.message
    assert out.details == ("nvidia-cublas-cu13 13.1.0.3: not in the lock (2.5 GB)",
                           "triton 3.6.0: not in the lock (1.2 kB)",
                           "mine 1.0: not in the lock (300 bytes)",
                           "ghost 1.0: not in the lock (size unknown)")


def test_version_drift_fails_and_lists_the_unlisted_too(tmp_path):
    env = env_at(tmp_path, {"nki": "0.6.0", "triton": "3.6.0", "pip": "25.0"})
    out = check_lock(facts(env=env, lock=Path("pylock.toml"), pylock=drift_lock()))
    assert out.status == "fail" and "1 installed packages are not in it" in out.message
    assert out.details == ("nki: locked 0.7.0, installed 0.6.0",
                           "triton 3.6.0: not in the lock (size unknown)")


def test_only_tooling_besides_the_lock_passes(tmp_path):
    env = env_at(tmp_path, {"nki": "0.7.0", "pip": "25.0", "setuptools": "80", "wheel": "0.45"})
    out = check_lock(facts(env=env, lock=Path("pylock.toml"), pylock=drift_lock()))
    assert out.status == "pass"


def test_an_oversized_or_missing_record_is_size_unknown(tmp_path, monkeypatch):
    import neuronctl.ops.doctor.checks_lock as checks_lock

    dist_info(tmp_path, "big", "1.0", "a,,1\n" * 100)
    assert record_size(tmp_path / "big-1.0.dist-info") == 100
    monkeypatch.setattr(checks_lock, "RECORD_CAP", 10)
    assert record_size(tmp_path / "big-1.0.dist-info") is None
    assert record_size(tmp_path / "none-1.0.dist-info") is None


@pytest.mark.slow
def test_doctor_on_a_real_venv_names_what_the_lock_does_not_list(cli, tmp_path, pip_venvs):
    from support.venvs import copied_venv
    from support.wheels import build_wheel, pip_install

    out = tmp_path / "w"
    nki = build_wheel(out, "nki", "0.7.0")
    extra = build_wheel(out, "triton", "3.6.0", blob_size=300_000)
    py = copied_venv(pip_venvs, "3.12", tmp_path / "v")
    pip_install(py, [nki, extra])
    Path("pylock.toml").write_text(LOCK)
    r = cli("doctor", "--python", str(py), "--lock", "pylock.toml", "--only", "lock.drift", "-v")
    assert "lock.drift" in r.out, r.err
    # The 300 kB blob and the wheel's other files, from the RECORD pip wrote.
    assert re.search(r"triton 3\.6\.0: not in the lock \(30\d\.\d kB\)", r.out), r.out
    assert "pip " not in r.out.split("lock.drift", 1)[1]
    subprocess.run([str(py), "-m", "pip", "uninstall", "-y", "triton"], check=True, capture_output=True)
    r = cli("doctor", "--python", str(py), "--lock", "pylock.toml", "--only", "lock.drift")
    assert "not in the lock" not in r.out
