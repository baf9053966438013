"""Each migration rule (neuronctl/ops/migrate/rules.py) is data with its source, and each has a
case here that makes it fire, in the kind of file it is for; a rule without a case fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from neuronctl.ops.migrate import MigrateRequest, migrate
from neuronctl.ops.migrate.rules import RULES
from neuronctl.release.manifest import load_bundled_manifest

# rule -> (file name, text, the `found` it reports, fixable)
CASES: dict[str, tuple[str, bytes, str | None, bool]] = {
    "NRN001": ("bad.py", b"# torch_xla\nx = '\xff'\n", "byte 17 is not UTF-8", False),
    "NRN002": ("old.py", b"import torch_xla\nprint 'python 2'\n", None, False),  # the message is Python's
    "NRN003": ("nb.ipynb", b"{not json", "not a notebook's JSON", False),
    "NRN101": ("a.py", b"import torch_xla.core.xla_model as xm\nxm.get_ordinal()\n",
               "torch_xla.core.xla_model", False),
    "NRN102": ("a.py", b"import torch\nimport torch_xla.core.xla_model as xm\nd = xm.xla_device()\n",
               "xm.xla_device()", True),
    "NRN103": ("a.py", b"import torch_xla.core.xla_model as xm\nxm.mark_step()\n", "xm.mark_step()", False),
    "NRN104": ("a.py", b"from torch_xla.core import xla_model as xm\nxm.optimizer_step(opt)\n",
               "xm.optimizer_step()", False),
    "NRN105": ("a.py", b"import torch_xla.core.xla_model as xm\nxm.master_print('hi')\n",
               "xm.master_print()", False),
    "NRN106": ("a.py", b"from torch_xla.distributed.parallel_loader import ParallelLoader\n"
               b"ParallelLoader(loader, [d])\n", "ParallelLoader()", False),
    "NRN107": ("a.py", b"import torch_xla.distributed.xla_multiprocessing as xmp\nxmp.spawn(f)\n",
               "xmp.spawn()", False),
    "NRN108": ("a.py", b"import torch_xla.distributed.xla_backend as xb\nxb.ProcessGroupXla(1, 2)\n",
               "torch_xla.distributed.xla_backend.ProcessGroupXla", False),
    "NRN109": ("a.py", b"import torch.distributed as dist\ndist.init_process_group(backend='nccl')\n",
               "backend='nccl'", True),
    "NRN110": ("a.py", b"import torch_xla.core.xla_model as xm\nxm.get_ordinal()\n",
               "torch_xla.core.xla_model.get_ordinal", False),
    "NRN201": ("a.py", b"import torch_neuronx\ntorch_neuronx.trace(m, x)\n", "torch_neuronx.trace()", False),
    "NRN202": ("a.py", b"import torch_neuronx\ntorch_neuronx.analyze(m, x)\n", "torch_neuronx.analyze()",
               False),
    "NRN203": ("a.py", b"from torch_neuronx import DataParallel\nDataParallel(m)\n", "DataParallel()", False),
    "NRN301": ("k.py", b"from neuronxcc import nki\n", "neuronxcc.nki", True),
    "NRN302": ("k.py", b"import neuronxcc.nki\n@neuronxcc.nki.jit\ndef k(): pass\n", "neuronxcc.nki.jit",
               False),
    "NRN401": ("a.py", b"x = t.to(\"cuda\", non_blocking=True)\n", ".to('cuda')", True),
    "NRN402": ("a.py", b"model = model.cuda()\n", ".cuda()", False),
    "NRN403": ("a.py", b"import torch\nd = torch.device('cuda:1')\n", "'cuda:1'", False),
    "NRN403 (a device variable)": ("a.py", b"device = 'cuda'\nx = t.to(device)\n", "'cuda'", False),
    "NRN102 (imported by name)": ("a.py", b"from torch_xla.core.xla_model import xla_device\nd = xla_device()\n",
                                  "xla_device()", True),
    "NRN404": ("a.py", b"import torch\nscaler = torch.cuda.amp.GradScaler()\n", "torch.cuda.amp.GradScaler",
               False),
    "NRN405": ("a.py", b"import torch\nwith torch.autocast('xla'):\n    pass\n", "device_type='xla'", True),
    "NRN406": ("a.py", b"import torch\ntorch.compile(m, mode='max-autotune')\n", "mode='max-autotune'", False),
    "NRN407": ("a.py", b"import torch\nc = torch.compile(m, backend='openxla')  # XLA\n", "backend='openxla'", True),
    "NRN501": ("a.py", b"from neuronx_distributed.parallel_layers import parallel_state\n",
               "neuronx_distributed.parallel_layers.parallel_state", False),
    "NRN502": ("a.py", b"from transformers_neuronx import LlamaForSampling\n",
               "transformers_neuronx.LlamaForSampling", False),
    "NRN503": ("a.py", b"from optimum.neuron import NeuronModelForCausalLM\n",
               "optimum.neuron.NeuronModelForCausalLM", False),
    "NRN601": ("Dockerfile", b"ENV PJRT_DEVICE=NEURON\n", "PJRT_DEVICE", False),
    "NRN602": ("run.sh", b"export XLA_DOWNCAST_BF16=1\n", "XLA_DOWNCAST_BF16", False),
    "NRN603": ("ci.yml", b"env:\n  XLA_FLAGS: --xla_dump_to=/tmp\n", "XLA_FLAGS", False),
    "NRN604": ("a.py", b"import os\nos.environ['NEURON_CC_FLAGS'] = '-O1'\n", "NEURON_CC_FLAGS", False),
    "NRN701": ("requirements.txt", b"torch-neuronx<2.10\n", "torch-neuronx<2.10", False),
    "NRN702": ("constraints.txt", b"torch_xla==2.1.6\n", "torch_xla==2.1.6", False),
    "NRN703": ("requirements.txt", b"libneuronxla<3\n", "libneuronxla<3", False),
    "NRN704": ("setup.cfg", b"[options]\ninstall_requires =\n    neuronx-cc==2.14.227.0\n",
               "neuronx-cc==2.14.227.0", False),
    "NRN705": ("requirements.txt", b"libtorch-neuronx-lite==2.13.0.1.0.4089\n",
               "libtorch-neuronx-lite==2.13.0.1.0.4089", False),
    "NRN706": ("pyproject.toml", b"[project]\nname='x'\nversion='1'\ndependencies=['transformers-neuronx']\n",
               "transformers-neuronx", False),
}


def test_every_rule_is_data_with_a_source_and_a_case():
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids)) and all(re.fullmatch(r"NRN\d{3}", i) for i in ids)
    assert set(ids) == {case.split()[0] for case in CASES}, "each rule needs a case in CASES"
    for r in RULES:
        assert r.what and r.becomes
        if not r.id.startswith("NRN00"):  # the file-level ones are neuronctl's own
            assert r.source.page.startswith(("https://awsdocs-neuron.readthedocs-hosted.com/",
                                              "https://github.com/aws-neuron/aws-neuron-sdk/blob/")), r.id
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", r.source.read)
        assert not (r.question and r.fixable), f"{r.id}: a question is never rewritten"


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_each_rule_fires_on_its_case(tmp_path, monkeypatch, versions, rule_id):
    name, data, found, fix = CASES[rule_id]
    rule_id = rule_id.split()[0]
    (tmp_path / name).write_bytes(data)
    monkeypatch.chdir(tmp_path)  # the default root: here, and paths relative to it
    outcome = migrate(MigrateRequest((), versions))
    mine = [f for f in outcome.findings if f.rule == rule_id]
    assert len(mine) == 1, [(f.rule, f.found) for f in outcome.findings]
    assert (mine[0].fix, mine[0].path) == (fix, name)
    assert found is None or mine[0].found == found


def test_native_code_and_native_pins_are_silent(tmp_path, versions):
    (tmp_path / "native.py").write_text(
        "import torch\nimport torch_neuronx  # the distributed guide imports it\n"
        "import nki\nimport nki.language as nl\n"
        "d = torch.device('neuron')\nm = torch.nn.Linear(2, 2).to('neuron')\n"
        "torch.distributed.init_process_group('neuron')\n"
        "with torch.autocast(device_type='neuron'):\n    pass\n"
        "torch.compile(m, backend='neuron')\n")
    (tmp_path / "requirements.txt").write_text(
        "torch-neuronx==2.14.*\nneuronx-cc==2.*\nlibneuronxla>=3\nnki\ntorch==2.14.0\n")
    (tmp_path / "Dockerfile").write_text("ENV NEURON_RT_VISIBLE_CORES=0-3\n"
                                         "RUN pip install 'torch-neuronx==2.14.*'\n")
    outcome = migrate(MigrateRequest((tmp_path,), versions))
    assert outcome.findings == ()
    assert outcome.scanned == 3


def test_positions_are_characters_and_the_recipe_names_the_release(tmp_path, versions):
    (tmp_path / "a.py").write_text("s = 'é'; x = t.to('cuda')\n", encoding="utf-8")
    (tmp_path / "requirements.txt").write_text("torch-neuronx\n")
    outcome = migrate(MigrateRequest((tmp_path,), versions))
    to, pin = outcome.findings
    assert (to.line, to.col) == (1, 14)  # 'é' is two bytes, one character
    release = load_bundled_manifest().default.version
    assert f"neuronctl lock --release {release}" in pin.becomes


@pytest.mark.parametrize(("before", "after"), [
    ("c = torch.compile(m, backend='openxla')  # XLA\n", "c = torch.compile(m, backend='neuron')  # XLA\n"),
    ("torch.distributed.init_process_group(backend=\"xla\", rank=r)\n",
     "torch.distributed.init_process_group(backend=\"neuron\", rank=r)\n"),
    ("with torch.autocast(\"xla\", dtype=torch.bfloat16):\n    pass\n",
     "with torch.autocast(\"neuron\", dtype=torch.bfloat16):\n    pass\n"),
    ("y = x.to(device='cuda', non_blocking=True)\n", "y = x.to(device='neuron', non_blocking=True)\n"),
    ("from torch_xla.core.xla_model import xla_device, get_ordinal\nd = xla_device()\nr = get_ordinal()\n",
     "from torch_xla.core.xla_model import get_ordinal\nd = torch.device('neuron')\nr = get_ordinal()\n"),
])
def test_each_rewrite_changes_only_its_string(tmp_path, monkeypatch, versions, before, after):
    (tmp_path / "a.py").write_text("import torch\n" + before)
    monkeypatch.chdir(tmp_path)
    outcome = migrate(MigrateRequest((), versions, "fix"))
    assert not any(f.fix for f in outcome.findings) and outcome.rewrites >= 1
    assert (tmp_path / "a.py").read_text() == "import torch\n" + after


def test_a_process_group_on_xla_rendezvous_is_not_rewritten(tmp_path, monkeypatch, versions):
    text = "import torch.distributed as dist\ndist.init_process_group('xla', init_method='xla://')\n"
    (tmp_path / "a.py").write_text(text)
    monkeypatch.chdir(tmp_path)
    (finding,) = migrate(MigrateRequest((), versions, "fix")).findings
    assert finding.rule == "NRN109" and not finding.fix and (tmp_path / "a.py").read_text() == text


def test_the_docs_table_lists_every_rule():
    text = (Path(__file__).resolve().parents[3] / "docs" / "migrate.md").read_text()
    for r in RULES:
        kind = "fixable" if r.fixable else ("question" if r.question else "manual")
        row = next((line for line in text.splitlines() if line.startswith(f"| `{r.id}` | ")), "")
        assert f"| {r.what} |" in row and f"| {kind} |" in row, f"docs/migrate.md: {r.id}"


def test_every_dependency_list_of_pyproject_setup_cfg_and_poetry(tmp_path, monkeypatch, versions):
    (tmp_path / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools", "torch-xla"]\n'
        '[dependency-groups]\ndev = ["libneuronxla==2.2.1630.0"]\n'
        '[tool.uv]\nconstraint-dependencies = ["neuronx-cc<2.20"]\n'
        '[tool.poetry.dependencies]\npython = "^3.12"\ntorch-neuronx = "^2.1"\n'
        '[tool.poetry.group.infer.dependencies]\ntransformers-neuronx = {version = "*"}\n'
        'optimum-neuron = "~0.0.24"\n')
    (tmp_path / "setup.cfg").write_text(
        "[metadata]\nname = x\n[options]\ninstall_requires =\n    numpy\n    torch-neuronx==2.1.2\n"
        "[options.extras_require]\nxla = torch-xla>=2.1\nlite =\n    libtorch-neuronx-lite\n")
    monkeypatch.chdir(tmp_path)
    found = {(f.path, f.line, f.rule, f.found) for f in migrate(MigrateRequest((), versions)).findings}
    # torch-neuronx = "^2.1" is >=2.1,<3 (Poetry's caret): it allows the native 2.14, no finding
    assert found == {
        ("pyproject.toml", 2, "NRN702", "torch-xla"),
        ("pyproject.toml", 4, "NRN703", "libneuronxla==2.2.1630.0"),
        ("pyproject.toml", 6, "NRN704", "neuronx-cc<2.20"),
        ("pyproject.toml", 11, "NRN706", "transformers-neuronx"),
        ("pyproject.toml", 12, "NRN706", "optimum-neuron<0.1,>=0.0.24"),
        ("setup.cfg", 6, "NRN701", "torch-neuronx==2.1.2"),
        ("setup.cfg", 8, "NRN702", "torch-xla>=2.1"),
        ("setup.cfg", 10, "NRN705", "libtorch-neuronx-lite"),
    }
