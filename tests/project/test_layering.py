"""The layering contracts in pyproject.toml ([tool.importlinter], run by `.ci/typecheck`, which
`.ci/run` runs) hold for the real tree, and a deliberate violation breaks the contract it
violates, by name: the contracts are not vacuous. There are five: the layers (__main__ > cli >
ops > resolvers | probes | backend > the core, exhaustive over neuronctl's children), the release
model's layers (its types at the bottom), the doctor never imports install, click and rich only
under cli, and no two sibling packages importing each other (acyclic_siblings)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.ci_mirror import build_mirror

from neuronctl.tomlfile import loads_toml

REPO = Path(__file__).resolve().parents[2]



def mirror(tmp_path: Path, extra: dict[str, str] | None = None) -> Path:
    """The package as installed (one `neuronctl` namespace, the parts mapped in), built by
    `.ci/mirror.py` as `.ci/typecheck` builds it. `extra` (path under neuronctl/ -> source) adds
    a module, or appends to a copy of an existing one; the repository itself is never touched."""
    root = build_mirror(tmp_path / "mirror")
    package = root / "neuronctl"
    for relative, text in (extra or {}).items():
        directory = package
        for name in Path(relative).parent.parts:
            directory = directory / name
            if directory.is_symlink():  # a real directory of links, so the new module sits beside
                target = directory.resolve()  # them (and the one below it in the repository does not)
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


LAYERS = "the layers: cli > ops > resolvers | probes | backend > the core"
DOCTOR = "the doctor never imports install (install runs the doctor, through its entry point)"
CLICK_RICH = "click and rich only under cli"
RELEASE = "the release model imports downward: its types (model) import nothing else of it"
ACYCLIC = "no cycle between sibling packages"


def contracts() -> list[dict[str, Any]]:
    config = loads_toml((REPO / "pyproject.toml").read_text(), "pyproject.toml")["tool"]["importlinter"]
    return config["contracts"]


def test_the_real_tree_keeps_every_contract(tmp_path):
    run = lint_imports(mirror(tmp_path))
    verdicts = contract_lines(run.stdout)
    assert run.returncode == 0, run.stdout + run.stderr
    assert verdicts == dict.fromkeys([c["name"] for c in contracts()], "KEPT"), run.stdout
    assert set(verdicts) == {LAYERS, RELEASE, DOCTOR, CLICK_RICH, ACYCLIC}


# Each deliberate violation: where it goes, what it adds, the contract it must break, and what
# lint-imports must report in that contract's section (an import line, or an unlisted module).
VIOLATIONS = [
    ("errors.py", "\nimport click\n", CLICK_RICH, "neuronctl.errors -> click (l."),
    ("ops/layering_probe.py", "import rich.console\n", CLICK_RICH, "neuronctl.ops.layering_probe -> rich (l."),
    ("backend/layering_probe.py", "import click\n", CLICK_RICH, "neuronctl.backend.layering_probe -> click (l."),
    ("ops/layering_probe.py", "from neuronctl.cli import app\n", LAYERS,
     "neuronctl.ops.layering_probe -> neuronctl.cli.app (l."),
    ("probes/layering_probe.py", "from neuronctl.ops import reporter\n", LAYERS,
     "neuronctl.probes.layering_probe -> neuronctl.ops.reporter (l."),
    ("resolvers/layering_probe.py", "from neuronctl.probes import pyenv\n", LAYERS,
     "neuronctl.resolvers.layering_probe -> neuronctl.probes.pyenv (l."),
    ("probes/layering_probe.py", "from neuronctl.resolvers import pylock\n", LAYERS,
     "neuronctl.probes.layering_probe -> neuronctl.resolvers.pylock (l."),
    ("backend/layering_probe.py", "from neuronctl.probes import pyenv\n", LAYERS,
     "neuronctl.backend.layering_probe -> neuronctl.probes.pyenv (l."),
    ("chips.py", "\nfrom neuronctl.probes import pyenv\n", LAYERS, "neuronctl.chips -> neuronctl.probes.pyenv (l."),
    # A new core module not added to the core layer (here one that imports nothing).
    ("layering_probe.py", '"""A core module the contract does not list."""\n', LAYERS,
     "not listed as layers:\n\n- neuronctl.layering_probe\n"),
    ("ops/doctor/layering_probe.py", "from neuronctl.ops.install import run\n", DOCTOR,
     "neuronctl.ops.doctor.layering_probe -> neuronctl.ops.install.run (l."),
    # The release model's types importing back (a cycle), and a module of it in no layer.
    ("release/model.py", "\nfrom neuronctl.release import manifest\n", RELEASE,
     "neuronctl.release.model -> neuronctl.release.manifest (l."),
    ("release/layering_probe.py", '"""A release module the contract does not list."""\n', RELEASE,
     "not listed as layers:\n\n- neuronctl.release.layering_probe\n"),
    # Two sibling packages importing each other (ops.lock and ops.cost), each through one module.
    ("ops/lock/layering_probe.py", "from neuronctl.ops import cost\n", ACYCLIC,
     "No cycles are allowed in neuronctl.ops."),
    ("ops/cost.py", "\nfrom neuronctl.ops.lock import layering_probe\n", ACYCLIC,
     "No cycles are allowed in neuronctl.ops."),
]


def broken_sections(output: str, names: list[str]) -> dict[str, str]:
    """contract name -> the text lint-imports reports under it, from its list of broken ones."""
    report = output.split("Broken contracts", 1)[-1]
    starts = sorted((report.index(f"\n{name}\n"), name) for name in names if f"\n{name}\n" in report)
    ends = [start for start, _ in starts[1:]] + [len(report)]
    return {name: report[start:end] for (start, name), end in zip(starts, ends, strict=True)}


def test_a_deliberate_violation_breaks_the_contract_it_violates(tmp_path):
    """One run over all the violations (each lint-imports run builds the graph again)."""
    extra: dict[str, str] = {}
    for module, source, _, _ in VIOLATIONS:
        extra[module] = extra.get(module, "") + source
    run = lint_imports(mirror(tmp_path, extra))
    assert run.returncode != 0, run.stdout
    verdicts = contract_lines(run.stdout)
    assert verdicts == dict.fromkeys([LAYERS, RELEASE, DOCTOR, CLICK_RICH, ACYCLIC], "BROKEN"), run.stdout
    sections = broken_sections(run.stdout, list(verdicts))
    for _, _, contract, reported in VIOLATIONS:
        assert reported in sections[contract], (contract, reported, run.stdout)


def test_the_mirror_leaves_the_repository_alone(tmp_path):
    """A violation two folders down a linked part (ops/doctor/) goes into the mirror's copy."""
    mirror(tmp_path, {"ops/doctor/layering_probe.py": "from neuronctl.ops.install import run\n"})
    assert not (REPO / "neuronctl" / "ops" / "doctor" / "layering_probe.py").exists()
    assert (tmp_path / "mirror" / "neuronctl" / "ops" / "doctor" / "layering_probe.py").is_file()


def test_the_core_layer_is_the_core():
    """The core layer, the one list of the core, names each neuronctl/*.py module and each package
    in neuronctl/ but ops and cli (neuronctl.data: the bundled files and their reader), and
    nothing else. lint-imports enforces it too (the contract is exhaustive, and a listed module
    that is gone is an error); this says which module, without building the graph.
    neuronctl/__init__ is the container; __main__ is a layer of its own, above cli."""
    layers = next(c for c in contracts() if c["name"] == LAYERS)
    assert layers["containers"] == ["neuronctl"] and layers["exhaustive"] is True
    assert "exhaustive_ignores" not in layers
    assert layers["layers"][:4] == ["__main__", "cli", "ops", "resolvers | probes | backend"]
    assert len(layers["layers"]) == 5 and "|" not in layers["layers"][4]
    core_layer = {f"neuronctl.{name.strip()}" for name in layers["layers"][4].split(":")}
    core = {f"neuronctl.{path.stem}" for path in (REPO / "neuronctl").glob("*.py")
            if path.stem not in ("__init__", "__main__")}
    core |= {f"neuronctl.{path.parent.name}" for path in (REPO / "neuronctl").glob("*/__init__.py")
             if path.parent.name not in ("ops", "cli")}
    assert core_layer == core, (sorted(core - core_layer), sorted(core_layer - core))


def test_no_contract_ignores_an_import():
    """An ignore that matches nothing hides a rule that no longer needs bending (the stale
    backend -> resolvers.pylock one did); the contracts hold with none."""
    for contract in contracts():
        assert "ignore_imports" not in contract, contract["name"]
        assert "unmatched_ignore_imports_alerting" not in contract, contract["name"]
