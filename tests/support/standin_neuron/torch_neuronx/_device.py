"""`torch.neuron`: the device module the stand-in registers (torch._register_device_module)."""

from __future__ import annotations

import os
import types
from typing import Any

import torch

from torch_neuronx._standin import Memory


def count() -> int:
    try:
        return max(int(os.environ.get("NEURON_STANDIN_DEVICE_COUNT", "2")), 0)
    except ValueError:
        return 2


class Hooks(torch._C._acc.PrivateUse1Hooks):  # type: ignore[misc,name-defined]
    """What torch asks a PrivateUse1 backend in C++ (torch.accelerator reads these)."""

    def is_available(self) -> bool:
        return count() > 0

    def has_primary_context(self, dev_id: int) -> bool:
        return True

    def is_built(self) -> bool:
        return True


SYNCHRONIZED = [0]
"""How many times synchronize() ran (a test can see that a timing waited on this device)."""
_current = [0]
SEEDS: list[int] = []


def module() -> types.ModuleType:
    mod = types.ModuleType("torch.neuron", "The neuron device module (neuronctl's test stand-in).")

    def is_available() -> bool:
        return count() > 0

    def current_device() -> int:
        return _current[0]

    def set_device(device: Any) -> None:
        index = torch.device(device).index if not isinstance(device, int) else device
        _current[0] = index or 0

    def synchronize(device: Any = None) -> None:
        SYNCHRONIZED[0] += 1

    def memory_stats(device: Any = None) -> dict[str, int]:
        return {"allocated_bytes.all.current": Memory.allocated,
                "allocated_bytes.all.peak": Memory.peak,
                "allocation.all.allocated": Memory.allocations}

    def reset_peak_memory_stats(device: Any = None) -> None:
        Memory.peak = Memory.allocated

    def manual_seed(seed: int) -> None:
        # The values live in CPU memory and random ops take the CPU fallback: CPU's generator
        # is theirs, and torch.manual_seed (which calls this) has already seeded it.
        SEEDS.append(int(seed))

    functions = {
        "is_available": is_available, "device_count": count, "current_device": current_device,
        "set_device": set_device, "synchronize": synchronize, "is_initialized": lambda: True,
        "_is_in_bad_fork": lambda: False, "memory_allocated": lambda device=None: Memory.allocated,
        "max_memory_allocated": lambda device=None: Memory.peak, "memory_stats": memory_stats,
        "reset_peak_memory_stats": reset_peak_memory_stats, "manual_seed": manual_seed,
        "manual_seed_all": manual_seed, "SYNCHRONIZED": SYNCHRONIZED, "SEEDS": SEEDS,
    }
    for name, function in functions.items():
        setattr(mod, name, function)
    return mod
