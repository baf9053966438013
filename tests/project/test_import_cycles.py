"""No import cycle in the neuronctl namespace (issue 36): no two modules import each other,
directly or through others, counting every import statement, at module level, inside a function
and under `if TYPE_CHECKING:`. A cycle hidden in a function or a type-only import still says the
two modules are one: each must be understood, and changed, with the other.

The graph is grimp's (import-linter's library) over the package as it is installed, the mirror
that `.ci/mirror.py` builds (resolvers/, probes/ and backend/ mapped in as neuronctl.resolvers and
so on), so grimp sees what mypy and lint-imports see. The scripts in probes/scripts/ run inside
the target interpreter, by path, and are no part of the graph."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import deque
from pathlib import Path

from support.ci_mirror import build_mirror

REPO = Path(__file__).resolve().parents[2]
OUTSIDE = "neuronctl.probes.scripts"

# Run in a child whose path holds the mirror first (this process has neuronctl imported from the
# editable install, which grimp would find instead). Every import counts: grimp reads the whole
# module's syntax tree, functions included, and keeps type-checking imports unless told not to.
# No cache: grimp would otherwise write one into the working directory.
GRAPH = """
import json, grimp
graph = grimp.build_graph("neuronctl", include_external_packages=False,
                          exclude_type_checking_imports=False, cache_dir=None)
edges = {}
for module in sorted(graph.modules):
    for imported in sorted(graph.find_modules_directly_imported_by(module)):
        details = graph.get_import_details(importer=module, imported=imported)
        edges.setdefault(module, {})[imported] = min((d["line_number"] for d in details),
                                                      default=0)
    edges.setdefault(module, {})
print(json.dumps(edges))
"""



def import_graph(root: Path) -> dict[str, dict[str, int]]:
    """importer -> {imported: the first line importing it}, over the neuronctl package at `root`
    (the probe scripts left out)."""
    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run([sys.executable, "-c", GRAPH], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    edges: dict[str, dict[str, int]] = json.loads(done.stdout)

    def inside(module: str) -> bool:
        return module != OUTSIDE and not module.startswith(f"{OUTSIDE}.")

    return {m: {t: line for t, line in imported.items() if inside(t)}
            for m, imported in edges.items() if inside(m)}


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan's algorithm,
    iterative: the namespace's import chains are deeper than a test should recurse)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            nxt = next((s for s in successors if s in graph), None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def cycle_chain(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    """The shortest cycle through the component's first module, as `a -> b (l.N) -> ... -> a`
    (each line number is where the importer imports the next)."""
    members = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(graph[node]):
            if nxt not in members:
                continue
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                path.reverse()
                hops = [f"{b} (l.{graph[a][b]})" for a, b in zip(path, [*path[1:], start],
                                                                  strict=True)]
                return " -> ".join([start, *hops])
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"{component} is no cycle")


def cycles_report(graph: dict[str, dict[str, int]]) -> list[str]:
    """One line for each cycle: the modules it joins, and a chain through them."""
    return [f"{', '.join(c)}: {cycle_chain(graph, c)}" for c in strongly_connected(graph)]


def test_no_import_cycle_in_the_namespace(tmp_path):
    graph = import_graph(build_mirror(tmp_path / "mirror"))
    assert "neuronctl.resolvers.pylock" in graph and "neuronctl.backend.engine" in graph
    assert "neuronctl.release.model" in graph and not any(m.startswith(OUTSIDE) for m in graph)
    cycles = cycles_report(graph)
    assert not cycles, "import cycles (every import counts, in functions and under " \
                       "TYPE_CHECKING too):\n" + "\n".join(cycles)


def test_a_cycle_through_a_function_and_a_type_only_import_is_found(tmp_path):
    """Not vacuous: two modules that import each other only inside a function and under
    TYPE_CHECKING, added to a copy of the tree, are reported as one cycle, with its lines."""
    root = build_mirror(tmp_path / "mirror")
    (root / "neuronctl" / "cycle_probe_a.py").write_text(
        '"""Imports b only when called."""\n\n\ndef late() -> None:\n'
        "    from neuronctl import cycle_probe_b  # noqa: F401\n")
    (root / "neuronctl" / "cycle_probe_b.py").write_text(
        '"""Imports a only for the type checker."""\nfrom typing import TYPE_CHECKING\n\n'
        "if TYPE_CHECKING:\n    from neuronctl.cycle_probe_a import late\n")
    found = [line for line in cycles_report(import_graph(root)) if "cycle_probe" in line]
    assert found == ["neuronctl.cycle_probe_a, neuronctl.cycle_probe_b: neuronctl.cycle_probe_a -> neuronctl.cycle_probe_b (l.5) -> "
                     "neuronctl.cycle_probe_a (l.5)"], found
    assert not (REPO / "neuronctl" / "cycle_probe_a.py").exists()


def test_the_cycle_finder_on_a_known_graph():
    """Tarjan's components and the chain shown, on a small graph with a three-module cycle, a
    two-module one, a self-import and a chain with no cycle."""
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3, "d": 4}, "d": {},
             "e": {"f": 5}, "f": {"e": 6, "f": 7}, "g": {"a": 8}}
    assert strongly_connected(graph) == [["a", "b", "c"], ["e", "f"]]
    assert cycle_chain(graph, ["a", "b", "c"]) == "a -> b (l.1) -> c (l.2) -> a (l.3)"
    assert cycle_chain(graph, ["e", "f"]) == "e -> f (l.5) -> e (l.6)"
