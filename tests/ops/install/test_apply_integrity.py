"""An apply into an existing environment that does not finish (SIGTERM mid-unpack, a full disk)
is reported by what it did to the files, not only to the package versions: real pip, real venvs,
the loopback indexes of the install tests."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.locks import broken_nki_lock
from support.venvs import copied_venv
from support.waiting import wait_for
from support.wheels import build_wheel, site_packages

from neuronctl.toml_emit import dumps
from neuronctl.tomlfile import read_toml

pytestmark = pytest.mark.slow
MODULES = 200


def _lock_with_nki(uni, locked: Path, files: dict[str, str], tmp_path: Path) -> Path:
    """A copy of the lock whose nki wheel is this one, served by the neuron index."""
    wheel = build_wheel(tmp_path / "nki-wheel", "nki", "0.7.0", files=files)
    uni.neuron.projects["nki"][0].path = wheel
    data = read_toml(locked, "lock")
    for pkg in data["packages"]:
        if pkg["name"] == "nki":
            pkg["wheels"][0].update(size=wheel.stat().st_size,
                                    hashes={"sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()})
    lock = Path("pylock.nki.toml").resolve()
    lock.write_text(dumps(data, arrays_of_tables=("packages",)))
    return lock


def _many_modules(extra: dict[str, str] | None = None) -> dict[str, str]:
    files = {f"nki/m{i:03}.py": f"X = {i}\n" for i in range(MODULES)}
    return {"nki/__init__.py": "", **files, **(extra or {})}


def _install(lock: Path, venv: Path, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "neuronctl", "install", "--lock", str(lock), "--python",
                             str(venv / "bin" / "python"), "--engine", "pip", "--no-check"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_sigterm_mid_unpack_reports_the_half_unpacked_files(uni, locked, tmp_path, pip_venvs):
    """pip is stopped (neuronctl is terminated, as a cancelled CI job is) after writing half of
    nki's modules: the report names those files, the package changes so far and the commands that
    undo both, and never says nothing changed."""
    venv = tmp_path / "env"
    copied_venv(pip_venvs, "3.12", venv)
    site = site_packages(venv)
    lock = _lock_with_nki(uni, locked, _many_modules(), tmp_path)
    marker = tmp_path / "pip-holds"
    # A real pip in the target, held where it opens nki/m100.py for writing, as a slow disk would.
    hold = (f"import sys, time; sys.addaudithook(lambda e, a: e == 'open' and isinstance(a[0], str) "
            f"and a[0].endswith('/site-packages/nki/m100.py') and 'w' in str(a[1]) "
            f"and (open({str(marker)!r}, 'w').close() or time.sleep(300)))\n")
    (site / "hold-for-test.pth").write_text(hold)
    proc = _install(lock, venv)
    try:
        wait_for(marker, proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert "nothing changed" not in err and "Traceback" not in err
    assert "install was terminated after changing" in err, err
    assert "101 files added under site-packages/nki/ with no dist-info" in err, err  # __init__ + 100
    hint = err.split("restore with: ", 1)[1]
    assert hint.startswith(f"rm -rf -- {site / 'nki'}"), hint  # new, owned by nothing: safe to go
    assert len(list((site / "nki").glob("m*.py"))) == 100  # the report is the truth
    subprocess.run(hint.split(" && ")[0], shell=True, check=True)
    assert not (site / "nki").exists()


def test_full_disk_mid_unpack_reports_the_half_unpacked_files(uni, locked, tmp_path, pip_venvs):
    """A file-size limit (EFBIG, as a full disk's ENOSPC) hit while pip unpacks nki's large data
    file, after its modules: pip fails, and the report lists what it left behind."""
    import resource

    venv = tmp_path / "env"
    copied_venv(pip_venvs, "3.12", venv)
    site = site_packages(venv)
    # 8 MB of zeros compress to a few kB: the download fits under the limit, the unpack does not.
    lock = _lock_with_nki(uni, locked, _many_modules({"nki/zz_data.bin": "0" * (8 << 20)}), tmp_path)

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails instead of killing pip
        resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 20, 4 << 20))

    proc = _install(lock, venv, preexec_fn=limited)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert "nothing changed" not in err and "Traceback" not in err
    assert "install failed after changing" in err and "File too large" in err, err
    on_disk = [p for p in (site / "nki").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert on_disk, "pip cleaned up after itself: this test no longer shows anything"
    assert f"{len(on_disk):,} files added under site-packages/nki/ with no dist-info" in err, err
    assert f"rm -rf -- {site / 'nki'}" in err


def test_a_failure_that_changed_nothing_says_what_was_checked(uni, locked, tmp_path, pip_venvs):
    venv = tmp_path / "env"
    copied_venv(pip_venvs, "3.12", venv)
    broken_nki_lock(locked, tmp_path)
    proc = _install(Path("pylock.broken.toml").resolve(), venv)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert "install failed, nothing changed" in err and f"files and directories in {site_packages(venv)}" in err
    assert os.path.isdir(site_packages(venv) / "pip")
