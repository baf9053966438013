"""`neuronctl migrate` on a repository of the XLA era (tests/support/migrate_fixtures.py), through the
CLI: text by file with the summary, the JSON envelope, GitHub annotations, SARIF 2.1.0 validated
against the OASIS schema (vendored: tests/data/README.md), exit codes, --diff and --fix."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import jsonschema
import pytest
from support.migrate_fixtures import DEVICE_ONLY, FILES, NKI_KERNEL, TRAIN_XLA, make_repo, notebook

SCHEMA = json.loads((Path(__file__).parents[2] / "data" / "sarif-schema-2.1.0.json").read_text())


@pytest.fixture
def repo(tmp_path, monkeypatch):
    make_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_text_groups_by_file_and_ends_with_the_summary(cli, repo):
    r = cli("migrate")
    assert r.code == 1, r.err
    lines = r.out.splitlines()
    assert re.fullmatch(r"\d+ findings in 11 files: 10 fixable \(12 files scanned, \d+ parsed\)", lines[-1])
    heads = [line for line in lines if line and not line.startswith(" ")][:-1]
    assert heads == sorted(heads) and "train_xla.py" in heads and "native.py" not in heads
    body = r.out.split("\ntrain_xla.py\n", 1)[1]
    assert "  14:14  NRN102  xm.xla_device()  [fixable]\n      becomes: torch.device('neuron')\n" in body
    assert "source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/setup/troubleshooting.html " \
           "(read 2026-12-06, modified 2026-03-03)" in body
    assert "  25:9  NRN103  xm.mark_step()  [question]" in body


def test_json_has_the_envelope_findings_and_summary(cli, repo):
    r = cli("migrate", "--json")
    doc = json.loads(r.out)
    assert r.code == 1 and doc["command"] == "migrate" and doc["status"] == "failed"
    assert doc["error"]["message"].startswith("migrate: ")
    assert doc["summary"]["findings"] == len(doc["findings"]) and doc["summary"]["files"] == 11
    first = doc["findings"][0]
    assert {"path", "line", "col", "rule", "message", "fix", "source"} <= set(first)
    nb = [f for f in doc["findings"] if f["path"] == "notebooks/explore.ipynb"]
    assert {(f["cell"], f["line"], f["rule"]) for f in nb} >= {(2, 1, "NRN702"), (2, 2, "NRN601"),
                                                               (3, 2, "NRN102"), (3, 3, "NRN103")}
    # a cell's device call is rewritten; its torch_xla import (it may serve other cells) and the
    # cell with shell lines are for a hand edit
    assert {(f["cell"], f["rule"]) for f in nb if f["fix"]} == {(3, "NRN102")}


def test_no_findings_exit_0_and_bad_input_exit_2(cli, tmp_path, monkeypatch):
    (tmp_path / "native.py").write_text(FILES["native.py"])
    monkeypatch.chdir(tmp_path)
    r = cli("migrate", "--json")
    assert r.code == 0 and json.loads(r.out)["summary"]["findings"] == 0
    r = cli("migrate", "missing-dir")
    assert r.code == 2 and r.out == "" and r.err.startswith("neuronctl: error: migrate: missing-dir: no such")
    assert "Traceback" not in r.err
    assert cli("migrate", "--fix", "--diff").code == 2
    (tmp_path / "x.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    doc = json.loads(cli("migrate", ".", str(tmp_path), "x.py", "--json").out)
    assert [f["path"] for f in doc["findings"]] == ["x.py"]  # one scan, however often it is named
    assert cli("migrate", "--json", "--format", "sarif").code == 2
    assert cli("migrate", "--max-bytes", "0").code == 2


def test_github_annotations(cli, repo):
    r = cli("migrate", "--format", "github")
    assert r.code == 1
    line = next(x for x in r.out.splitlines() if "NRN301" in x)
    assert line.startswith("::warning file=kernels/add_kernel.py,line=1,col=1,title=neuronctl NRN301::")
    assert "%0Abecomes: the same import from `nki`" in line and "\n" not in line
    assert r.out.splitlines()[-1].startswith("neuronctl migrate: ")


def test_sarif_is_valid_sarif_2_1_0(cli, repo):
    r = cli("migrate", "--format", "sarif")
    assert r.code == 1
    log = json.loads(r.out)
    jsonschema.validate(log, SCHEMA)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert all(rules[res["ruleIndex"]]["id"] == res["ruleId"] for res in run["results"])
    assert len(run["results"]) == len(json.loads(cli("migrate", "--json").out)["findings"])
    location = run["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%" and location["region"]["startLine"] >= 1
    # the schema is really checked: a broken log is refused
    run["results"][0]["level"] = "loud"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(log, SCHEMA)


def test_diff_shows_the_rewrite_and_writes_nothing(cli, repo):
    before = _tree_bytes(repo)
    r = cli("migrate", "--diff")
    assert r.code == 1 and _tree_bytes(repo) == before
    assert "--- a/device_only.py\n+++ b/device_only.py\n" in r.out
    assert "-    device = xm.xla_device()\n+    device = torch.device('neuron')\n" in r.out
    assert "--fix would rewrite 10 in 4 files" in r.out


def test_fix_round_trip_keeps_comments_compiles_and_is_idempotent(cli, repo):
    r = cli("migrate", "--fix")
    assert r.code == 1  # the manual findings stay
    fixed = (repo / "device_only.py").read_text()
    assert fixed == DEVICE_ONLY.replace(
        "import torch_xla.core.xla_model as xm  # keep this comment's neighbour\n", "").replace(
        "xm.xla_device()", "torch.device('neuron')").replace('device_type="cuda"', 'device_type="neuron"').replace(
        ".to('cuda')", ".to('neuron')").replace('init_process_group("xla")', 'init_process_group("neuron")')
    assert "# where the model runs" in fixed and "# on the accelerator" in fixed
    kernel = (repo / "kernels/add_kernel.py").read_text()
    assert kernel == NKI_KERNEL.replace("import neuronxcc.nki as nki", "import nki").replace(
        "neuronxcc.nki.", "nki.")
    train = (repo / "train_xla.py").read_text()
    assert train == TRAIN_XLA.replace("xm.xla_device()", "torch.device('neuron')")  # xm still used
    for path in ("device_only.py", "kernels/add_kernel.py", "train_xla.py"):
        compile((repo / path).read_text(), path, "exec")
        ast.parse((repo / path).read_text())
    expected = json.loads(notebook())
    expected["cells"][2]["source"] = ["import torch_xla.core.xla_model as xm\n", "import torch\n", "\n",
                                      "device = torch.device('neuron')\n", "xm.mark_step()\n"]
    # written back as Jupyter wrote it (here indent 1, no final newline): only that cell changed
    assert (repo / "notebooks/explore.ipynb").read_text() == json.dumps(expected, indent=1)
    after = _tree_bytes(repo)
    r2 = cli("migrate", "--fix", "--json")
    doc = json.loads(r2.out)
    assert _tree_bytes(repo) == after and doc["fixed"] == [] and doc["summary"]["fixable"] == 0
    assert not any(f["fix"] for f in doc["findings"])


def test_fix_adds_import_torch_where_the_rewrite_needs_it(cli, tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("import torch_xla.core.xla_model as xm\n\n\ndef dev():\n"
                                   "    return xm.xla_device()  # the device\n")
    monkeypatch.chdir(tmp_path)
    assert cli("migrate", "--fix").code == 0
    assert (tmp_path / "a.py").read_text() == ("import torch\n\n\ndef dev():\n"
                                               "    return torch.device('neuron')  # the device\n")
