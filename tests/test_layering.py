"""The layering contracts in pyproject.toml ([tool.importlinter], run by `.ci/typecheck`, which
`.ci/run` runs) hold for the real tree, and a deliberate violation breaks the contract it
violates, by name: the contracts are not vacuous."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PARTS = ("resolvers", "probes", "backend")


def mirror(tmp_path: Path, extra: dict[str, str] | None = None) -> Path:
    """The package as installed (one `neuronctl` namespace, the parts mapped in), built from
    symlinks like `.ci/typecheck`'s. `extra` (path under neuronctl/ -> source) adds a module, or
    appends to a copy of an existing one; the repository itself is never touched."""
    root = tmp_path / "mirror"
    package = root / "neuronctl"
    package.mkdir(parents=True)
    sources = {entry.name: entry for entry in (REPO / "neuronctl").iterdir()}
    sources.update({part: REPO / part for part in PARTS})
    for name, source in sources.items():
        (package / name).symlink_to(source)
    for relative, text in (extra or {}).items():
        directory = package / Path(relative).parent
        if directory.is_symlink():  # a real directory of links, so the new module sits beside them
            target = directory.resolve()
            directory.unlink()
            directory.mkdir()
            for entry in target.iterdir():
                (directory / entry.name).symlink_to(entry)
        path = package / relative
        before = path.read_text() if path.exists() else ""
        if path.is_symlink():
            path.unlink()
        path.write_text(before + text)
    return root


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    tool = Path(sys.executable).parent / "lint-imports"
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([str(tool), "--no-cache", str(REPO / "pyproject.toml")], check=False,
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)


def contract_lines(output: str) -> dict[str, str]:
    """contract name -> KEPT or BROKEN, from lint-imports' summary."""
    found = {}
    for line in output.splitlines():
        for verdict in ("KEPT", "BROKEN"):
            if line.endswith(f" {verdict}"):
                found[line[: -len(verdict) - 1]] = verdict
    return found


def test_the_real_tree_keeps_every_contract(tmp_path):
    run = lint_imports(mirror(tmp_path))
    verdicts = contract_lines(run.stdout)
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(verdicts) >= 6 and set(verdicts.values()) == {"KEPT"}


# Each deliberate violation: where it goes, what it adds, the contract it must break, and the
# import line lint-imports must name in that contract's report.
VIOLATIONS = [
    ("ops/layering_probe.py", "import click\n", "click and rich only under cli",
     "neuronctl.ops.layering_probe -> click"),
    ("ops/layering_probe.py", "from neuronctl.cli import app\n", "ops never imports the cli",
     "neuronctl.ops.layering_probe -> neuronctl.cli.app"),
    ("probes/layering_probe.py", "from neuronctl.cli import app\n",
     "resolvers and probes import only the core",
     "neuronctl.probes.layering_probe -> neuronctl.cli.app"),
    ("resolvers/layering_probe.py", "from neuronctl.probes import pyenv\n",
     "probes and resolvers never import each other",
     "neuronctl.resolvers.layering_probe -> neuronctl.probes.pyenv"),
    ("chips.py", "\nfrom neuronctl.ops import reporter\n", "the core imports no part",
     "neuronctl.chips -> neuronctl.ops.reporter"),
    ("backend/layering_probe.py", "from neuronctl.probes import pyenv\n",
     "backend imports only the core (and reads locks through resolvers' lock module)",
     "neuronctl.backend.layering_probe -> neuronctl.probes.pyenv"),
]


def broken_sections(output: str, names: list[str]) -> dict[str, str]:
    """contract name -> the text lint-imports reports under it, from its list of broken ones."""
    report = output.split("Broken contracts", 1)[-1]
    starts = sorted((report.index(f"\n{name}\n"), name) for name in names if f"\n{name}\n" in report)
    ends = [start for start, _ in starts[1:]] + [len(report)]
    return {name: report[start:end] for (start, name), end in zip(starts, ends, strict=True)}


def test_a_deliberate_violation_breaks_the_contract_it_violates(tmp_path):
    """One run over all the violations (each lint-imports run costs a second)."""
    extra: dict[str, str] = {}
    for module, source, _, _ in VIOLATIONS:
        extra[module] = extra.get(module, "") + source
    run = lint_imports(mirror(tmp_path, extra))
    assert run.returncode != 0, run.stdout
    verdicts = contract_lines(run.stdout)
    contracts = [contract for _, _, contract, _ in VIOLATIONS]
    assert {c: verdicts.get(c) for c in contracts} == dict.fromkeys(contracts, "BROKEN"), run.stdout
    sections = broken_sections(run.stdout, list(verdicts))
    for _, _, contract, line in VIOLATIONS:
        assert f"{line} (l." in sections[contract], (contract, run.stdout)
