"""Issue 25, item 6: output paths are checked before any long work starts: exit 2 in one line,
nothing run, nothing written (neuronctl.ops.output_path, one validator for every -o and -d)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neuronctl.ops.output_path import check_output_dir, check_output_file

pytestmark = pytest.mark.first_hour  # the first_hour campaign (was tests/test_first_hour_early.py)

REPO = Path(__file__).resolve().parents[2]
NEURONCTL = REPO / ".venv" / "bin" / "neuronctl"

# A model whose factory leaves a mark when it is called, then takes long.
SLOW_MODEL = """
import pathlib, time
def make():
    pathlib.Path({mark!r}).write_text("the model ran")
    time.sleep(30)
    raise SystemExit("unreachable in these tests")
"""


def test_smoke_into_a_missing_directory_fails_before_the_model_runs(tmp_path):
    mark = tmp_path / "ran"
    script = tmp_path / "slow.py"
    script.write_text(SLOW_MODEL.format(mark=str(mark)))
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    started = time.monotonic()
    r = subprocess.run([str(NEURONCTL), "smoke", "--script", str(script), "--device", "cpu",
                        "--steps", "1000", "--train", "--python", sys.executable,
                        "-o", "/nonexistent/dir/s.json"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
                       check=False)
    elapsed = time.monotonic() - started
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        "neuronctl: error: -o /nonexistent/dir/s.json: directory /nonexistent/dir does not exist"]
    assert not mark.exists() and r.stdout == ""  # the model never ran
    assert elapsed < 1.0 or not mark.exists()  # a loaded machine: the mark is the proof


@pytest.mark.parametrize("args", [
    ["doctor", "-o", "{missing}/r.json"],
    ["bundle", "-o", "{missing}/b.tar.gz"],
    ["setup", "-o", "{missing}/setup.sh"],
    ["lock", "-o", "{missing}/pylock.toml"],
    ["smoke", "-o", "{missing}/s.json"],
])
def test_each_output_into_a_missing_directory_is_one_line_exit_2(cli, tmp_path, args):
    missing = tmp_path / "no" / "such"
    r = cli(*(a.format(missing=missing) for a in args))
    assert r.code == 2 and r.out == ""
    assert r.err.strip().splitlines() == [
        f"neuronctl: error: -o {missing}/{Path(args[-1]).name}: directory {missing} does not exist"]


def test_lock_checks_its_output_before_reaching_any_index(cli, tmp_path):
    # conftest points every index at a closed loopback port: resolving would fail on it
    r = cli("lock", "-o", str(tmp_path / "none" / "pylock.toml"))
    assert r.code == 2 and "does not exist" in r.err and "127.0.0.1" not in r.err


def test_download_dest_under_a_file(cli, tmp_path):
    (tmp_path / "file").write_text("")
    lock = tmp_path / "pylock.toml"
    lock.write_text("")
    r = cli("download", "--lock", str(lock), "-d", str(tmp_path / "file" / "wheels"))
    assert r.code == 2 and "is not a directory" in r.err


def test_the_validator_refuses_what_the_atomic_writer_cannot_or_must_not_replace(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(Exception, match="not a regular file"):
        check_output_file(fifo, "-o")
    with pytest.raises(Exception, match="that is a directory"):
        check_output_file(tmp_path, "-o")
    with pytest.raises(Exception, match="is not a directory"):
        check_output_file(fifo / "x.json", "-o")
    # A link at the path is replaced by the rename, never followed: allowed, as the writer does.
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    assert check_output_file(link, "-o") == link
    assert check_output_file(None, "-o") is None
    assert check_output_file(Path("relative.json"), "-o") == Path("relative.json")


def test_the_directory_validator_allows_mkdir_p_and_refuses_files(tmp_path):
    assert check_output_dir(tmp_path / "a" / "b", "-d") == tmp_path / "a" / "b"
    (tmp_path / "f").write_text("")
    with pytest.raises(Exception, match="is not a directory"):
        check_output_dir(tmp_path / "f", "-d")
    with pytest.raises(Exception, match="is not a directory"):
        check_output_dir(tmp_path / "f" / "sub", "-d")
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "gone")
    with pytest.raises(Exception, match="dangling symlink"):
        check_output_dir(dangling, "-d")



def test_install_write_lock_into_a_missing_directory_fails_before_anything(cli, tmp_path):
    venv = tmp_path / "v"
    r = cli("install", "--venv", str(venv), "--venv-python", "3.12",
            "--write-lock", str(tmp_path / "none" / "pylock.toml"))
    assert r.code == 2 and "--write-lock" in r.err and "does not exist" in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1 and not venv.exists()
