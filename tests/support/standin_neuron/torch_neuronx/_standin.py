"""The stand-in's tensors and kernels: a Python-only PrivateUse1 backend over CPU memory.

A `neuron` tensor is the tensor torch.utils.backend_registration's Python-backend support makes
(`torch._C._acc.create_empty_tensor`: PrivateUse1 dispatch keys, no storage of its own) with its
values in a CPU tensor (`.raw` of its storage), as PyTorch's own
test/test_privateuseone_python_backend.py does.
Kernels for NATIVE_OPS are registered for PrivateUse1 with torch.library; every other aten op
reaches the boxed fallback, which runs it on CPU and wraps the result back, as AWS's
CPU_FALLBACK does ("the named ATen operator runs on the CPU and the result is copied back").
Both count what they ran (NATIVE_CALLS, FALLBACK_CALLS) so a test can see which path an op took.
"""

from __future__ import annotations

import collections
import os
import weakref
from typing import Any

import torch
from torch.utils._pytree import tree_leaves, tree_map

DEVICE = "neuron"
NATIVE_OPS: frozenset[str] = frozenset({
    # memory and movement
    "aten::empty.memory_format", "aten::empty_strided", "aten::_to_copy", "aten::copy_",
    "aten::_copy_from", "aten::_local_scalar_dense",
    "aten::fill_.Scalar", "aten::zero_", "aten::clone",
    # views and layout
    "aten::view", "aten::_unsafe_view", "aten::as_strided", "aten::t", "aten::transpose.int",
    "aten::permute", "aten::expand", "aten::unsqueeze", "aten::squeeze.dim", "aten::slice.Tensor",
    "aten::select.int", "aten::split.Tensor", "aten::split_with_sizes",
    "aten::cat", "aten::stack",
    # arithmetic
    "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::add.Tensor", "aten::add_.Tensor",
    "aten::mul.Tensor", "aten::mul_.Tensor", "aten::mul.Scalar", "aten::div.Tensor",
    "aten::div.Scalar", "aten::sub.Tensor", "aten::neg", "aten::rsqrt", "aten::sqrt",
    "aten::pow.Tensor_Scalar", "aten::exp", "aten::tanh", "aten::reciprocal",
    # reductions, activations, lookups
    "aten::mean.dim", "aten::sum.dim_IntList", "aten::sum", "aten::_softmax",
    "aten::_softmax_backward_data", "aten::silu", "aten::silu_backward", "aten::gelu",
    "aten::gelu_backward", "aten::embedding", "aten::embedding_dense_backward",
    "aten::index_select", "aten::index.Tensor", "aten::where.self", "aten::masked_fill.Scalar",
    "aten::eq.Scalar", "aten::ones_like", "aten::zeros_like", "aten::threshold_backward",
    "aten::relu", "aten::native_layer_norm", "aten::native_layer_norm_backward",
})
"""Ops with a registered PrivateUse1 kernel ("native"); everything else takes the fallback.
Left to the fallback on purpose, among others: aten::cos, aten::sin, aten::arange,
aten::triu, aten::tril, aten::maximum (rotary embeddings and causal masks reach them)."""

NATIVE_CALLS: collections.Counter[str] = collections.Counter()
FALLBACK_CALLS: collections.Counter[str] = collections.Counter()


class Memory:
    """What `torch.neuron`'s memory functions report: bytes held by live neuron tensors."""

    allocated = 0
    peak = 0
    allocations = 0

    @classmethod
    def take(cls, nbytes: int) -> None:
        cls.allocated += nbytes
        cls.allocations += 1
        cls.peak = max(cls.peak, cls.allocated)

    @classmethod
    def give(cls, nbytes: int) -> None:
        cls.allocated -= nbytes


def wrap(raw: torch.Tensor) -> torch.Tensor:
    """A neuron tensor over `raw` (a CPU tensor, kept as it is: views of it alias as they should)."""
    t = torch._C._acc.create_empty_tensor(list(raw.shape), raw.dtype)
    _attach(t, raw)
    return t


def _attach(t: torch.Tensor, raw: torch.Tensor) -> None:
    """The values go on the tensor's (empty) storage, not on the tensor: the shallow copies torch
    makes in C++ (`.data`, the outputs autograd saves for backward) share the storage and
    outlive the tensor they were made from, and the storage lives exactly as long as they do."""
    storage = t.untyped_storage()
    storage.raw = raw
    nbytes = raw.numel() * raw.element_size()
    Memory.take(nbytes)
    weakref.finalize(storage, Memory.give, nbytes)


def adopt(t: torch.Tensor) -> torch.Tensor:
    raw = torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype)
    _attach(t, raw)
    return raw


def is_neuron(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == DEVICE


def unwrap(value: Any) -> Any:
    if is_neuron(value):
        raw = getattr(value.untyped_storage(), "raw", None)
        if raw is None:
            # made in C++ without a kernel of ours (the output a structured op allocates for
            # its out= variant): its memory is taken now, as a lazy allocator would
            raw = adopt(value)
        return raw
    if isinstance(value, torch.device) and value.type == DEVICE:
        return torch.device("cpu")
    if isinstance(value, str) and value.split(":")[0] == DEVICE:
        return "cpu"
    return value


def run_on_cpu(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run `op` on the CPU values and wrap what it returns: a result that is one of the inputs'
    values (an in-place or out= op) comes back as that input."""
    by_raw: dict[int, torch.Tensor] = {}
    for t in tree_leaves((args, kwargs)):
        if isinstance(t, torch.Tensor):
            by_raw[id(unwrap(t))] = t
    out = op(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))

    def back(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            known = by_raw.get(id(value))
            return known if known is not None else wrap(value)
        return value

    return tree_map(back, out)


def native_kernel(name: str) -> Any:
    def kernel(*args: Any, **kwargs: Any) -> Any:
        NATIVE_CALLS[name] += 1
        return run_on_cpu(OVERLOADS[name], args, kwargs)
    return kernel


def fallback(op: Any, *args: Any, **kwargs: Any) -> Any:
    FALLBACK_CALLS[op.name()] += 1
    if os.environ.get("NEURON_STANDIN_LOG_FALLBACK") == "1":
        print(f"neuron stand-in: CPU fallback for {op.name()}", flush=True)
    return run_on_cpu(op, args, kwargs)


def _copy_from(src: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    NATIVE_CALLS["aten::_copy_from"] += 1
    unwrap(dst).copy_(unwrap(src))
    return dst


def _to_copy(x: torch.Tensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
             pin_memory: Any = None, non_blocking: bool = False, memory_format: Any = None) -> Any:
    NATIVE_CALLS["aten::_to_copy"] += 1
    source = unwrap(x)
    target = torch.device(device) if device is not None else x.device
    value = source.to(dtype=dtype or source.dtype, copy=True)
    return wrap(value) if target.type == DEVICE else value


def _view(x: torch.Tensor, size: Any) -> torch.Tensor:
    """A view of the values; a copy where they cannot be viewed that way (the tensor's own
    strides are always contiguous here, so torch may ask for a view its values do not allow)."""
    NATIVE_CALLS["aten::view"] += 1
    try:
        return wrap(unwrap(x).view(size))
    except RuntimeError:
        return wrap(unwrap(x).reshape(size))


OVERLOADS: dict[str, Any] = {}
SPECIAL = {"aten::_copy_from": _copy_from, "aten::_to_copy": _to_copy, "aten::view": _view}
_LIBRARIES: list[torch.library.Library] = []


def overload(name: str) -> Any:
    base, _, variant = name.removeprefix("aten::").partition(".")
    packet = getattr(torch.ops.aten, base)
    return getattr(packet, variant or "default")


def register_kernels() -> None:
    """The PrivateUse1 kernels and the fallback (call once, after the backend is renamed)."""
    lib = torch.library.Library("aten", "IMPL")
    for name in sorted(NATIVE_OPS):
        if (torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd")
                and not torch._C._dispatch_has_kernel_for_dispatch_key(name, "CPU")):
            # decomposed above the backend (CPU has no kernel of its own either): it never
            # reaches a PrivateUse1 kernel, so listing it as native would be a lie
            raise RuntimeError(f"neuron stand-in: {name} is CompositeImplicitAutograd")
        OVERLOADS[name] = overload(name)
        lib.impl(name.removeprefix("aten::"), SPECIAL.get(name) or native_kernel(name), "PrivateUse1")
    every = torch.library.Library("_", "IMPL")
    every.fallback(fallback, dispatch_key="PrivateUse1")
    _LIBRARIES.extend((lib, every))
