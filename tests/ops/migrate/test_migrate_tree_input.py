"""`neuronctl migrate` on hostile trees: files that do not decode or parse, notebooks that are not
JSON, files over the size bound, link loops, links out of the tree (never followed, never
written through), ignored and hidden folders, and a tree changing under --fix."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neuronctl.errors import FaultError
from neuronctl.ops.migrate import MigrateRequest, migrate
from neuronctl.ops.migrate.write import write_back

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_migrate_tree_input.py)

XLA = "import torch_xla.core.xla_model as xm\nd = xm.xla_device()\n"


def _scan(root: Path, versions, mode="scan", **kw):
    """A scan of `root` from inside it (so paths are relative to it)."""
    here = Path.cwd()
    os.chdir(root)
    try:
        return migrate(MigrateRequest((Path("."),), versions, mode, **kw))
    finally:
        os.chdir(here)


def _rules(outcome) -> set[tuple[str, str]]:
    return {(Path(f.path).name, f.rule) for f in outcome.findings}


def test_undecodable_unparseable_and_not_json_are_findings_not_crashes(tmp_path, versions):
    (tmp_path / "latin1.py").write_bytes(b"# caf\xe9\nimport os\n")
    (tmp_path / "py2.py").write_text("import torch_xla\nprint 'hello'\n")
    (tmp_path / "nul.py").write_bytes(b"import torch_xla\x00\n")
    (tmp_path / "deep.py").write_text("cuda = " + "(" * 5000 + ")" * 5000 + "\n")
    (tmp_path / "long.py").write_text("cuda = " + " + ".join(["a"] * 100_000) + "\n")
    (tmp_path / "broken.ipynb").write_text("{\"cells\": [")
    (tmp_path / "wrong.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "source": 7}]}))
    (tmp_path / "requirements.txt").write_bytes(b"torch-xla\n\xff\xfe\n")
    outcome = _scan(tmp_path, versions)
    assert _rules(outcome) == {("latin1.py", "NRN001"), ("py2.py", "NRN002"), ("nul.py", "NRN002"),
                               ("deep.py", "NRN002"), ("long.py", "NRN002"), ("broken.ipynb", "NRN003"),
                               ("wrong.ipynb", "NRN003"), ("requirements.txt", "NRN001")}


def test_files_over_the_bound_are_skipped_with_a_note(tmp_path, versions, cli, monkeypatch):
    (tmp_path / "big.py").write_text(XLA + "#" * 5000 + "\n")
    (tmp_path / "small.py").write_text(XLA)
    outcome = _scan(tmp_path, versions, max_bytes=1000)
    assert _rules(outcome) == {("small.py", "NRN101"), ("small.py", "NRN102")}
    assert [(n.path, n.why.split(":")[0]) for n in outcome.notes] == [("big.py", "skipped")]
    monkeypatch.chdir(tmp_path)
    r = cli("migrate", "--max-bytes", "1000")
    assert re.search(r"^note: big\.py: skipped: \d+ bytes, over the 1000-byte bound \(--max-bytes\)$", r.out, re.M)


def test_link_loops_and_links_out_of_the_tree_are_not_followed(tmp_path, versions):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text(XLA)
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "real.py").write_text(XLA)
    (root / "pkg" / "loop").symlink_to(root / "pkg")          # a folder loop
    (root / "a.py").symlink_to(root / "b.py")                  # a file loop
    (root / "b.py").symlink_to(root / "a.py")
    (root / "out").symlink_to(outside)                         # a folder out of the tree
    (root / "leak.py").symlink_to(outside / "secret.py")       # a file out of the tree
    (root / "same.py").symlink_to(root / "pkg" / "real.py")    # inside: scanned where it is
    outcome = _scan(root, versions)
    assert {f.path for f in outcome.findings} == {"pkg/real.py"}
    notes = {n.path: n.why for n in outcome.notes}
    assert "leads out of the scanned tree" in notes["out"] and "leads out" in notes["leak.py"]
    assert "loop" in notes["a.py"] and "loop" in notes["b.py"]
    assert "pkg/loop" not in notes and "same.py" not in notes


def test_fix_never_writes_through_a_link_or_outside_the_tree(tmp_path, versions):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text(XLA)
    root = tmp_path / "repo"
    root.mkdir()
    (root / "leak.py").symlink_to(outside / "secret.py")
    (root / "own.py").write_text(XLA)
    outcome = _scan(root, versions, "fix")
    assert (outside / "secret.py").read_text() == XLA and (root / "leak.py").is_symlink()
    assert outcome.fixed == ("own.py",) and "xla_device" not in (root / "own.py").read_text()
    # The last guard, should a file become a link (or change) between the scan and the write:
    (root / "swapped.py").symlink_to(outside / "secret.py")
    with pytest.raises(FaultError, match="through a link or outside"):
        write_back(root, root / "swapped.py", XLA.encode(), "x = 1\n")
    (root / "moved.py").write_text("changed since\n")
    with pytest.raises(FaultError, match="changed while it was scanned"):
        write_back(root, root / "moved.py", XLA.encode(), "x = 1\n")
    assert (outside / "secret.py").read_text() == XLA and (root / "moved.py").read_text() == "changed since\n"


def test_ignored_and_hidden_folders_are_skipped_unless_named(tmp_path, versions, monkeypatch):
    monkeypatch.chdir(tmp_path.parent)
    root = tmp_path
    (root / ".gitignore").write_text("# build output\nbuild/\n/vendored\n*.gen.py\ndocs/**/old_*.py\n!keep.gen.py\n")
    for rel in ("build/x.py", "vendored/y.py", "src/vendored/kept.py", "src/a.gen.py", "keep.gen.py",
                "docs/v1/old_train.py", "docs/v1/train.py", ".venv/lib/torch_xla.py", ".github/ci.py",
                "sub/ignored_here.py", "sub/kept.py"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(XLA)
    (root / "sub" / ".gitignore").write_text("ignored_here.py\n")
    outcome = _scan(root, versions)
    assert {f.path for f in outcome.findings} == {"src/vendored/kept.py", "docs/v1/train.py", "sub/kept.py"}
    os.chdir(root)
    named = migrate(MigrateRequest((Path(".github"), Path("build/x.py")), versions))
    assert {f.path for f in named.findings} == {".github/ci.py", "build/x.py"}


def test_a_fifo_named_in_the_tree_is_not_read(tmp_path, versions):
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "ok.py").write_text(XLA)
    outcome = _scan(tmp_path, versions)
    assert {f.path for f in outcome.findings} == {"ok.py"}


def test_a_bom_a_crlf_file_and_continued_requirement_lines(tmp_path, versions):
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbfimport torch\r\nx = torch.ones(1).to('cuda')  # here\r\n")
    (tmp_path / "requirements.txt").write_text(
        "torch-neuronx==2.1.2.2.3.0 \\\n    --hash=sha256:" + "0" * 64 + "\nnumpy\n")
    outcome = _scan(tmp_path, versions, "fix")
    assert _rules(outcome) == {("requirements.txt", "NRN701")}
    assert (tmp_path / "bom.py").read_bytes() == (
        b"\xef\xbb\xbfimport torch\r\nx = torch.ones(1).to('neuron')  # here\r\n")


def test_a_notebook_not_written_as_jupyter_writes_it_is_left_for_a_hand_edit(tmp_path, versions):
    xm = "import torch_xla.core.xla_model as xm\n"
    cells = [{"cell_type": "code", "source": "import torch\n" + xm + "d = xm.xla_device()\n", "metadata": {}},
             {"cell_type": "code", "source": ["!pip list\n", xm, "d = xm.xla_device()\n"], "metadata": {}}]
    canonical = json.dumps({"cells": cells}, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    (tmp_path / "jupyter.ipynb").write_text(canonical)
    (tmp_path / "hand.ipynb").write_text(json.dumps({"cells": cells}, indent=4))
    before = (tmp_path / "hand.ipynb").read_bytes()
    outcome = _scan(tmp_path, versions, "fix")
    assert outcome.fixed == ("jupyter.ipynb",)
    assert (tmp_path / "hand.ipynb").read_bytes() == before
    left = {(f.path, f.cell, f.rule, f.fix) for f in outcome.findings if f.rule != "NRN101"}
    # the hand-formatted notebook's cells, and the cell with a shell line, stay findings
    assert left == {("hand.ipynb", 1, "NRN102", False), ("hand.ipynb", 2, "NRN102", False),
                    ("jupyter.ipynb", 2, "NRN102", False)}
    assert json.loads((tmp_path / "jupyter.ipynb").read_text())["cells"][0]["source"] == (
        "import torch\n" + xm + "d = torch.device('neuron')\n")  # the import: by hand


KINDS = ["python", "notebook", "requirements", "pyproject", "setup.cfg", "dockerfile", "shell", "yaml"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(KINDS), data=st.one_of(
    st.binary(max_size=400),
    st.text(alphabet=st.sampled_from(list("torch_xla.cuda neuronx-cc==2 XLA_ PJRT_DEVICE=\n\t#'\"[]{}():=,!%\\")),
            max_size=400).map(str.encode)))
def test_no_file_content_crashes_the_scanner(versions, kind, data):
    from neuronctl.ops.migrate.read import scan_file

    scan = scan_file(kind, "setup.py" if kind == "python" else "f", data, versions)
    for cell, hit in scan.hits:
        assert hit.line >= 1 and hit.col >= 1 and (cell is None or cell >= 1)


def test_a_file_name_with_a_newline_stays_one_line_in_the_diff(tmp_path, cli, monkeypatch):
    """A name is data: `--diff`'s headers never carry its newline, so no `::error` workflow
    command (or fake line) starts a line of the output."""
    (tmp_path / "a\n::error file=x,line=1::INJECTED.py").write_text(
        "import torch_xla.core.xla_model as xm\nd = xm.xla_device()\n")
    monkeypatch.chdir(tmp_path)
    r = cli("migrate", "--diff")
    assert "+++ b/a?::error file=x,line=1::INJECTED.py" in r.out, r.out
    assert not any(line.startswith("::") for line in (r.out + r.err).splitlines())
