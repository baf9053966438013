"""--fix and --diff: the mechanical rewrites, with libcst, at the places the scan marked fixable.

libcst keeps every comment and all formatting; only the nodes a rule names change. This module
is imported only by --fix and --diff (a plain scan never loads libcst: tests/project/test_import_cost.py).
Each rewrite is one AWS states (rules.py): xm.xla_device() -> torch.device('neuron'),
.to('cuda') -> .to('neuron'), torch.autocast's device_type and init_process_group's backend ->
"neuron", torch.compile's "openxla" backend -> "neuron", neuronxcc.nki imports -> nki.
torch_xla imports the rewrites leave unused are removed (libcst's scope analysis decides
"unused"); `import torch` is added where torch.device needs it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import MetadataWrapper, PositionProvider

from neuronctl.ops.migrate.python_scan import Hit

if TYPE_CHECKING:
    from neuronctl.ops.migrate.read import FileScan

_NEURON_DEVICE = "torch.device('neuron')"


def _neuron_string(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """The string literal `node` with 'neuron' for its text, in its own quotes; None if `node`
    is not a plain string literal (an f-string, a concatenation: left as a finding)."""
    if not isinstance(node, cst.SimpleString):
        return None
    prefix = node.prefix
    quote = node.quote
    return node.with_changes(value=f"{prefix}{quote}neuron{quote}")


def _swap_arg(call: cst.Call, index: int, keyword: str) -> cst.Call:
    """`call` with its `keyword` argument (or positional `index`) turned into 'neuron'."""
    args = list(call.args)
    position = next((i for i, a in enumerate(args) if a.keyword and a.keyword.value == keyword), None)
    if position is None:
        positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
        position = positional[index] if len(positional) > index else None
    if position is None:
        return call
    new_value = _neuron_string(args[position].value)
    if new_value is None:
        return call
    args[position] = args[position].with_changes(value=new_value)
    return call.with_changes(args=args)


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _nki_name(name: str) -> str | None:
    """neuronxcc.nki[.x] -> nki[.x]; None for anything else."""
    if name == "neuronxcc.nki" or name.startswith("neuronxcc.nki."):
        return name.removeprefix("neuronxcc.")
    return None


class _Rewrite(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, context: CodemodContext, wanted: dict[tuple[int, int], set[str]]) -> None:
        super().__init__()
        self.context = context
        self.wanted = wanted

    def _rules(self, node: cst.CSTNode) -> set[str]:
        start = self.get_metadata(PositionProvider, node).start
        return self.wanted.get((start.line, start.column + 1), set())

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        rules = self._rules(original_node)
        if "NRN102" in rules:
            return cst.parse_expression(_NEURON_DEVICE)
        if "NRN401" in rules:
            return _swap_arg(updated_node, 0, "device")
        if "NRN405" in rules:
            return _swap_arg(updated_node, 0, "device_type")
        if "NRN109" in rules:
            return _swap_arg(updated_node, 0, "backend")
        if "NRN407" in rules:  # keyword-only in torch.compile
            return _swap_arg(updated_node, 99, "backend")
        return updated_node

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import
                     ) -> cst.BaseSmallStatement:
        rules = self._rules(original_node)
        names = list(updated_node.names)
        for i, alias in enumerate(names):
            name = _dotted(alias.name)
            if "NRN101" in rules and name.startswith("torch_xla"):
                asname = _dotted(alias.asname.name) if alias.asname else None
                RemoveImportsVisitor.remove_unused_import(self.context, name, asname=asname)
            new = _nki_name(name) if "NRN301" in rules and alias.asname else None
            if new and alias.asname and _dotted(alias.asname.name) == new:
                names[i] = alias.with_changes(name=cst.Name(new), asname=None)  # `import nki`
            elif new:
                names[i] = alias.with_changes(name=cst.parse_expression(new))
        return updated_node.with_changes(names=names)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
                         ) -> cst.BaseSmallStatement:
        rules = self._rules(original_node)
        module = _dotted(updated_node.module) if updated_node.module else ""
        if "NRN101" in rules and module.startswith("torch_xla") and not isinstance(
                updated_node.names, cst.ImportStar):
            for alias in updated_node.names:
                asname = _dotted(alias.asname.name) if alias.asname else None
                RemoveImportsVisitor.remove_unused_import(self.context, module, _dotted(alias.name), asname)
        if "NRN301" not in rules or isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        if module == "neuronxcc":  # from neuronxcc import nki [as x] -> import nki [as x]
            return cst.Import(names=[a.with_changes(name=cst.Name("nki"))
                                     for a in updated_node.names])
        new = _nki_name(module)
        return updated_node.with_changes(module=cst.parse_expression(new)) if new else updated_node


def rewrite(text: str, hits: Iterable[Hit], needs_torch: bool) -> str:
    """`text` with the fixable `hits` rewritten (comments and formatting kept). Raises
    libcst's ParserSyntaxError where libcst cannot parse what ast did."""
    wanted: dict[tuple[int, int], set[str]] = {}
    for hit in hits:
        if hit.fix:
            wanted.setdefault((hit.line, hit.col), set()).add(hit.rule)
    if not wanted:
        return text
    module = cst.parse_module(text)
    context = CodemodContext()
    changed = MetadataWrapper(module).visit(_Rewrite(context, wanted))
    if needs_torch and any("NRN102" in rules for rules in wanted.values()):  # torch.device needs it
        AddImportsVisitor.add_needed_import(context, "torch")
        changed = AddImportsVisitor(context).transform_module(changed)
    changed = RemoveImportsVisitor(context).transform_module(changed)
    return changed.code


def _checked(text: str, hits: Iterable[Hit], needs_torch: bool, where: str) -> str:
    new = rewrite(text, hits, needs_torch)
    compile(new, where, "exec", dont_inherit=True)  # compiled, never run: a rewrite must parse
    return new


def rewrite_file(scan: FileScan, where: str) -> str | None:
    """A scanned file's text with its fixable findings rewritten: a Python file (its UTF-8 BOM
    kept), or a notebook's cells, written back as Jupyter wrote it (read.notebook_style)."""
    text = scan.text
    if text is None:
        return None
    if scan.python is not None:
        bom = "\ufeff" if text.startswith("\ufeff") else ""
        return bom + _checked(text.removeprefix(bom), scan.python.hits, scan.python.needs_torch, where)
    if not scan.cells or scan.notebook_style is None:
        return None
    doc = json.loads(text)
    for cell in scan.cells:
        new = _checked(cell.source, cell.scan.hits, cell.scan.needs_torch, f"{where} cell {cell.index + 1}")
        doc["cells"][cell.index]["source"] = new.splitlines(keepends=True) if cell.as_list else new
    sort_keys, ensure_ascii, end = scan.notebook_style
    return json.dumps(doc, indent=1, sort_keys=sort_keys, ensure_ascii=ensure_ascii) + end
