# ruff: noqa: UP006, UP035  (runs in the target interpreter: whatever Python its torch needs, 3.8 on)
"""The built-in reference model of `neuronctl smoke`: a few small pre-norm transformer blocks
(causal self-attention written out in plain tensor ops, a GELU MLP), random weights, nothing
downloaded. Loaded by path by smoke_run.py inside the target interpreter, after torch.

Plain ops only (matmul, softmax, layer norm, embedding, GELU), so that any backend that runs a
transformer at all runs this one: a failure here is the device's, not an exotic kernel's.
"""

import importlib
import math
from typing import Any, Tuple

torch: Any = importlib.import_module("torch")

VOCAB = 256
WIDTH = 64
HEADS = 4
LAYERS = 2
SEQUENCE = 32
BATCH = 4


class Block(torch.nn.Module):  # type: ignore[misc]
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.proj = torch.nn.Linear(width, width)
        self.norm2 = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def forward(self, x: Any) -> Any:
        batch, length, width = x.shape
        head_width = width // self.heads
        q, k, v = self.qkv(self.norm1(x)).split(width, dim=2)
        q, k, v = (t.reshape(batch, length, self.heads, head_width).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(head_width)
        causal = torch.ones(length, length, dtype=torch.bool, device=x.device).tril()
        attention = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        mixed = (attention @ v).transpose(1, 2).reshape(batch, length, width)
        x = x + self.proj(mixed)
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x))))


class ReferenceModel(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, WIDTH)
        self.position = torch.nn.Embedding(SEQUENCE, WIDTH)
        self.blocks = torch.nn.ModuleList([Block(WIDTH, HEADS) for _ in range(LAYERS)])
        self.norm = torch.nn.LayerNorm(WIDTH)
        self.head = torch.nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens: Any) -> Any:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.embed(tokens) + self.position(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def make() -> Tuple[Any, Tuple[Any, ...], int]:
    """(model, example inputs, tokens per step), like a user's factory."""
    tokens = torch.randint(0, VOCAB, (BATCH, SEQUENCE), generator=torch.Generator().manual_seed(0))
    return ReferenceModel(), (tokens,), BATCH * SEQUENCE
