"""Issue 25, item 3, for lock: the index page and metadata fetches show on a terminal ("fetching
index pages: 3 of 9 (torch-neuronx)") as a live status line, and never on a pipe, with --json
or with -q. Against the loopback indexes of the lock tests."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.pty_session import env_without_columns, run_in_pty

from neuronctl.ops.index_routing import IndexSources
from neuronctl.ops.lock.request import StackSettings, build_lock_request, plan_request
from neuronctl.ops.lock.run import lock
from neuronctl.ops.reporter import CollectingReporter
from neuronctl.release.manifest import load_bundled_manifest

pytestmark = pytest.mark.first_hour  # the first_hour campaign (was tests/test_first_hour_lock_progress.py)

NEURONCTL = [sys.executable, "-m", "neuronctl"]
FETCHING = re.compile(r"fetching (index pages|metadata): (\d+) of (\d+) \(([a-z0-9._-]+)\)")


def _lock_argv(uni, out: Path, *extra: str) -> list[str]:
    return [*NEURONCTL, "lock", *uni.index_flags(), "--python-version", "3.12", "-o", str(out), *extra]


def test_lock_shows_its_index_fetches_on_a_terminal(uni, tmp_path: Path) -> None:
    out = run_in_pty(_lock_argv(uni, tmp_path / "pylock.toml"), 100, env_without_columns())
    assert (tmp_path / "pylock.toml").is_file(), out[-2000:]
    seen = FETCHING.findall(out)  # loopback is quick: the line shows what it last drew
    assert seen, out[-2000:]
    assert all(int(done) <= int(total) for _, done, total, _name in seen)
    assert "\x1b[?25l" in out  # rich's live status (the cursor hidden while it draws)


@pytest.mark.parametrize("extra", [["--json"], ["-q"]])
def test_no_fetch_status_with_json_or_quiet(uni, tmp_path: Path, extra: list[str]) -> None:
    args = _lock_argv(uni, tmp_path / "pylock.toml", *extra)
    if extra == ["-q"]:
        args = [*NEURONCTL, "-q", *args[len(NEURONCTL):]]
    out = run_in_pty(args, 100, env_without_columns())
    assert (tmp_path / "pylock.toml").is_file(), out[-2000:]
    assert "fetching " not in out and "\x1b[?25l" not in out, out[-2000:]


def test_no_fetch_status_on_a_pipe(uni, tmp_path: Path) -> None:
    run = subprocess.run(_lock_argv(uni, tmp_path / "pylock.toml"), capture_output=True,
                         text=True, env=env_without_columns(), timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert "fetching " not in run.stdout + run.stderr and "\x1b" not in run.stderr


def test_the_lock_operation_reports_each_fetch_as_a_status_event(uni, tmp_path: Path) -> None:
    flags = tuple(f.removeprefix("--index=") for f in uni.index_flags())
    stack = plan_request(load_bundled_manifest(), StackSettings(
        python_versions=("3.12",), indexes=IndexSources(index_flags=flags)))
    request = build_lock_request(stack, output=str(tmp_path / "pylock.toml"), fmt=None,
                                 check=False, offline=False, timeout=30.0)
    reporter = CollectingReporter()
    outcome = lock(request, reporter)
    said = reporter.messages("status")
    pages = [m for m in said if m.startswith("fetching index pages: ")]
    assert pages and any(m.endswith("(torch-neuronx)") for m in pages), said
    last = FETCHING.match(pages[-1])
    assert last and last.group(2) == last.group(3), pages  # every page asked for was fetched
    assert any(m.startswith("fetching metadata: ") for m in said), said
    assert outcome.packages


def test_download_shows_what_it_checks_on_a_terminal_and_nothing_on_a_pipe(uni, locked: Path,
                                                                           tmp_path: Path) -> None:
    house = tmp_path / "house"
    argv = [*NEURONCTL, "download", "--lock", str(locked), "-d", str(house)]
    first = run_in_pty(argv, 100, env_without_columns())
    assert "checking " in first and " host(s) before downloading" in first, first[-2000:]
    # A re-run downloads nothing: it checks each file's sha256, and says so as it goes.
    again = run_in_pty(argv, 100, env_without_columns())
    # Each file as its progress bar names it: the package and its version.
    assert re.search(r"files: \d+ of \d+ done \([a-z0-9._-]+ \d[^ )]*\)", again), again[-2000:]
    quiet_argv = [*NEURONCTL, "-q", *argv[len(NEURONCTL):]]
    for silent in ([*argv, "--json"], quiet_argv):
        quiet = run_in_pty(silent, 100, env_without_columns())
        assert "files: " not in quiet and "\x1b[?25l" not in quiet, quiet[-2000:]
    run = subprocess.run(argv, capture_output=True, text=True, env=env_without_columns(), timeout=120,
                         check=False)
    assert run.returncode == 0, run.stderr
    assert "files: " not in run.stdout + run.stderr and "\x1b" not in run.stderr
