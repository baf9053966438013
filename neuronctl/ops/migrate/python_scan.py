"""Python source to findings, with the standard library's `ast` (fast; never imports or runs
the code). Names are resolved through the module's imports (`xm` -> torch_xla.core.xla_model),
so `xm.mark_step()` and `torch_xla.core.xla_model.mark_step()` are one rule. --fix (fix.py,
libcst) rewrites only what this scan marked fixable, at the places it gives."""

from __future__ import annotations

import ast
import re

from msgspec import Struct, field

_XM = "torch_xla.core.xla_model"
_CALLS: dict[str, str] = {
    f"{_XM}.mark_step": "NRN103", "torch_xla.sync": "NRN103",
    f"{_XM}.optimizer_step": "NRN104", f"{_XM}.master_print": "NRN105",
    "torch_xla.distributed.parallel_loader.MpDeviceLoader": "NRN106",
    "torch_xla.distributed.parallel_loader.ParallelLoader": "NRN106",
    "torch_xla.distributed.xla_multiprocessing.spawn": "NRN107", "torch_xla.launch": "NRN107",
    "torch_neuronx.trace": "NRN201", "torch_neuronx.analyze": "NRN202",
    "torch_neuronx.DataParallel": "NRN203",
}
_IMPORTS: tuple[tuple[str, str], ...] = (
    ("torch_xla", "NRN101"), ("neuronxcc.nki", "NRN301"), ("neuronx_distributed", "NRN501"),
    ("transformers_neuronx", "NRN502"), ("optimum.neuron", "NRN503"),
)
_AUTOCAST = {"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"}
_OLD_DEVICES = ("cuda", "xla")
_ENV = re.compile(r"(PJRT_DEVICE|XLA_[A-Z0-9_]+|NEURON_CC_FLAGS)")


def env_rule(name: str) -> str | None:
    """The rule for an environment variable's name, or None."""
    if name == "PJRT_DEVICE":
        return "NRN601"
    if name in ("XLA_USE_BF16", "XLA_DOWNCAST_BF16"):
        return "NRN602"
    if name == "NEURON_CC_FLAGS":
        return "NRN604"
    return "NRN603" if name.startswith("XLA_") else None


class Hit(Struct, frozen=True):
    """A rule matched at a place in one text (a file or a notebook cell)."""

    line: int
    col: int
    rule: str
    found: str
    fix: bool = False


class PythonScan(Struct):
    """What the scan of one Python text found, and what its fix will need."""

    hits: list[Hit] = field(default_factory=list)
    needs_torch: bool = False
    """A fix writes `torch.device(...)` where `torch` is not imported as itself."""


def _import_rule(module: str) -> str | None:
    for prefix, rule_id in _IMPORTS:
        if module == prefix or module.startswith(prefix + "."):
            return rule_id
    return None


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _text(node: ast.AST) -> str:
    """The code as written (unparsed), cut to one short line."""
    text = ast.unparse(node)
    return text if len(text) <= 80 else text[:77] + "..."


def _arg(call: ast.Call, index: int, keyword: str) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    return call.args[index] if len(call.args) > index else None


class _Visitor(ast.NodeVisitor):
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.aliases: dict[str, str] = {}
        self.scan = PythonScan()
        self.consumed: dict[str, int] = {}
        """Uses of an imported name that a fix rewrites away (xm in xm.xla_device())."""
        self.uses: dict[str, int] = {}
        self.xla_imports: list[tuple[ast.stmt, str, str]] = []
        self.done_constants: set[int] = set()

    # -- where and what
    def col(self, node: ast.expr | ast.stmt) -> int:
        line = self.lines[node.lineno - 1] if 0 < node.lineno <= len(self.lines) else ""
        # ast counts UTF-8 bytes; findings count characters
        return len(line.encode("utf-8")[: node.col_offset].decode("utf-8", "ignore")) + 1

    def add(self, node: ast.expr | ast.stmt, rule_id: str, found: str, fix: bool = False) -> None:
        self.scan.hits.append(Hit(node.lineno, self.col(node), rule_id, found, fix))

    def qualified(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualified(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    # -- imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            bound = alias.asname or alias.name.partition(".")[0]
            self.aliases[bound] = alias.name if alias.asname else bound
            self._import(node, alias.name, bound, fixable=alias.asname is not None)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            return
        only_nki = module == "neuronxcc" and all(a.name == "nki" for a in node.names)
        for alias in node.names:
            bound = alias.asname or alias.name
            self.aliases[bound] = f"{module}.{alias.name}"
            if module == "neuronxcc" and alias.name == "nki":
                self._import(node, "neuronxcc.nki", bound, fixable=only_nki)
            elif module.startswith("torch.cuda") or (module == "torch" and alias.name == "cuda"):
                self.add(node, "NRN404", f"from {module} import {alias.name}")
            else:
                self._import(node, f"{module}.{alias.name}", bound, fixable=True)

    def _import(self, node: ast.stmt, module: str, bound: str, *, fixable: bool) -> None:
        rule_id = _import_rule(module)
        if rule_id == "NRN101":
            self.xla_imports.append((node, module, bound))  # fixable once its uses are rewritten
        elif rule_id is not None:
            self.add(node, rule_id, module, fix=fixable and rule_id == "NRN301")

    # -- uses
    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.uses[node.id] = self.uses.get(node.id, 0) + 1

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = self.qualified(node)
        if (name and name.startswith("neuronxcc.nki.") and isinstance(node.value, ast.Attribute)
                and self.qualified(node.value) == "neuronxcc.nki"):
            self.add(node, "NRN302", name)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if id(node) in self.done_constants or not isinstance(node.value, str):
            return
        if _ENV.fullmatch(node.value) and (rule_id := env_rule(node.value)):
            self.add(node, rule_id, node.value)

    def visit_Assign(self, node: ast.Assign) -> None:
        # device = "cuda": a device named by a variable the code then passes around
        value = _literal(node.value)
        if value is not None and value.partition(":")[0] == "cuda" and any(
                isinstance(t, ast.Name) and "device" in t.id.lower() for t in node.targets):
            self.done_constants.add(id(node.value))
            self.add(node.value, "NRN403", repr(value))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = self.qualified(node.func) or ""
        self._call(node, name)
        self._device_keywords(node)
        self.generic_visit(node)

    def _call(self, node: ast.Call, name: str) -> None:
        if name == f"{_XM}.xla_device":
            fix = not node.args and not node.keywords
            # the name the call goes through (xm in xm.xla_device(); xla_device imported by name)
            func = node.func
            base = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                else func.id if isinstance(func, ast.Name) else None
            if fix and base is not None:
                self.consumed[base] = self.consumed.get(base, 0) + 1
                self.scan.needs_torch = self.scan.needs_torch or self.aliases.get("torch") != "torch"
            else:
                fix = False
            self.add(node, "NRN102", _text(node), fix)
        elif name in _CALLS:
            self.add(node, _CALLS[name], ast.unparse(node.func) + "()")
        elif name.startswith("torch_xla.distributed."):
            self.add(node, "NRN108", name)
        elif name.startswith("torch_xla."):
            self.add(node, "NRN110", name)
        elif name.startswith("torch.cuda."):
            self.add(node, "NRN404", name)
        elif name in _AUTOCAST:
            self._string_arg(node, 0, "device_type", "NRN405", _OLD_DEVICES)
        elif name.endswith("init_process_group") and name.startswith(("torch.distributed", "dist")):
            self._process_group(node)
        elif name == "torch.compile":
            mode = _literal(_arg(node, 99, "mode"))
            if mode and mode.startswith("max-autotune"):
                self.add(node, "NRN406", f"mode={mode!r}")
            self._string_arg(node, 99, "backend", "NRN407", ("openxla", "openxla_eval"))
        elif isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda"):
            self._method(node, node.func.attr)

    def _method(self, node: ast.Call, attr: str) -> None:
        if attr == "cuda":
            self.add(node, "NRN402", ".cuda()")
            return
        target = _arg(node, 0, "device")
        value = _literal(target)
        if value == "cuda":
            self.done_constants.add(id(target))
            self.add(node, "NRN401", ".to('cuda')", fix=True)

    def _string_arg(self, node: ast.Call, index: int, keyword: str, rule_id: str,
                    old: tuple[str, ...], fix: bool = True) -> None:
        target = _arg(node, index, keyword)
        value = _literal(target)
        if value in old:
            self.done_constants.add(id(target))
            self.add(node, rule_id, f"{keyword}={value!r}", fix=fix)

    def _process_group(self, node: ast.Call) -> None:
        method = _literal(_arg(node, 99, "init_method")) or ""
        # 'xla://' rendezvous only works with torch_xla: the backend alone cannot be swapped
        self._string_arg(node, 0, "backend", "NRN109", ("xla", "nccl"), fix=not method.startswith("xla"))

    def _device_keywords(self, node: ast.Call) -> None:
        name = self.qualified(node.func) or ""
        targets = [kw.value for kw in node.keywords if kw.arg == "device"]
        if name == "torch.device" and node.args:
            targets.append(node.args[0])
        for target in targets:
            value = _literal(target)
            if id(target) in self.done_constants or value is None:
                continue
            if value.partition(":")[0] in _OLD_DEVICES:
                self.done_constants.add(id(target))
                self.add(target, "NRN403", repr(value))

    def finish(self) -> PythonScan:
        for node, module, bound in self.xla_imports:
            uses, consumed = self.uses.get(bound, 0), self.consumed.get(bound, 0)
            self.add(node, "NRN101", module, fix=uses > 0 and uses == consumed)
        self.scan.hits.sort(key=lambda h: (h.line, h.col, h.rule))
        return self.scan


def scan_tree(tree: ast.AST, text: str) -> PythonScan:
    """The findings in one parsed module (or notebook cell) whose source is `text`."""
    visitor = _Visitor(text.splitlines())
    visitor.visit(tree)
    return visitor.finish()


def setup_requirements(tree: ast.AST) -> list[tuple[int, int, str]]:
    """String constants of a setup.py that may be requirements (line, col, text): the caller
    keeps those that parse as one of the watched packages."""
    return [(n.lineno, n.col_offset + 1, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) < 200]
