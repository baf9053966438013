"""The layering contracts in pyproject.toml ([tool.importlinter], run by `.ci/typecheck`, which
`.ci/run` runs) hold for the real tree, and a deliberate violation breaks the contract it
violates, by name: the contracts are not vacuous."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from neuronctl.tomlfile import loads_toml

REPO = Path(__file__).resolve().parents[1]


def _ci_mirror() -> ModuleType:
    """.ci/mirror.py, the one builder of the mirror `.ci/typecheck` checks (not a package)."""
    spec = importlib.util.spec_from_file_location("ci_mirror", REPO / ".ci" / "mirror.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mirror(tmp_path: Path, extra: dict[str, str] | None = None) -> Path:
    """The package as installed (one `neuronctl` namespace, the parts mapped in), built by
    `.ci/mirror.py` as `.ci/typecheck` builds it. `extra` (path under neuronctl/ -> source) adds
    a module, or appends to a copy of an existing one; the repository itself is never touched."""
    root = _ci_mirror().build(tmp_path / "mirror")
    package = root / "neuronctl"
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
     "backend imports only the core",
     "neuronctl.backend.layering_probe -> neuronctl.probes.pyenv"),
    ("ops/doctor/layering_probe.py", "from neuronctl.ops.install import run\n",
     "the doctor never imports install (install runs the doctor, through its entry point)",
     "neuronctl.ops.doctor.layering_probe -> neuronctl.ops.install.run"),
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


def test_every_core_module_is_in_both_core_lists():
    """A core module (neuronctl/*.py, neuronctl.data) missing from a contract's list is not
    checked by it: a new core module must be added to both ("the core imports no part" and
    "click and rich only under cli"). neuronctl/__init__ and __main__ are the package's doors."""
    core = {f"neuronctl.{path.stem}" for path in (REPO / "neuronctl").glob("*.py")
            if path.stem not in ("__init__", "__main__")} | {"neuronctl.data"}
    contracts = loads_toml((REPO / "pyproject.toml").read_text(), "pyproject.toml")["tool"]["importlinter"]
    by_name = {contract["name"]: contract for contract in contracts["contracts"]}
    for name in ("the core imports no part", "click and rich only under cli"):
        missing = core - set(by_name[name]["source_modules"])
        assert not missing, (name, sorted(missing))


def test_no_contract_ignores_an_import():
    """An ignore that matches nothing hides a rule that no longer needs bending (the stale
    backend -> resolvers.pylock one did); the contracts hold with none."""
    contracts = loads_toml((REPO / "pyproject.toml").read_text(), "pyproject.toml")["tool"]["importlinter"]
    for contract in contracts["contracts"]:
        assert "ignore_imports" not in contract, contract["name"]
        assert "unmatched_ignore_imports_alerting" not in contract, contract["name"]
