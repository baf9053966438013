"""What `neuronctl install` shows people: progress bars that fit 80 columns, colour only on a
terminal, the beta notice once."""

from __future__ import annotations

import io
import re
import sys
import time

import click
import pytest
from rich.console import Console

import neuronctl.ops.install.downloads as install_downloads
from neuronctl.backend.plan import Change, Plan, Wanted
from neuronctl.cli.progress import CliReporter
from neuronctl.ops.reporter import CollectingReporter

LONG = "torch_neuronx-2.14.3.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _wanted(name: str, version: str, filename: str) -> Wanted:
    return Wanted(name, version, filename, f"http://127.0.0.1:1/{filename}", "0" * 64, 50 << 20)


def test_progress_bars_are_labelled_by_name_and_version_and_fit_80_columns(monkeypatch, tmp_path):
    def slow_download(fetcher, url, filename, cache_root, *, sha256, size, progress, stop):
        for done in range(0, size, size // 8):
            progress(done, size)
            time.sleep(0.06)
        path = tmp_path / filename
        path.write_bytes(b"x")
        return path, True

    monkeypatch.setattr(install_downloads, "download_verified", slow_download)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    # rich draws no live bars on TERM=dumb (or unknown): this screen is a terminal that draws,
    # whatever TERM the tests happen to run under.
    monkeypatch.setenv("TERM", "xterm-256color")
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=80, color_system=None)
    wanted = [_wanted("torch-neuronx", "2.14.3.0", LONG),
              _wanted("[bold]nki", "0.7.0", "nki-0.7.0-py3-none-any.whl")]
    with CliReporter(lambda: console) as reporter:  # bars: stderr is a terminal here
        files = install_downloads.download_all(wanted, object(), tmp_path, reporter)
    assert set(files) == {"torch-neuronx", "[bold]nki"}
    frames = [ANSI.sub("", line) for line in re.split(r"[\r\n]|\x1b\[2K", screen.getvalue())]
    drawn = [line for line in frames if "torch-neuronx" in line]
    assert drawn, screen.getvalue()
    assert all("torch-neuronx 2.14.3.0" in line and LONG not in line for line in drawn)
    # Size and speed ("?" until a rate is known) stay on the line.
    assert all(len(line) <= 80 and "/52.4 MB" in line and line.rstrip().endswith(("/s", "?"))
               for line in drawn), drawn
    assert any(line.rstrip().endswith("MB/s") for line in drawn)
    assert any("[bold]nki 0.7.0" in line for line in frames)  # data, not markup


def test_without_a_terminal_each_verified_file_is_one_line(monkeypatch, tmp_path, capsys):
    def quick(fetcher, url, filename, cache_root, *, sha256, size, progress, stop):
        (tmp_path / filename).write_bytes(b"abc")
        return tmp_path / filename, True

    monkeypatch.setattr(install_downloads, "download_verified", quick)
    wanted = [_wanted("torch-neuronx", "2.14.3.0", LONG), _wanted("nki", "0.7.0", "nki-0.7.0-py3-none-any.whl")]
    with CliReporter(lambda: None) as reporter:  # stderr is no terminal under pytest: no bars
        install_downloads.download_all(wanted, object(), tmp_path, reporter)
    lines = capsys.readouterr().err.splitlines()
    assert sorted(lines) == sorted([f"verified {LONG} (3 bytes, sha256 ok)",
                                    "verified nki-0.7.0-py3-none-any.whl (3 bytes, sha256 ok)"])


def test_downloads_report_each_file_to_any_reporter(monkeypatch, tmp_path):
    """The operation only reports: a test's collecting reporter sees each verified file, keyed
    by its file name, and nothing is printed."""
    def quick(fetcher, url, filename, cache_root, *, sha256, size, progress, stop):
        progress(size, size)
        (tmp_path / filename).write_bytes(b"abcd")
        return tmp_path / filename, True

    monkeypatch.setattr(install_downloads, "download_verified", quick)
    reporter = CollectingReporter()
    files = install_downloads.download_all([_wanted("nki", "0.7.0", "nki-0.7.0-py3-none-any.whl")],
                                           object(), tmp_path, reporter)
    assert files == {"nki": tmp_path / "nki-0.7.0-py3-none-any.whl"}
    assert reporter.finished_tasks == [("nki-0.7.0-py3-none-any.whl",
                                        "verified nki-0.7.0-py3-none-any.whl (4 bytes, sha256 ok)")]


def _plan() -> Plan:
    keep = Wanted("torch", "2.14.0", "t.whl", "http://127.0.0.1:1/t.whl", "0" * 64, 1)
    return Plan((Change("upgrade", "torch", "2.9.0", "2.14.0", keep),
                 Change("remove", "torch-xla", "2.9.0", None, None, "legacy XLA stack")))


@pytest.mark.parametrize("color", [True, False])
def test_removals_in_the_plan_are_red_only_with_colour(color, capsys):
    from neuronctl.cli.install_report import plan_lines

    for line in plan_lines(_plan(), verbose=0, color=color):
        click.echo(line, color=True)
    out = capsys.readouterr().out
    removal = next(line for line in out.splitlines() if "torch-xla" in line)
    upgrade = next(line for line in out.splitlines() if "torch " in line)
    assert ("\x1b[31m" in removal) is color and "\x1b[" not in upgrade


def test_a_piped_or_no_color_install_has_no_colour(cli, monkeypatch):
    from neuronctl.cli.install_report import wants_color

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert wants_color(True) is True and wants_color(False) is False
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert wants_color(True) is False


def test_a_beta_release_is_noted_once_on_stderr(cli, tmp_path):
    from wheels import find_python

    # The venv's base by its path: the autouse isolation moves HOME, so "~/.pyenv" would not
    # find it where neither PYENV_ROOT nor a python3.12 on PATH says where Pythons are.
    base = ("--venv-python", find_python("3.12"))
    r = cli("install", "--release", "2.33.0", "--venv", str(tmp_path / "v"), *base, "--dry-run",
            "--offline")
    notes = [line for line in r.err.splitlines() if "beta" in line]
    assert notes == ["note: Neuron 2.33.0 is a beta release (choose another with --release; "
                     "`neuronctl releases` lists them)"], r.err
    for quiet in (("--json",), ()):
        args = ("-q",) if not quiet else ()
        r = cli(*args, "install", "--release", "2.33.0", "--venv", str(tmp_path / "v"), *base,
                "--dry-run", "--offline", *quiet)
        assert "beta" not in r.err, r.err
