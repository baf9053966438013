"""What `neuronctl download` shows people while it fills a wheelhouse: one progress bar per
file, labelled by name and version and fitting 80 columns on a terminal, one line per verified
file without one; the operation itself only reports (any reporter sees each file). Real files
from a loopback server that sends them slowly enough for the bars to be drawn."""

from __future__ import annotations

import hashlib
import io
import re
import sys
import time
from pathlib import Path

from rich.console import Console
from support.loopback import QuietHandler, serving

from neuronctl.cli.progress import CliReporter
from neuronctl.ops.index_routing import IndexSources, route_indexes
from neuronctl.ops.reporter import CollectingReporter, Reporter
from neuronctl.ops.wheelhouse import DownloadOutcome, DownloadRequest, download
from neuronctl.toml_emit import dumps

LONG = "torch_neuronx-2.14.3.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
SHORT = "nki-0.7.0-py3-none-any.whl"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
SIZE = 4 << 20
BLOBS = {LONG: b"t" * SIZE, SHORT: b"n" * SIZE}


class Slow(QuietHandler):
    """Each file in eight parts, 60 ms apart (the bars redraw meanwhile)."""

    def do_GET(self) -> None:
        data = BLOBS[self.path.rsplit("/", 1)[-1]]
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        step = len(data) // 8
        for at in range(0, len(data), step):
            self.wfile.write(data[at:at + step])
            self.wfile.flush()
            time.sleep(0.06)


def _lock(folder: Path, base: str, *names: tuple[str, str, str]) -> Path:
    packages = [{"name": name, "version": version,
                 "wheels": [{"name": filename, "url": f"{base}/{filename}", "size": SIZE,
                             "hashes": {"sha256": hashlib.sha256(BLOBS[filename]).hexdigest()}}]}
                for name, version, filename in names]
    lock = folder / "pylock.toml"
    lock.write_text(dumps({"lock-version": "1.0", "created-by": "test", "packages": packages},
                          arrays_of_tables=("packages",)))
    return lock


def _download(tmp_path: Path, reporter: Reporter, *names: tuple[str, str, str]) -> DownloadOutcome:
    with serving(Slow) as base:
        lock = _lock(tmp_path, base, *names)
        request = DownloadRequest(lock=lock, dest=tmp_path / "house",
                                  routing=lambda recorded: route_indexes(IndexSources(), recorded))
        return download(request, reporter)


def test_progress_bars_are_labelled_by_name_and_version_and_fit_80_columns(monkeypatch, tmp_path):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    # rich draws no live bars on TERM=dumb (or unknown): this screen is a terminal that draws,
    # whatever TERM the tests happen to run under.
    monkeypatch.setenv("TERM", "xterm-256color")
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=80, color_system=None)
    with CliReporter(lambda: console) as reporter:  # bars: stderr is a terminal here
        outcome = _download(tmp_path, reporter, ("torch-neuronx", "2.14.3.0", LONG),
                            ("nki", "0.7.0", SHORT))
    assert {f.status for f in outcome.files} == {"downloaded"}
    frames = [ANSI.sub("", line) for line in re.split(r"[\r\n]|\x1b\[2K", screen.getvalue())]
    # Before a file's first bytes, and between files, the live status line names it the same
    # way ("files: 0 of 2 done (torch-neuronx 2.14.3.0)"); whether a frame of it is drawn
    # depends on timing, so it is told apart from the bars, never counted as one.
    told = [line for line in frames if "files: " in line]
    assert all(re.search(r"files: [0-2] of 2 done \((torch-neuronx 2\.14\.3\.0|nki 0\.7\.0)\)",
                         line) for line in told), told
    drawn = [line for line in frames if "torch-neuronx" in line and "files: " not in line]
    assert drawn, screen.getvalue()
    assert all("torch-neuronx 2.14.3.0" in line and LONG not in line for line in drawn)
    # Size and speed ("?" until a rate is known) stay on the line.
    assert all(len(line) <= 80 and "/4.2 MB" in line and line.rstrip().endswith(("/s", "?"))
               for line in drawn), drawn
    assert any(line.rstrip().endswith("MB/s") for line in drawn)
    assert any("nki 0.7.0" in line for line in frames)


def test_without_a_terminal_each_verified_file_is_one_line(tmp_path, capsys):
    with CliReporter(lambda: None) as reporter:  # stderr is no terminal under pytest: no bars
        _download(tmp_path, reporter, ("torch-neuronx", "2.14.3.0", LONG), ("nki", "0.7.0", SHORT))
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("verified")]
    assert sorted(lines) == sorted([f"verified {LONG} ({SIZE:,} bytes, sha256 ok)",
                                    f"verified {SHORT} ({SIZE:,} bytes, sha256 ok)"])


def test_downloads_report_each_file_to_any_reporter(tmp_path):
    """The operation only reports: a test's collecting reporter sees each verified file, keyed
    by its file name, and nothing is printed."""
    reporter = CollectingReporter()
    outcome = _download(tmp_path, reporter, ("nki", "0.7.0", SHORT))
    assert [f.file.filename for f in outcome.files] == [SHORT]
    assert (tmp_path / "house" / SHORT).read_bytes() == BLOBS[SHORT]
    assert reporter.finished_tasks == [(SHORT, f"verified {SHORT} ({SIZE:,} bytes, sha256 ok)")]
