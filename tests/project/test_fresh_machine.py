"""The README's test command on a fresh machine (issue 22, item 23): the stock python3, a PATH with
no pyenv on it, TERM=dumb, and nothing else the README's two commands do not set up. Tests that
ran `pyenv prefix` or needed a drawing terminal run here in such an environment; a scan of tests/
keeps new ones from coming back."""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent

# The tests that failed there (a `$(pyenv prefix 3.12.1)`, rich's bars on TERM=dumb, a venv base
# found through PYENV_ROOT), and the files of the second, whole: its bars test moved with the
# download code it tests (install's dead downloads.py went) to test_wheelhouse_output.py.
ONCE_BROKEN = ("tests/ops/smoke/test_smoke.py::test_a_target_without_torch", "tests/ops/install/test_install_output.py",
               "tests/ops/wheelhouse/test_wheelhouse_output.py",
               "tests/ops/install/test_install_counts.py::test_a_dry_run_from_a_lock_gathers_each_fact_once")


def _bare_path() -> str:
    """/usr/local/bin:/usr/bin:/bin less any folder that holds pyenv (a fresh machine's PATH)."""
    dirs = [d for d in ("/usr/local/bin", "/usr/bin", "/bin") if os.path.isdir(d)]
    return os.pathsep.join(d for d in dirs if not os.path.exists(os.path.join(d, "pyenv")))


def _fresh_env() -> dict[str, str]:
    # HOME is the real user's (the autouse isolation moved ours): where ~/.pyenv/versions lie.
    return {"HOME": pwd.getpwuid(os.getuid()).pw_dir, "PATH": _bare_path(), "TERM": "dumb",
            "LANG": "C.UTF-8"}


def test_the_tests_that_needed_pyenv_or_a_terminal_pass_without_them(tmp_path):
    env = _fresh_env()
    # Not vacuous: no pyenv, no shim, no PYENV_ROOT can reach the child.
    assert shutil.which("pyenv", path=env["PATH"]) is None
    assert "pyenv" not in env["PATH"] and "PYENV_ROOT" not in env
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                                "-p", "no:cacheprovider", *ONCE_BROKEN], cwd=REPO, env=env,
                               capture_output=True, text=True, timeout=120, check=False)
    ids = [line for line in collected.stdout.splitlines() if "::" in line]
    assert len(ids) >= 5 and ONCE_BROKEN[0] in ids, collected.stdout + collected.stderr
    assert any("test_progress_bars_are_labelled_by_name_and_version" in i for i in ids)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider",
                           f"--basetemp={tmp_path / 'inner'}", *ONCE_BROKEN], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-4000:]
    summary = said.strip().splitlines()[-1]
    assert re.match(rf"^{len(ids)} passed\b", summary) and "skipped" not in summary, said[-4000:]


# The scan: every test file, for a pyenv command, a read of TERM, or a tool found on PATH.

PYENV_COMMAND = re.compile(
    r"""(?<![\w./~-])pyenv(?:\s+|["']\s*,\s*["'])(?:prefix|which|root|version|versions|exec|shell|"""
    r"""local|global|init|install|rehash|whence|shims|virtualenv|activate)\b""")
TERM_READ = re.compile(r"""(?:environ\s*\[|environ\.get\(|getenv\()\s*["']TERM["']""")
WHICH = re.compile(r"""shutil\.which\(\s*(?:f?["']([^"']+)["']|([\w.]+))""")

# Every shutil.which( in tests/, reviewed: (file, what it looks for) -> why it is no dependency on
# a tool the README's two commands do not install. A new one fails the scan until it is here.
REVIEWED_WHICH = {
    ("test_env_collect.py", "gcc"): "compares with the report either way: absent gcc is None",
    ("test_env_and_legacy.py", "python3"): "the stock /usr/bin/python3 the README starts from",
    ("slurm_cluster.py", "t"): "slurm-wlm and munge: .ci/run installs them, the README does not "
                               "(reported to the lead: the README should say so)",
    ("slurm_cluster.py", "name"): "the same daemons, found in /usr/sbin too (a narrow PATH lacks it)",
    ("test_health_and_key_parsers.py", "gpg"): "gnupg: .ci/run installs it and the README names it; "
                                         "the key tests skip, saying so, without it",
    ("test_health_and_key_parsers.py", "sqv"): "Debian's sqv (Ubuntu 26.04's apt verifier): .ci/run "
                                         "installs it and the README names it",
    ("shellcheck.py", "shellcheck"): "Debian's shellcheck: .ci/run installs it and the README names "
                                     "it; the lint tests skip, saying so, without it",
}


def _test_sources() -> dict[str, str]:
    here = Path(__file__).name
    return {str(p.relative_to(TESTS)): p.read_text(errors="replace")
            for p in sorted(TESTS.rglob("*.py")) if p.name != here and "__pycache__" not in p.parts}


def pyenv_commands(text: str) -> list[str]:
    return [m.group(0) for m in PYENV_COMMAND.finditer(text)]


def term_reads(text: str) -> list[str]:
    return [m.group(0) for m in TERM_READ.finditer(text)]


def test_the_scan_finds_what_it_looks_for():
    # The forms that broke a fresh machine, and forms that are fine.
    assert pyenv_commands('["bash", "-c", "$(pyenv prefix 3.12.1)/bin/python3.12"]')
    assert pyenv_commands('subprocess.run(["pyenv", "which", "python3.12"])')
    assert pyenv_commands("out=`pyenv root`")
    assert not pyenv_commands('glob("~/.pyenv/versions/3.12.*/bin/python3.12")')
    assert not pyenv_commands("from neuronctl.probes.pyenv import inspect_python  # pyenv builds")
    assert term_reads('os.environ["TERM"]') and term_reads("os.environ.get('TERM', '')")
    assert term_reads('os.getenv("TERM")') and not term_reads('monkeypatch.setenv("TERM", "xterm")')
    assert not term_reads("signal.SIGTERM")
    assert [m.group(1) or m.group(2) for m in WHICH.finditer('shutil.which("srun") or shutil.which(t)')] \
        == ["srun", "t"]


def test_no_test_runs_pyenv_reads_term_or_needs_an_unreviewed_tool():
    sources = _test_sources()
    assert len(sources) > 50 and "conftest.py" in sources and "support/wheels.py" in sources
    found = {name: pyenv_commands(text) + term_reads(text) for name, text in sources.items()}
    assert not {k: v for k, v in found.items() if v}
    seen = {(Path(name).name, m.group(1) or m.group(2)) for name, text in sources.items()
            for m in WHICH.finditer(text)}
    assert seen - REVIEWED_WHICH.keys() == set(), "review these uses of shutil.which"
    assert REVIEWED_WHICH.keys() - seen == set(), "stale entries"  # the list stays true
