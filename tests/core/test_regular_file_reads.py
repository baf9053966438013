"""A lock, a manifest or a config that a user or a config file names is read only where it is a
regular file (issue 22, item 18): a FIFO, a link to /dev/stdin, a device or a socket is refused
at once, unread, with a one-line error and exit 2, never waited on past doctor level 1's budget.
Real files, FIFOs and links; neuronctl runs as a real process so that a hang is a timeout."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_files_readers.py)

BUDGET_S = 20.0
"""Far more than any refusal takes; a read that blocks on a FIFO never ends."""


def _neuronctl_stdin_open(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # stdin is a pipe nobody writes: a read of /dev/stdin would wait on it forever
    with subprocess.Popen([sys.executable, "-m", "neuronctl", *args], cwd=cwd, text=True,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        try:
            out, err = proc.communicate(timeout=BUDGET_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise AssertionError(f"neuronctl {' '.join(args)} still running after {BUDGET_S}s") from None
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _specials(where: Path) -> dict[str, Path]:
    """One of each thing that is not a regular file, by name."""
    os.mkfifo(where / "fifo")
    (where / "stdin").symlink_to("/dev/stdin")
    (where / "zero").symlink_to("/dev/zero")
    (where / "loop").symlink_to(where / "loop")
    (where / "dir").mkdir()
    return {name: where / name for name in ("fifo", "stdin", "zero", "loop", "dir")}


def _one_line_exit_2(r: subprocess.CompletedProcess[str], path: Path) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0], r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("key", ["lock", "manifest"])
@pytest.mark.parametrize("kind", ["fifo", "stdin", "zero", "loop", "dir"])
def test_a_config_named_file_that_is_not_regular_is_refused_at_once(tmp_path, key, kind):
    special = _specials(tmp_path)[kind]
    # a file named with --config: a trust root (manifest) is never read from ./pyproject.toml
    (tmp_path / "mine.toml").write_text(f'[tool.neuronctl]\n{key} = "{special.name}"\n')
    _one_line_exit_2(_neuronctl_stdin_open(tmp_path, "--config", str(tmp_path / "mine.toml"), "doctor",
                                "--level", "1", "--check-timeout", "5"), special)


@pytest.mark.parametrize("kind", ["fifo", "stdin", "zero"])
def test_a_config_file_that_is_not_regular_is_refused_at_once(tmp_path, kind):
    special = _specials(tmp_path)[kind]
    _one_line_exit_2(_neuronctl_stdin_open(tmp_path, "doctor", "--level", "1", "--config", str(special)), special)


def test_a_checkouts_oversized_pyproject_is_refused_unparsed(tmp_path):
    """Every command reads ./pyproject.toml: one of many megabytes (TOML parses at about a second
    a megabyte) is refused at its size, not parsed for a minute on each command."""
    big = tmp_path / "pyproject.toml"
    big.write_text("[tool.neuronctl]\n" + "# padding\n" * (200 << 10))  # 2 MiB
    r = _neuronctl_stdin_open(tmp_path, "releases")
    _one_line_exit_2(r, big)
    assert "larger than 1 MiB" in r.stderr


def _child_reads(module: str, call: str, path: Path) -> subprocess.CompletedProcess[str]:
    """`call`(path, ...) from `module` in a child Python (a blocked read is then a timeout)."""
    code = ("import sys; from pathlib import Path\nfrom neuronctl.errors import InputError\n"
            f"from {module} import {call.split('(', 1)[0]}\n"
            f"try:\n    {call.replace('PATH', 'Path(sys.argv[1])')}\n"
            "except InputError as exc:\n    print(exc); sys.exit(2)\n")
    return subprocess.run([sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, text=True,
                          capture_output=True, timeout=BUDGET_S, check=False)


@pytest.mark.parametrize(("module", "call"), [
    ("neuronctl.resolvers.pylock", "load_pylock(PATH)"),
    ("neuronctl.resolvers.lock_record", "read_recorded(PATH, 'requirements')"),
    ("neuronctl.release.manifest", "read_json_file(PATH)"),
    ("neuronctl.tomlfile", "read_toml(PATH, 'config file')"),
])
def test_each_loader_refuses_a_fifo_unread(tmp_path, module, call):
    fifo = _specials(tmp_path)["fifo"]
    r = _child_reads(module, call, fifo)
    assert r.returncode == 2 and "FIFO" in r.stdout, (r.stdout, r.stderr)


def test_open_regular_reads_a_regular_file_through_a_link_and_refuses_a_socket(tmp_path):
    from neuronctl.safety import NotRegularFile, open_regular

    (tmp_path / "real").write_bytes(b"data")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with open_regular(tmp_path / "link") as fh:
        assert fh.read() == b"data"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))
        with pytest.raises(NotRegularFile, match="a socket, not a regular file"):
            open_regular(tmp_path / "sock")
    with pytest.raises(IsADirectoryError):
        open_regular(tmp_path)


@pytest.mark.parametrize("kind", ["fifo", "stdin"])
def test_a_smoke_report_that_is_not_regular_is_refused_by_cost(tmp_path, kind):
    special = _specials(tmp_path)[kind]
    r = _neuronctl_stdin_open(tmp_path, "cost", "--from", str(special), "--instance", "trn1.2xlarge")
    assert r.returncode == 2 and "not a regular file" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", ["fifo", "stdin"])
def test_an_install_lock_that_is_not_regular_is_refused(tmp_path, kind):
    special = _specials(tmp_path)[kind]
    r = _neuronctl_stdin_open(tmp_path, "install", "--lock", str(special), "--dry-run", "--venv", str(tmp_path / "v"))
    _one_line_exit_2(r, special)
