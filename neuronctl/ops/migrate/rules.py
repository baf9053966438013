"""The migration rules as data: what each finds, what it becomes on TorchNeuron, whether --fix
rewrites it, and the AWS page that says so (with the date it was read).

A rule whose replacement AWS does not state is a question for the user (`question=True`): it is
reported with the decision to make, never rewritten. The scanners (python_scan.py, text_scan.py)
look rules up by id; nothing about a rule's wording or source lives there.
The facts behind each row: ../shared/reference/TORCHNEURON-FACTS.md and RELEASE-FACTS.md.
"""

from __future__ import annotations

from msgspec import Struct

_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/"
_NOTICES = _DOCS + "about-neuron/announcements/neuron2.x/"
READ = "2026-12-06"
"""The day the pages below were read for these rules."""


class Source(Struct, frozen=True):
    """An AWS page a rule rests on, with the day it was read."""

    page: str
    read: str = READ
    modified: str | None = None
    """The page's own date-modified, where it gives one."""

    def cite(self) -> str:
        dated = f", modified {self.modified}" if self.modified else ""
        return f"{self.page} (read {self.read}{dated})"


class Rule(Struct, frozen=True):
    """One migration rule: what it finds, what that becomes on TorchNeuron, and the source."""

    id: str
    what: str
    becomes: str
    fixable: bool
    source: Source
    question: bool = False
    """AWS states no replacement: the user decides (never rewritten)."""


WHAT_CHANGES = Source(_DOCS + "torch/index.html", modified="2026-09-01")
TROUBLESHOOTING = Source(_DOCS + "setup/troubleshooting.html", modified="2026-03-03")
DEVICE_MODULE = Source(_DOCS + "torch/reference/api/torch-neuron-module.html", modified="2026-11-18")
XLA_TRAINING_END = Source(_NOTICES + "announce-no-support-pytorch-xla-training.html")
XLA_INFERENCE_END = Source(_NOTICES + "announce-no-support-torch-xla-inference-trn.html")
NKI_REMOVAL = Source(_NOTICES + "announce-removal-neuronxcc-nki-2-34.html")
BF16_VARS_END = Source(_NOTICES + "announce-eos-bf16-vars.html")
LITE_END = Source(_NOTICES + "announce-eos-libtorch-neuronx-lite.html")
NXDT_END = Source(_NOTICES + "announce-eos-nxdt-nxd-core-training.html")
LEGACY_CACHING = Source("https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/"
                        "about-neuron/arch/neuron-features/neuron-caching.rst")
INSTALL_RECIPE = Source("https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/setup/pytorch/update-manual.html")
NEURONCTL = Source("neuronctl (the file itself)", read="-")

_NO_XLA = "TorchNeuron has no torch_xla"

RULES: tuple[Rule, ...] = (
    # Files that could not be read as what their name says: findings of their own.
    Rule("NRN001", "file is not UTF-8 text", "fix the encoding to scan it", False, NEURONCTL),
    Rule("NRN002", "Python file does not parse", "fix the syntax to scan it", False, NEURONCTL),
    Rule("NRN003", "notebook is not JSON (nbformat)", "repair the notebook to scan it", False, NEURONCTL),
    # PyTorch/XLA (torch_xla): gone from TorchNeuron.
    Rule("NRN101", "torch_xla import",
         f"remove it ({_NO_XLA}); --fix removes it once the rewrites leave it unused",
         True, XLA_TRAINING_END),
    Rule("NRN102", "xm.xla_device()", "torch.device('neuron')", True, TROUBLESHOOTING),
    Rule("NRN103", "xm.mark_step()",
         "AWS names no replacement on TorchNeuron (eager, or torch.compile(backend=\"neuron\")): "
         "decide whether the step boundary is still needed", False, WHAT_CHANGES, question=True),
    Rule("NRN104", "xm.optimizer_step()",
         "AWS names no replacement: optimizer.step() with torch.distributed (backend \"neuron\") "
         "doing the gradient reduction is your decision", False, WHAT_CHANGES, question=True),
    Rule("NRN105", "xm.master_print()", "AWS names no replacement: print on rank 0 yourself",
         False, WHAT_CHANGES, question=True),
    Rule("NRN106", "torch_xla parallel loader (MpDeviceLoader/ParallelLoader)",
         "AWS names no replacement: a plain DataLoader with batches moved by .to('neuron') is your "
         "decision", False, WHAT_CHANGES, question=True),
    Rule("NRN107", "xmp.spawn()",
         "torch.distributed with backend \"neuron\" (AWS names no launcher: torchrun is your choice)",
         False, WHAT_CHANGES),
    Rule("NRN108", "torch_xla.distributed use", "torch.distributed with backend \"neuron\"",
         False, WHAT_CHANGES),
    Rule("NRN109", "init_process_group with an XLA/NCCL backend",
         "torch.distributed.init_process_group(\"neuron\")", True, WHAT_CHANGES),
    Rule("NRN110", "other torch_xla API",
         "AWS names no TorchNeuron replacement for it: find the torch equivalent", False,
         XLA_TRAINING_END, question=True),
    # The legacy torch_neuronx APIs of the XLA line.
    Rule("NRN201", "torch_neuronx.trace()",
         "run eagerly or torch.compile(backend=\"neuron\"), or serve with vLLM Neuron (XLA "
         "inference ended on Trn2/Trn3 in 2.34.0)", False, XLA_INFERENCE_END),
    Rule("NRN202", "torch_neuronx.analyze()",
         "not published for TorchNeuron: AWS names no replacement", False, XLA_INFERENCE_END,
         question=True),
    Rule("NRN203", "torch_neuronx.DataParallel",
         "torch.distributed with backend \"neuron\" (DDP)", False, WHAT_CHANGES),
    # NKI's old namespace.
    Rule("NRN301", "neuronxcc.nki import", "the same import from `nki` (neuronxcc.nki was removed "
         "from neuronx-cc in 2.34)", True, NKI_REMOVAL),
    Rule("NRN302", "neuronxcc.nki use through the neuronxcc package",
         "the same name under `nki`", False, NKI_REMOVAL),
    # CUDA-only code that needs a device change.
    Rule("NRN401", ".to('cuda')", ".to('neuron')", True, WHAT_CHANGES),
    Rule("NRN402", ".cuda()", ".to('neuron')", False, WHAT_CHANGES),
    Rule("NRN403", "a \"cuda\" device string",
         "\"neuron\" (AWS states the .to() case only: check this one)", False, WHAT_CHANGES,
         question=True),
    Rule("NRN404", "torch.cuda API",
         "torch.neuron is the device module (AWS does not map each function): check the "
         "torch.neuron equivalent", False, DEVICE_MODULE, question=True),
    Rule("NRN405", "torch.autocast for CUDA/XLA", "torch.autocast(device_type=\"neuron\")", True,
         WHAT_CHANGES),
    Rule("NRN406", "torch.compile with a CUDA-only mode",
         "torch.compile(backend=\"neuron\") without the CUDA-only mode", False, WHAT_CHANGES),
    Rule("NRN407", "torch.compile with an XLA backend", "torch.compile(backend=\"neuron\")", True,
         WHAT_CHANGES),
    # Libraries tied to XLA.
    Rule("NRN501", "neuronx_distributed",
         "native torch.distributed (backend \"neuron\": DDP, FSDP2, DTensor TP/SP, PP, CP): NxD "
         "Core training APIs are no longer supported (for inference on Trn2/Trn3: TorchNeuron or "
         "vLLM Neuron)", False, NXDT_END),
    Rule("NRN502", "transformers_neuronx",
         "TorchNeuron (eager or torch.compile(backend=\"neuron\")) or vLLM Neuron", False,
         XLA_INFERENCE_END),
    Rule("NRN503", "optimum.neuron",
         "TorchNeuron (eager or torch.compile(backend=\"neuron\")) or vLLM Neuron", False,
         XLA_INFERENCE_END),
    # Settings of the XLA path.
    Rule("NRN601", "PJRT_DEVICE (a PyTorch/XLA runtime setting)",
         "AWS does not say TorchNeuron reads it: remove it with the torch_xla code", False,
         XLA_TRAINING_END, question=True),
    Rule("NRN602", "XLA_USE_BF16 / XLA_DOWNCAST_BF16",
         "automatic mixed precision (torch.autocast(device_type=\"neuron\", dtype=torch.bfloat16)) "
         "or model.to(torch.bfloat16)", False, BF16_VARS_END),
    Rule("NRN603", "an XLA_* setting",
         "PyTorch/XLA only: AWS names no TorchNeuron equivalent", False, XLA_TRAINING_END,
         question=True),
    Rule("NRN604", "NEURON_CC_FLAGS",
         "documented for the legacy XLA torch-neuronx; AWS does not publish whether TorchNeuron "
         "reads it: check each flag", False, LEGACY_CACHING, question=True),
    # Requirement lines that install the legacy line.
    Rule("NRN701", "torch-neuronx of the legacy XLA line (below 2.13, or unpinned)",
         "the native line: {recipe}", False, INSTALL_RECIPE),
    Rule("NRN702", "torch-xla", "remove it: AWS's TorchNeuron install recipe has no torch-xla "
         "({recipe})", False, INSTALL_RECIPE),
    Rule("NRN703", "libneuronxla below 3", "remove it or allow 3.* (AWS's TorchNeuron install "
         "recipe has no libneuronxla): {recipe}", False, INSTALL_RECIPE),
    Rule("NRN704", "neuronx-cc pinned to an old version", "neuronx-cc==2.* with the release: {recipe}",
         False, INSTALL_RECIPE),
    Rule("NRN705", "libtorch-neuronx-lite", "torch-neuronx (no lite release after 2.34): {recipe}",
         False, LITE_END),
    Rule("NRN706", "a library tied to XLA (neuronx-distributed, transformers-neuronx, "
         "optimum-neuron)", "native torch.distributed / transformers on TorchNeuron, or vLLM "
         "Neuron", False, XLA_INFERENCE_END),
)

BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}


def rule(rule_id: str) -> Rule:
    return BY_ID[rule_id]
