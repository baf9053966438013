"""A repository of the XLA era, file by file, shaped like real code (tests/test_migrate*.py):
a training loop on torch_xla, an inference script tracing with torch_neuronx, an NKI kernel on
the neuronxcc.nki namespace, a notebook, requirements with legacy pins, a Dockerfile and a
launch script setting XLA settings, a Kubernetes job, a pyproject.toml and setup.py, and native
code that must stay silent."""

from __future__ import annotations

import json
from pathlib import Path

TRAIN_XLA = '''\
"""Fine-tune a small MLP on Trainium with PyTorch/XLA."""
import os

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm  # the XLA device
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp

os.environ["XLA_USE_BF16"] = "1"  # bf16 everywhere


def train(index, flags):
    device = xm.xla_device()
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=flags["lr"])
    data = torch.utils.data.TensorDataset(torch.randn(256, 32), torch.randint(0, 2, (256,)))
    loader = torch.utils.data.DataLoader(data, batch_size=32)
    device_loader = pl.MpDeviceLoader(loader, device)
    for step, (x, y) in enumerate(device_loader):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        xm.optimizer_step(optimizer)
        xm.mark_step()
        if step % 10 == 0:
            xm.master_print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    xmp.spawn(train, args=({"lr": 0.01},))
'''

DEVICE_ONLY = '''\
import torch
import torch_xla.core.xla_model as xm  # keep this comment's neighbour


def pick():
    # where the model runs
    device = xm.xla_device()
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        x = torch.ones(2).to('cuda')  # on the accelerator
    return device, x


def setup():
    import torch.distributed as dist

    dist.init_process_group("xla")
'''

INFER_TRACE = '''\
import torch
import torch_neuronx
from transformers import AutoConfig, AutoModel

config = AutoConfig.for_model("bert", hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                              intermediate_size=64)
model = AutoModel.from_config(config).eval()
example = (torch.zeros(1, 8, dtype=torch.long),)
traced = torch_neuronx.trace(model, example, compiler_args="--model-type=transformer")
torch.jit.save(traced, "model.pt")
model = model.cuda()
compiled = torch.compile(model, mode="max-autotune-no-cudagraphs")
print(torch.cuda.is_available())
'''

NKI_KERNEL = '''\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from neuronxcc.nki.typing import tensor  # noqa: F401


@nki.jit
def add_kernel(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    nl.store(out, x + y)
    return out
'''

NATIVE = '''\
import torch

device = torch.device("neuron")
model = torch.nn.Linear(4, 4).to("neuron")
with torch.autocast(device_type="neuron", dtype=torch.bfloat16):
    y = model(torch.ones(1, 4, device=device))
compiled = torch.compile(model, backend="neuron")
'''

REQUIREMENTS = '''\
# the XLA stack, as pinned in 2025
torch-neuronx==2.1.2.2.3.0
torch-xla==2.1.6 --hash=sha256:0000000000000000000000000000000000000000000000000000000000000000
libneuronxla==2.2.1630.0
neuronx-cc==2.17.194.0
neuronx-distributed
numpy>=1.26
'''

DOCKERFILE = '''\
FROM public.ecr.aws/docker/library/ubuntu:24.04
ENV PJRT_DEVICE=NEURON
ENV NEURON_CC_FLAGS="--model-type transformer"
# XLA_USE_BF16 is set below, not here
RUN pip install --no-cache-dir torch-neuronx==2.1.2 "transformers-neuronx" requests
'''

LAUNCH = '''\
#!/bin/bash
set -euo pipefail
export XLA_USE_BF16=1
export XLA_IR_DEBUG=1
torchrun --nproc_per_node=32 train_xla.py
'''

K8S = '''\
apiVersion: batch/v1
kind: Job
spec:
  template:
    spec:
      containers:
        - name: train
          env:
            - name: PJRT_DEVICE
              value: NEURON
          command: ["bash", "-c", "pip install optimum-neuron && python train_xla.py"]
'''

PYPROJECT = '''\
[project]
name = "demo"
version = "0.1"
dependencies = ["torch-neuronx", "numpy"]

[project.optional-dependencies]
lite = ["libtorch-neuronx-lite"]
'''

SETUP_PY = '''\
from setuptools import setup

setup(name="demo", install_requires=["torch-xla>=2.1", "requests"])
'''


def notebook() -> str:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Try torch_xla\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["!pip install torch-xla==2.1.6\n", "%env PJRT_DEVICE=NEURON\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["import torch_xla.core.xla_model as xm\n", "device = xm.xla_device()\n",
                    "xm.mark_step()\n"]},
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


FILES: dict[str, str] = {
    "train_xla.py": TRAIN_XLA,
    "device_only.py": DEVICE_ONLY,
    "infer/trace_bert.py": INFER_TRACE,
    "kernels/add_kernel.py": NKI_KERNEL,
    "native.py": NATIVE,
    "requirements.txt": REQUIREMENTS,
    "Dockerfile": DOCKERFILE,
    "scripts/launch.sh": LAUNCH,
    "k8s/job.yaml": K8S,
    "pyproject.toml": PYPROJECT,
    "setup.py": SETUP_PY,
}


def make_repo(root: Path) -> Path:
    for rel, text in {**FILES, "notebooks/explore.ipynb": notebook()}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
