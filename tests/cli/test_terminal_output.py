"""What people see in a terminal: data is printed as it is (no emoji codes or markup), plurals
agree, global options work after the command, mistypes get a suggestion, tables do not cut
versions, and a step summary that cannot be written does not change the verdict."""

import json
import os
import re
import subprocess
import sys

import pytest
from support.pty_session import on_pty


def test_pci_addresses_print_as_they_are(cli, trn2):
    detect = cli("detect", "--sysroot", str(trn2))
    assert detect.code == 0
    assert "pci 0000:cd:00.0" in detect.out and "\U0001f4bf" not in detect.out
    doctor = cli("-v", "doctor", "--sysroot", str(trn2), "--no-device-probe", "--only", "hardware.chip")
    assert "0000:cd:00.0" in doctor.out and "\U0001f4bf" not in doctor.out


def test_one_warning_is_singular(cli, tmp_path):
    (tmp_path / "sys").mkdir()  # an empty machine is still a root: sys/ (issue 22, item 11)
    r = cli("doctor", "--no-device-probe", "--only", "python", "--python", sys.executable,
            "--sysroot", str(tmp_path))
    assert "1 warning," in r.out and "1 warnings" not in r.out


def test_global_options_work_after_the_command(cli, tmp_path):
    (tmp_path / "sys").mkdir()  # an empty machine is still a root: sys/ (issue 22, item 11)
    quiet = cli("doctor", "-q", "--no-device-probe", "--sysroot", str(tmp_path))
    assert quiet.code in (0, 1)
    assert quiet.out.count("\n") == 1 and quiet.out.startswith(("pass: ", "warn: ", "fail: "))
    verbose = cli("doctor", "--no-device-probe", "--only", "python", "-v", "--sysroot", str(tmp_path))
    assert "supports Python" in verbose.out  # details appear only with -v
    assert cli("lock", "-v", "--help").code == 0
    assert cli("releases", "show", "2.33.0", "--no-color").code == 0


def test_did_you_mean_for_commands_and_check_ids(cli):
    r = cli("doctr")
    assert r.code == 2 and "did you mean 'doctor'?" in r.err
    r = cli("doctor", "--only", "pyton.version")
    assert r.code == 2 and "did you mean 'python.version'?" in r.err
    assert "groups: python, packages, host, hardware, runtime, cache, device, network, model, lock" in r.err
    helped = cli("doctor", "--help").out
    assert "groups: python, packages" in " ".join(helped.split())


@pytest.mark.parametrize("columns", ["120", "100", None])
def test_releases_off_a_terminal_is_the_line_form_whatever_columns_says(columns, monkeypatch, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env.update({"COLUMNS": columns} if columns else {})
    out = subprocess.run([sys.executable, "-m", "neuronctl", "releases"], capture_output=True,
                         text=True, env=env, check=True).stdout
    assert "…" not in out and not set("│┃━─┏┡└") & set(out) and out.isascii()
    rows = [line for line in out.splitlines() if re.match(r"2\.\d+\.\d+: ", line)]
    assert len(rows) >= 17 and all(line == line.rstrip() for line in out.splitlines())
    for row in rows:  # no column dropped: every release has its date, Python range and chips
        assert ": date " in row and "; status " in row and "; chips " in row, row
    assert "2.9.0.2.15.32035" in out


def test_step_summary_in_a_missing_directory_is_a_warning(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing" / "summary.md"))
    (tmp_path / "sys").mkdir()  # an empty machine is still a root: sys/ (issue 22, item 11)
    r = cli("doctor", "--format", "github", "--no-device-probe", "--sysroot", str(tmp_path))
    plain = cli("doctor", "--json", "--no-device-probe", "--sysroot", str(tmp_path))
    assert r.code == json.loads(plain.out)["summary"]["exit_code"]
    assert "warning: GITHUB_STEP_SUMMARY" in r.err and "internal error" not in r.err


def _stderr_on_a_tty(args, **env):
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    environ.update(env)
    ran = on_pty([sys.executable, "-m", "neuronctl", *args], environ, timeout=60, stdout_tty=False)
    return ran.code, ran.shown


def test_errors_are_red_on_a_terminal_and_plain_otherwise(tmp_path):
    bad = ["doctor", "--timeout", "0"]
    code, err = _stderr_on_a_tty(bad)
    assert code == 2 and "\x1b[31" in err and "neuronctl: error:" in err
    assert "\x1b[" not in _stderr_on_a_tty(bad, NO_COLOR="1")[1]
    assert "\x1b[" not in _stderr_on_a_tty([*bad, "--no-color"])[1]
    assert "\x1b[" not in _stderr_on_a_tty(["--no-color", *bad])[1]
    piped = subprocess.run([sys.executable, "-m", "neuronctl", *bad], capture_output=True, text=True,
                           check=False)
    assert piped.returncode == 2 and "\x1b[" not in piped.stderr
