"""The shared test helpers (tests/support) that many tests lean on do what those tests assume:
a zombie is no running process, a bundle's members are regular files, closed ports refuse, a
legacy venv handed out from the content-keyed cache is each test's own, the gpg-agent a
test's signing key started does not outlive the tests, and a suite started with SIGINT ignored
(in the background, by a shell without job control) still stops its processes with it."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from support.apt_repo import gpg_key, stop_agents
from support.archives import members
from support.loopback import closed_ports
from support.procs import alive, gone
from support.stacks import wheel_set
from support.venvs import installed, legacy_venv


def test_a_running_process_is_alive_and_a_zombie_is_gone() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert alive(child.pid) and not gone(child.pid, within=0.2)
        os.kill(child.pid, signal.SIGKILL)
        assert gone(child.pid, within=5.0)  # a zombie: killed, not yet reaped
        assert Path(f"/proc/{child.pid}").exists()  # not vacuous: the entry is still there
    finally:
        child.kill()
        child.wait()
    assert not alive(child.pid) and gone(child.pid)


def _archive(path: Path, *, with_folder: bool) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        data = b"hello"
        info = tarfile.TarInfo("bundle-x/env.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        if with_folder:
            folder = tarfile.TarInfo("bundle-x/sub")
            folder.type = tarfile.DIRTYPE
            tar.addfile(folder)
    return path


def test_members_reads_each_file_below_the_top_folder_and_refuses_anything_else(tmp_path: Path) -> None:
    assert members(_archive(tmp_path / "a.tar.gz", with_folder=False)) == {"env.json": "hello"}
    with pytest.raises(AssertionError):
        members(_archive(tmp_path / "b.tar.gz", with_folder=True))


def test_closed_ports_are_distinct_and_refuse_connections() -> None:
    ports = closed_ports(3)
    assert len(set(ports)) == 3
    for port in ports:
        with socket.socket() as s, pytest.raises(ConnectionRefusedError):
            s.connect(("127.0.0.1", port))


@pytest.mark.slow
def test_each_legacy_venv_is_a_copy_of_its_own_from_one_build(tmp_path_factory: pytest.TempPathFactory) -> None:
    stack = wheel_set(tmp_path_factory.mktemp("stack"))
    cache = tmp_path_factory.getbasetemp() / "venv-cache"
    # this worker's other tests may have built their own stacks' venvs already: count only new ones
    before = set(cache.iterdir()) if cache.is_dir() else set()
    first = legacy_venv(tmp_path_factory.mktemp("one"), stack)
    second = legacy_venv(tmp_path_factory.mktemp("two"), stack)
    assert first != second and installed(first / "bin" / "python")["torch"] == "2.9.0"
    (first / "mine").write_text("changed by the first test")
    assert not (second / "mine").exists()
    assert installed(second / "bin" / "python") == installed(first / "bin" / "python")
    assert first.parent.parent / "venv-cache" == cache
    built = set(cache.iterdir()) - before
    assert [p.name.startswith("legacy-") for p in built] == [True]  # one build for both


def _agents(home: Path) -> list[str]:
    listed = subprocess.run(["pgrep", "-f", f"gpg-agent --homedir {home}"], capture_output=True,
                            text=True, check=False).stdout
    return listed.split()


def test_the_agent_a_signing_key_started_is_stopped(tmp_path: Path) -> None:
    home = tmp_path / "gnupg"
    assert gpg_key(home)
    started = [h for h in (home, *Path("/tmp").glob("g*/h")) if h.resolve() == home.resolve()]
    assert any(_agents(h) for h in started)  # not vacuous: making the key started one
    stop_agents()
    for pid in {p for h in started for p in _agents(h)}:
        assert gone(int(pid), within=10.0)


def test_a_suite_started_with_sigint_ignored_still_stops_neuronctl_with_it(tmp_path: Path) -> None:
    """tests/conftest.py's pytest_configure: without it, the run below inherits SIGINT ignored,
    the neuronctl process the test interrupts never sees it, and the test times out (30 s).
    The inner run's temporary folder is this test's: in pytest's shared one it would remove the
    oldest earlier runs' folders (their venvs: 30 s of this test after a full suite)."""
    test = ("tests/core/test_proc.py::test_the_signal_neuronctl_gets_is_forwarded_to_the_childs_group"
            "[2-SIGINT-KeyboardInterrupt]")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                           f"--basetemp={tmp_path / 'inner'}", test], cwd=root, capture_output=True,
                          text=True, timeout=120, check=False,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert done.returncode == 0, done.stdout[-2000:]
    assert "1 passed" in done.stdout
