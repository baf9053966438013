"""`neuronctl migrate`: XLA-era code, settings and pins in a repository, what each becomes on
TorchNeuron, the mechanical half rewritten (--fix) or shown (--diff)."""

from __future__ import annotations

from pathlib import Path

import click

from neuronctl.cli.app import get_app
from neuronctl.cli.options import json_option
from neuronctl.errors import EXIT_FAILED, EXIT_OK, InputError

FORMATS = ("text", "json", "github", "sarif")


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--fix", is_flag=True, help="Rewrite the mechanical findings in place (libcst: "
              "comments and formatting kept); the rest stay findings.")
@click.option("--diff", is_flag=True, help="Print the unified diff --fix would make; write nothing.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Output format: text (by file), json, github (annotations), sarif (2.1.0).")
@json_option
@click.option("--max-bytes", type=click.IntRange(1, 1 << 30), default=None, metavar="N",
              help="Skip (with a note) files larger than N bytes (default 2 MiB).")
def migrate(paths: tuple[Path, ...], fix: bool, diff: bool, fmt: str | None,
            max_bytes: int | None) -> int:
    """Find XLA-era code, settings and pins (PATHs, default: here) and say what each becomes on
    TorchNeuron, with AWS's page; --fix rewrites what is mechanical.

    Scans Python, notebooks, requirements/constraints, pyproject.toml, setup.cfg, setup.py,
    Dockerfiles, shell scripts and YAML; never imports or runs them. Hidden and .gitignore'd
    folders are skipped unless named. Exit 0: no findings; 1: findings (after --fix: findings
    left); 2: bad input.
    """
    from neuronctl.ops.migrate import MigrateRequest, native_versions
    from neuronctl.ops.migrate import migrate as run_migrate
    from neuronctl.ops.migrate.run import MAX_BYTES

    app = get_app()
    fmt = app.printer.format_of(fmt)
    if fix and diff:
        raise InputError("--fix and --diff: give one (--diff shows what --fix would write)")
    request = MigrateRequest(paths, native_versions(app.manifest()),
                             "fix" if fix else "diff" if diff else "scan", max_bytes or MAX_BYTES)
    outcome = run_migrate(request)
    app.printer.emit(outcome, fmt)
    return EXIT_FAILED if outcome.findings else EXIT_OK
