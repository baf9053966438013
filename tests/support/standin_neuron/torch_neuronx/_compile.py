"""The `neuron` torch.compile backend of the stand-in (torch._dynamo register_backend).

It "compiles" by running the captured graph eagerly on the stand-in device. With
NEURON_STANDIN_COMPILE_FAIL=1 compilation fails; then, as AWS documents for
TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION (default true), it raises, unless the variable is 0,
when the graph falls back to eager.
"""

from __future__ import annotations

import os
from typing import Any

COMPILED = [0]
FELL_BACK = [0]


class CompileError(RuntimeError):
    """A graph the stand-in's compiler refused."""


def _fallback_allowed() -> bool:
    value = os.environ.get("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", "1").strip().lower()
    return value in ("0", "false", "no", "off")


def neuron_backend(gm: Any, example_inputs: Any) -> Any:
    try:
        if os.environ.get("NEURON_STANDIN_COMPILE_FAIL") == "1":
            raise CompileError("neuron stand-in: neuronx-cc failed to compile the graph "
                               "(NEURON_STANDIN_COMPILE_FAIL=1)")
    except CompileError:
        if not _fallback_allowed():
            raise
        FELL_BACK[0] += 1
        return gm.forward
    COMPILED[0] += 1
    return gm.forward


def register() -> None:
    from torch._dynamo import register_backend

    register_backend(name="neuron")(neuron_backend)
