"""docs/checks.md, generated from the doctor's check registry (each check's `@check(...)` record
beside its function, ops/doctor/registry.py; listed in report order by ops/doctor/checks.py).

What each check reads and which fixes it can suggest are found in its code, not listed by hand:
the check function and every doctor function it calls (followed through the names each module
binds) are parsed, and the Facts properties they read (`f.hardware`), the `probes` modules they import and
the fix helpers they call (`install_fix(f)`, `neuronctl_command(f, "lock", ...)`, a fix string
handed to `CheckOutcome`) are collected. A check added to the registry is documented on the next
`python -m neuronctl.cli.docs_gen` with no edit here.
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Callable, Iterable
from functools import cache
from types import FunctionType, ModuleType
from typing import Any

from msgspec import Struct, field

DOCTOR = "neuronctl.ops.doctor"
# Helpers in the doctor's modules that only format text: followed no further, never a fix.
_PLAIN = frozenset({"shell_join", "public", "listed", "chip_known", "fix_plan", "neuronctl_program",
                    "_minor", "_new_venv_python", "_chip_runs_native"})
_OUTCOME_FIX_ARG, _OUTCOME_SEVERITY_ARG = 2, 4
# What a check looks at, in words, for the ids that have more to say than their title and
# docstring (tests/project/test_docs_generated.py fails on an id here that the registry no longer has).
ABOUT: dict[str, str] = {
    "python.version": "the target Python fits the release (native TorchNeuron: 3.12-3.14, Linux x86_64)",
    "packages.torch-neuronx": "installed? native, legacy XLA or a PyPI placeholder? the version the "
                              "release pins? fits the chip?",
    "packages.legacy-xla": "legacy stack signals: version line, Requires-Dist, `xla_impl/` files, "
                           "torch-xla / libneuronxla / transformers-neuronx / torch-neuron, "
                           "`PJRT_DEVICE=NEURON`; disagreeing signals warn",
    "packages.placeholders": "PyPI \"WRONG PACKAGE\" placeholders picked by a merged-index install",
    "packages.coherence": "torch vs torch-neuronx line, neuronx-cc / nki / libneuronxla vs the release, "
                          "nki beside nrtpy, CUDA torch on a Neuron host",
    "hardware.chip": "chip generation from PCI ids, sysfs, DMI and IMDSv2, with evidence; what it "
                     "supports (native, FP8/MXFP8)",
    "hardware.driver": "driver loaded, its version vs the release, package upgraded without reload; a "
                       "neuron module built for the running kernel (a kernel upgrade without a DKMS "
                       "rebuild fails, with the `dkms` command)",
    "runtime.compat": "runtime library vs the release; runtime newer than the driver (a known failure)",
    "device.probe": "in the target interpreter, with a timeout: import torch, backend registered, "
                    "device count, allocate, an op checked against CPU, autograd, `torch.compile` "
                    "(level 3)",
    "packages.system": "aws-neuron* system packages: mixed generations, an old libnrt left behind, two "
                       "`libnrt.so` on the loader path, a release other than the Python stack's",
    "device.access": "`/dev/neuron*` readable and writable by this user; a container without the "
                     "devices (the `--device` flags or device-plugin resource it needs)",
    "device.holders": "other processes holding `/dev/neuron*` (zombies and orphans called out)",
    "model.smoke": "level 3, with config `model`: your model on the device against CPU (as "
                   "`neuronctl smoke` runs it)",
    "lock.drift": "with `--lock`: installed versions differ from a `pylock.toml` (fail); installed "
                  "packages it does not list, with their sizes (warn; pip/setuptools/wheel excepted)",
}


class Found(Struct):
    """What one check's code reads and suggests."""

    reads: set[str] = field(default_factory=set)
    fixes: set[str] = field(default_factory=set)
    severities: set[str] = field(default_factory=set)


def _first_sentence(doc: str | None) -> str:
    if not doc:
        return ""
    text = " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())
    end = text.find(". ")
    return text if end < 0 else text[:end + 1]


@cache
def _tree(module: ModuleType) -> ast.Module:
    return ast.parse(inspect.getsource(module))


def _function_node(fn: FunctionType) -> ast.FunctionDef | None:
    module = sys.modules.get(fn.__module__)
    if module is None:
        return None
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.FunctionDef) and node.name == fn.__name__:
            return node
    return None


def _is_fix_helper(name: str) -> bool:
    return name.endswith("_fix") or name in ("apt_install", "package_install")


def _fix_text(name: str, target: Any, call: ast.Call) -> str | None:
    if name == "neuronctl_command":
        words = []
        for arg in call.args[1:3]:  # the subcommand's words, up to its first option
            if not isinstance(arg, ast.Constant) or not isinstance(arg.value, str) \
                    or arg.value.startswith("-"):
                break
            words.append(arg.value)
        return f"`neuronctl {' '.join(words)} ...`" if words else None
    if _is_fix_helper(name):
        about = _first_sentence(getattr(target, "__doc__", None))
        return f"`{name}`" + (f": {about}" if about else "")
    return None


def _string(node: ast.expr | None, module: ModuleType) -> str | None:
    """A fix given as a plain string, inline or as a module constant (not an f-string)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        value = getattr(module, node.id, None)
        return value if isinstance(value, str) else None
    return None


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}" if fence == "`" else f"{fence} {text} {fence}"


def _outcome_parts(call: ast.Call) -> tuple[ast.expr | None, ast.expr | None]:
    args: list[ast.expr | None] = [*call.args, None, None, None, None, None]
    fix, severity = args[_OUTCOME_FIX_ARG], args[_OUTCOME_SEVERITY_ARG]
    for kw in call.keywords:
        if kw.arg == "fix":
            fix = kw.value
        elif kw.arg == "severity":
            severity = kw.value
    return fix, severity


def _local_imports(node: ast.FunctionDef) -> dict[str, str]:
    """Names a function imports inside its body -> their module."""
    return {alias.asname or alias.name: sub.module or ""
            for sub in ast.walk(node) if isinstance(sub, ast.ImportFrom)
            for alias in sub.names}


def _scan(fn: FunctionType, facts: frozenset[str], found: Found, seen: set[str]) -> None:
    key = f"{fn.__module__}.{fn.__qualname__}"
    node = _function_node(fn)
    if key in seen or node is None:
        return
    seen.add(key)
    module = sys.modules[fn.__module__]
    local = _local_imports(node)
    for where in local.values():
        if where.startswith("neuronctl.probes."):
            found.reads.add(f"`{where.removeprefix('neuronctl.')}` (probe)")
    # A fact is read on the Facts the function is given: `hw.system_packages` (the hardware
    # report's field) is not the fact of that name.
    given = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)
             if isinstance(a.annotation, ast.Name) and a.annotation.id == "Facts"}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) \
                and sub.value.id in given and sub.attr in facts:
            found.reads.add(f"`{sub.attr}`")
        if not isinstance(sub, ast.Call) or not isinstance(sub.func, ast.Name):
            continue
        name = sub.func.id
        if name == "CheckOutcome":
            fix, severity = _outcome_parts(sub)
            text = _string(fix, module)
            if text:
                found.fixes.add(_code(text))
            level = _string(severity, module)
            if level:
                found.severities.add(level)
            continue
        target = getattr(module, name, None)
        origin = getattr(target, "__module__", None) or ""
        if callable(target) and origin.startswith("neuronctl.probes."):
            found.reads.add(f"`{origin.removeprefix('neuronctl.')}` (probe)")
        text = _fix_text(name, target, sub)
        if text:
            found.fixes.add(text)
        if isinstance(target, FunctionType) and target.__module__.startswith(DOCTOR) \
                and name not in _PLAIN:
            _scan(target, facts, found, seen)


def _facts_properties() -> dict[str, str]:
    from neuronctl.ops.doctor.facts import Facts

    return {name: _first_sentence(value.__doc__) for name, value in vars(Facts).items()
            if isinstance(value, property)}


def analyse(run: Callable[..., Any]) -> Found:
    found = Found()
    if isinstance(run, FunctionType):
        _scan(run, frozenset(_facts_properties()), found, set())
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _bullets(items: Iterable[str]) -> list[str]:
    return [f"  - {_cell(item)}" for item in sorted(items)] or ["  - none"]


def checks_page() -> str:
    from neuronctl.ops.doctor import checks, levels

    specs = sorted(checks.CHECKS, key=lambda s: s.id)
    lines = ["# Doctor checks", "",
             "<!-- generated by `python -m neuronctl.cli.docs_gen`; do not edit by hand -->", "",
             "Every check `neuronctl doctor` runs, from its registry (the `@check(...)` record "
             "above each check function, collected in `neuronctl/ops/doctor/checks.py`). "
             "`--only` and `--skip` take an id or its group (the part before the dot). What a check "
             "reads and the fixes it can suggest are found in its code; the fix shown in a report is "
             "the exact command for that machine. See [doctor.md](doctor.md) for how to run it.", "",
             "## Levels", "", "| level | runs | budget |", "| --- | --- | --- |"]
    for number, level in sorted(levels.LEVELS.items()):
        default = " (default)" if number == levels.DEFAULT_LEVEL else ""
        lines.append(f"| {number}{default} | {_cell(level.what)} | {_cell(level.budget_text())} |")
    has_severity = any(hasattr(s, "severity") for s in specs)
    head = "| id | title | level |" + (" severity |" if has_severity else "")
    lines += ["", "## Checks", "", head, "| --- | --- | --- |" + (" --- |" if has_severity else "")]
    for spec in specs:
        row = f"| `{spec.id}` | {_cell(spec.title)} | {spec.level} |"
        lines.append(row + (f" {getattr(spec, 'severity', '')} |" if has_severity else ""))
    if has_severity:
        lines += ["", "Severity is what a warning or failure asks of a scheduler: `drain` the node, "
                      "`fix` the stack (the fix command says how), `info` nothing to act on; a pass "
                      "or skip is always `info`. `doctor --slurm-drain` drains for `drain` by default "
                      "(`drain_on` in your own config)."]
    facts = _facts_properties()
    for spec in specs:
        found = analyse(spec.run)
        about = ABOUT.get(spec.id) or _first_sentence(getattr(spec.run, "__doc__", None))
        lines += ["", f"### `{spec.id}`", "", _cell(spec.title) + (f": {about}" if about else ""), "",
                  f"- level: {spec.level}"]
        if spec.id in levels.MULTI_NODE_CHECKS:
            lines.append("- multi-node: runs at every level in a Slurm step over more than one "
                         "node, as `fleet doctor` runs it")
        if has_severity:
            extra = sorted(found.severities - {getattr(spec, "severity", "")})
            also = f" (some outcomes: {', '.join(extra)})" if extra else ""
            lines.append(f"- severity: {getattr(spec, 'severity', '')}{also}")
        gathers = sorted(getattr(spec, "gathers", ()))
        lines.append("- gathers: " + (", ".join(f"`{g}`" for g in gathers) or "the interpreter only"))
        reads = {r + (f": {facts[r.strip('`')]}" if facts.get(r.strip("`")) else "") for r in found.reads}
        lines += ["- reads:", *_bullets(reads), "- fixes it can suggest:", *_bullets(found.fixes)]
    return "\n".join(lines) + "\n"


__all__ = ["Found", "analyse", "checks_page"]
