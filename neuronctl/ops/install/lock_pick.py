"""Which lock `install --lock pylock.toml` installs on this host (issue 16): the Neuron lock where
there are Neuron devices, the CUDA fallback beside it (pylock.cuda.toml) where there are none but
an NVIDIA GPU, or what --device names (ops/lock_choice.py decides; this gathers its facts)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from neuronctl.ops.lock_choice import (
    HostDevices,
    LockChoice,
    choose_lock,
    present_fallbacks,
    recorded_device,
)
from neuronctl.probes.hardware import HardwareReport
from neuronctl.probes.sysroot import SysRoot

if TYPE_CHECKING:
    from packaging.pylock import Pylock

    from neuronctl.probes.nvidia import NvidiaFacts


@dataclass(frozen=True)
class PickedLock:
    """The lock chosen for this host's devices, read, with the facts the choice rested on."""

    choice: LockChoice
    lock: Pylock
    """The chosen lock, read and validated."""
    nvidia: NvidiaFacts | None
    """The NVIDIA driver, where it was looked for (no Neuron devices, or --device cuda)."""
    fallbacks: frozenset[str] = frozenset()
    """The devices whose fallback lock lies beside the Neuron lock."""

    @property
    def is_fallback(self) -> bool:
        return self.choice.device != "neuron"

    @property
    def worth_saying(self) -> bool:
        """Whether there was a choice to make (fallbacks beside the lock, --device, a warning),
        so that the choice and its reason are printed."""
        return bool(self.fallbacks or self.is_fallback or self.choice.warnings)


def neuron_devices(hardware: HardwareReport) -> int:
    return hardware.device_count or len(hardware.dev_nodes)


def _nvidia(sysroot: SysRoot) -> NvidiaFacts:
    """The NVIDIA driver, looked for only where there is no Neuron device or --device cuda."""
    from neuronctl.probes.nvidia import detect_nvidia

    return detect_nvidia(sysroot)


def pick_lock(main: Path, device: str, hardware: HardwareReport, sysroot: SysRoot) -> PickedLock:
    """The lock to install for `--lock main` and `--device device` on the host `hardware`
    describes, read; bad input (exit 2) for a fallback lock that is asked for and absent, and
    for a lock recording a fallback device the hardware does not call for (unless --device names
    it): what a lock is for is what it records, not only its name."""
    from neuronctl.resolvers.pylock import load_pylock

    present = present_fallbacks(main)
    count = neuron_devices(hardware)
    nvidia = _nvidia(sysroot) if count == 0 or device == "cuda" else None
    host = HostDevices(count, nvidia.driver if nvidia else None, nvidia.source if nvidia else None)
    given = load_pylock(main)
    given_device, variant = _recorded(main, given)
    choice = choose_lock(main, present, host, device, main_device=given_device, cuda_variant=variant)
    if choice.path == main:
        return PickedLock(choice, given, nvidia, present)
    lock = load_pylock(choice.path)  # pylock.DEVICE.toml beside main
    _, variant = _recorded(choice.path, lock)  # bad input where it records another device
    if choice.device == "cuda":  # again, now that the lock's CUDA variant is known (its warning)
        choice = choose_lock(main, present, host, device, main_device=given_device,
                             cuda_variant=variant)
    return PickedLock(choice, lock, nvidia, present)


def _recorded(path: Path, lock: Pylock) -> tuple[str, str | None]:
    """What a read lock records it is for, and its CUDA variant (a forged table is bad input)."""
    from neuronctl.resolvers.pylock import fallback_of, neuronctl_table

    fallback = fallback_of(lock, str(path))
    device = recorded_device(path, neuronctl_table(lock), fallback)
    return device, (fallback or {}).get("variant")
