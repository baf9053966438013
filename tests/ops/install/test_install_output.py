"""What `neuronctl install` shows people: colour only on a terminal, the beta notice once (the
progress bars of a download: test_wheelhouse_output.py)."""

from __future__ import annotations

import sys

import click
import pytest

from neuronctl.backend.plan import Change, Plan
from neuronctl.locked_file import LockedFile


def _plan() -> Plan:
    keep = LockedFile("torch", "2.14.0", "t.whl", "http://127.0.0.1:1/t.whl", "0" * 64, 1)
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
    from neuronctl.cli.printer import colour_wanted  # the one rule the install's plan uses

    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert colour_wanted(sys.stdout, no_color=False, environ={}) is True
    assert colour_wanted(sys.stdout, no_color=True, environ={}) is False
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert colour_wanted(sys.stdout, no_color=False, environ={}) is False


def test_a_beta_release_is_noted_once_on_stderr(cli, tmp_path):
    from support.wheels import find_python

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
