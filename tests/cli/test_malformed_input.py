"""Malformed input and hostile conditions around install and output: exit 2 naming what was
wrong (or a fault naming the file), never an internal error, nothing half-written."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest
from support.paths import N2_MANIFEST

from neuronctl.backend.external_tool import run_engine
from neuronctl.errors import FaultError


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300", "-1", "0", "86401"])
def test_timeouts_that_are_not_a_sane_number_of_seconds_are_bad_input(cli, value):
    r = cli("lock", "--offline", "--timeout", value, "-o", "-")
    assert r.code == 2 and "--timeout: timeout must be a positive number of seconds" in r.err, r.err
    assert "internal error" not in r.err


def test_a_config_timeout_of_nan_is_bad_input(cli, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.neuronctl]\ntimeout = nan\n")
    r = cli("--config", str(tmp_path / "pyproject.toml"), "lock", "--offline", "-o", "-")
    assert r.code == 2 and "timeout" in r.err and "nan" in r.err, r.err


def test_a_full_disk_while_writing_o_names_the_file_and_leaves_nothing(tmp_path):
    """`-o FILE` on a disk that fills up (a file-size limit: EFBIG, as ENOSPC would be): one
    error naming the file, exit 1, no partial file and no temp file beside it."""
    import resource

    out = tmp_path / "out" / "manifest.json"
    out.parent.mkdir()

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    proc = subprocess.run([sys.executable, "-m", "neuronctl", "releases", "import", str(N2_MANIFEST),
                           "-o", str(out)], capture_output=True, text=True, preexec_fn=limited,
                          timeout=120, check=False)
    assert proc.returncode == 1, proc.stderr
    assert f"neuronctl: error: cannot write {out}: File too large" in proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert os.listdir(out.parent) == []


def test_a_dangling_venv_symlink_is_bad_input_and_nothing_is_created(cli, tmp_path):
    link, gone = tmp_path / "env", tmp_path / "moved-away" / "env"
    link.symlink_to(gone)
    r = cli("install", "--venv", str(link), "--venv-python", "3.12", "--no-check")
    assert r.code == 2 and f"--venv {link}: a dangling symlink (to {gone})" in r.err, r.err
    assert link.is_symlink() and not gone.exists() and not gone.parent.exists()


def test_an_engine_killed_by_a_signal_names_the_signal():
    with pytest.raises(FaultError) as caught:
        run_engine([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    assert "(killed by SIGKILL)" in caught.value.message and "exit -9" not in caught.value.message
    with pytest.raises(FaultError, match=r"\(exit 3\): boom"):
        run_engine([sys.executable, "-c", "import sys; sys.exit('boom' and print('boom', file=sys.stderr) or 3)"])


@pytest.mark.parametrize(("args", "env"), [
    (["lock", "--offline", "-o", "~nouser-x/pylock.toml"], {}),
    (["doctor", "--level", "1", "-o", "~nouser-x/r.json"], {}),
    (["doctor", "--level", "1", "--lock", "~nouser-x/pylock.toml"], {}),
    (["doctor", "--level", "1", "--sysroot", "~nouser-x/root"], {}),
    (["bundle", "-o", "~nouser-x/b.tar.gz"], {}),
    (["install", "--venv", "~nouser-x/v", "--dry-run"], {}),
    (["releases"], {"NEURONCTL_MANIFEST": "~nouser-x/m.json"}),
    (["doctor", "--level", "1"], {"NEURONCTL_LOCK_FROM_CONFIG": "~nouser-x/pylock.toml"}),
    (["doctor", "--level", "1"], {"NEURONCTL_LOCK_FROM_CONFIG": "a\0b"}),
    (["lock", "--offline"], {"NEURONCTL_LOCK_FROM_CONFIG": "a\0b/pylock.toml"}),
    (["lock", "--offline", "-o", "a" * 300 + "/pylock.toml"], {}),  # ENAMETOOLONG, once exit 1
    (["doctor", "--level", "1", "--python", "a" * 300], {}),
    (["install", "--venv", "a" * 300, "--dry-run"], {}),
    (["lock", "--offline"], {"NEURONCTL_LOCK_FROM_CONFIG": "a" * 300 + "/pylock.toml"}),
    (["coverage", "--script", "~nouser-x/s.py"], {}),
])
def test_a_path_that_cannot_be_is_bad_input(cli, monkeypatch, tmp_path, args, env):
    """`~nouser/...` (pathlib raises RuntimeError), a NUL (ValueError) and a name longer than
    the file system takes (OSError ENAMETOOLONG) in a path from a flag, the environment or a
    project's config: one line naming where, exit 2, not an internal error."""
    monkeypatch.chdir(tmp_path)
    lock = env.pop("NEURONCTL_LOCK_FROM_CONFIG", None)
    if lock is not None:
        (tmp_path / "pyproject.toml").write_text(
            '[tool.neuronctl]\nlock = "' + lock.replace("\0", "\\u0000") + '"\n')
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    r = cli(*args)
    assert r.code == 2, (r.code, r.err)
    assert "internal error" not in r.err and len(r.err.strip().splitlines()) == 1, r.err
    assert (("nouser-x" in r.err and "no user" in r.err) or "NUL" in r.err
            or "longer than a path (4096 bytes) or a file name (255 bytes)" in r.err), r.err


def test_a_config_torch_that_is_no_version_is_named_where_it_is_and_init_replaces_it(cli, tmp_path,
                                                                                    monkeypatch):
    """A project's `torch = "2.x"` once reached the release model unchecked: init crashed with an
    internal error, and lock blamed --torch, which nobody typed."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.neuronctl]\ntorch = "2.x"\n')
    r = cli("lock", "--offline")
    assert r.code == 2 and "config torch (" in r.err and "'2.x' is not a torch version" in r.err, r.err
    assert "--torch" not in r.err
    r = cli("init")
    assert r.code == 0, r.err  # not offered by the release: replaced by its own line, as documented
    written = (tmp_path / "pyproject.toml").read_text()
    assert "2.x" not in written and re.search(r'^torch = "\d+\.\d+"$', written, re.M), written


@pytest.mark.parametrize("variable", ["XDG_CONFIG_HOME", "XDG_DATA_HOME"])
def test_a_data_or_config_home_longer_than_a_path_can_be_is_bad_input(cli, monkeypatch, variable):
    monkeypatch.setenv(variable, "/tmp/" + "a" * 300)
    r = cli("releases")
    assert r.code == 2 and variable in r.err and "not a path here" in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1


def test_a_nul_in_your_own_manifest_url_is_bad_input(cli, tmp_path, monkeypatch):
    home = tmp_path / "xdg"
    (home / "neuronctl").mkdir(parents=True)
    (home / "neuronctl" / "config.toml").write_text('manifest_url = "a\\u0000b"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    r = cli("releases", "update")
    assert r.code == 2 and "NUL" in r.err and "internal error" not in r.err, r.err


@pytest.mark.parametrize("args", [["doctor", "--level", "1"], ["lock", "--offline"],
                                  ["setup", "--dockerfile", "--neuronctl-spec", "neuronctl==0.1.0"]])
def test_a_working_directory_removed_under_the_shell_is_bad_input(cli, tmp_path, monkeypatch, args):
    """The folder the shell stands in was removed (`rm -rf` from another terminal): one line and
    exit 2, not an internal error from looking for ./pyproject.toml."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    r = cli(*args)
    assert r.code == 2 and "the working directory no longer exists" in r.err, r.err
    assert r.err.count("\n") == 2  # the error and its hint
