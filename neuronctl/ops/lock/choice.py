"""Which lock to install on this host: the Neuron lock (pylock.toml) or a fallback lock beside it
(pylock.cuda.toml, pylock.cpu.toml, written by `neuronctl lock --fallback`), and why.

`choose_lock` is pure: the hardware facts (Neuron devices, the NVIDIA driver as probes/nvidia.py
finds it), which fallback locks exist and `--device` go in; the lock, the reason and any warning
come out as text. `present_fallbacks` looks at the disk for it, and `pick_lock` gathers the facts
for `install --lock` (the hardware, the NVIDIA driver where it matters, what each lock records)
and reads the chosen lock.

Rules: `--device neuron|cuda|cpu` picks that lock (a missing fallback lock is bad input naming the
command that makes it). `auto`: Neuron devices -> the Neuron lock; else an NVIDIA GPU and a CUDA
lock -> the CUDA lock; else the Neuron lock (an environment prepared for a Neuron host, as
without fallbacks). A CUDA lock whose variant needs a newer driver than the host has is still
chosen, with a warning: its torch installs and runs, only without the GPU.

A fallback lock given to --lock (by its name, or by what it records: a CUDA lock copied over
pylock.toml is still a CUDA lock) is installed only where the hardware calls for its device
(HostDevices.device: Neuron devices -> neuron, else an NVIDIA driver -> cuda, else cpu) or where
--device names it; elsewhere it is bad input, one line saying how to insist.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct
from packaging.version import InvalidVersion, Version

from neuronctl.devices import DEVICES, FALLBACK_DEVICES
from neuronctl.errors import InputError

if TYPE_CHECKING:
    from packaging.pylock import Pylock

    from neuronctl.probes.hardware import HardwareReport
    from neuronctl.probes.nvidia import NvidiaFacts
    from neuronctl.probes.sysroot import SysRoot

_KIND = {"neuron": "the Neuron lock", "cuda": "the CUDA fallback lock", "cpu": "the CPU fallback lock"}


class HostDevices(Struct, frozen=True):
    """What the hardware probes found."""

    neuron_devices: int = 0
    nvidia_driver: str | None = None
    nvidia_source: str | None = None
    """Where the driver version came from (/sys/module/nvidia/version, nvidia-smi ...)."""

    @property
    def nvidia(self) -> str:
        where = f" (from {self.nvidia_source})" if self.nvidia_source else ""
        return f"NVIDIA driver {self.nvidia_driver}{where}"

    @property
    def device(self) -> str:
        """What the hardware calls for: neuron (Neuron devices), else cuda (an NVIDIA driver),
        else cpu."""
        if self.neuron_devices > 0:
            return "neuron"
        return "cuda" if self.nvidia_driver is not None else "cpu"

    @property
    def found(self) -> str:
        """What the hardware readers found, as the reasons say it."""
        if self.neuron_devices > 0:
            return f"{self.neuron_devices} Neuron device(s)"
        return self.nvidia if self.nvidia_driver is not None else "no Neuron device and no NVIDIA GPU"


class LockChoice(Struct, frozen=True):
    """The lock to install on this host (Neuron, CUDA or CPU), why, and what to warn about."""

    path: Path
    device: str
    """neuron, cuda or cpu: what the chosen lock is for."""
    reason: str
    warnings: tuple[str, ...] = ()

    def text(self) -> str:
        """The choice and why, one line (then one line per warning)."""
        lines = [f"lock: {self.path} ({self.reason})"]
        return "\n".join(lines + [f"warning: {w}" for w in self.warnings])

    def to_json(self) -> dict[str, object]:
        return {"path": str(self.path), "device": self.device, "reason": self.reason,
                "warnings": list(self.warnings)}


def fallback_lock_path(main: Path, device: str) -> Path:
    """Where `neuronctl lock --fallback DEVICE` puts the fallback lock of `main`."""
    return main.with_name(f"pylock.{device}.toml")


def lock_device(path: Path) -> str:
    """What a lock is for, by its PEP 751 name: pylock.cuda.toml -> cuda, else neuron."""
    name = path.name
    for device in FALLBACK_DEVICES:
        if name == f"pylock.{device}.toml":
            return device
    return "neuron"


def recorded_device(path: Path, tool: Mapping[str, object] | None,
                    fallback: Mapping[str, str] | None) -> str:
    """What a lock is for by what it records: its [tool.neuronctl] `fallback` device (`tool`: that
    table, None for a lock neuronctl did not make, whose name says; `fallback`: the table as
    resolvers.pylock.fallback_of validated it). A fallback lock copied to pylock.toml is still
    that fallback; a name that says another device than the lock records is bad input."""
    named = lock_device(path)
    if tool is None:
        return named
    recorded = fallback["device"] if fallback else "neuron"
    if named not in ("neuron", recorded):
        raise InputError(f"{path}: named as {_KIND[named]}, but its [tool.neuronctl] records "
                         f"{_KIND[recorded]}; rename it, or make it again with neuronctl lock")
    return recorded


def present_fallbacks(main: Path) -> frozenset[str]:
    """The devices whose fallback lock exists beside `main`."""
    return frozenset(d for d in FALLBACK_DEVICES if fallback_lock_path(main, d).is_file())


def driver_warning(driver: str | None, variant: str | None,
                   min_driver: Mapping[str, str]) -> str | None:
    """Why a CUDA variant will not see the GPU with this driver; None when it will (or when
    either version is unknown)."""
    need = min_driver.get(variant or "")
    if driver is None or need is None:
        return None
    try:
        too_old = Version(driver) < Version(need)
    except InvalidVersion:
        return None
    if not too_old:
        return None
    return (f"NVIDIA driver {driver} is older than {variant} needs (>= {need}): torch will not see "
            "the GPU; update the driver, or lock an older variant: neuronctl lock --fallback "
            "cuda=VARIANT")


def _missing(main: Path, device: str, why: str) -> InputError:
    path = fallback_lock_path(main, device)
    return InputError(f"{why}: no {path} beside {main}",
                      hint=f"make it with: neuronctl lock --fallback {device}"
                           + (f" -o {path}" if path.parent != Path(".") else ""))


def _given_fallback(main: Path, named: str, host: HostDevices, device: str,
                    cuda_variant: str | None, min_driver: Mapping[str, str] | None) -> LockChoice:
    """A fallback lock named on the command line (or recorded as one in a lock named otherwise)
    is installed where the hardware calls for that device, or where --device names it; anywhere
    else it is refused, since a Neuron host would get CUDA torch and nvidia-* without a word."""
    if device not in ("auto", named):
        raise InputError(f"--device {device}: {main} is {_KIND[named]}",
                         hint=f"pass the Neuron lock (pylock.toml) to choose by --device, or drop "
                              f"--device to install {main}")
    if device == "auto" and host.device != named:
        raise InputError(f"{main} is {_KIND[named]}, but this host has {host.found}: pass "
                         f"--device {named} to install it here anyway")
    why = f"--device {device}" if device != "auto" else host.found
    warnings = _cuda_warnings(host, cuda_variant, min_driver) if named == "cuda" else ()
    return LockChoice(main, named, f"{_KIND[named]}, named on the command line; {why}", warnings)


def choose_lock(main: Path, present: Collection[str], host: HostDevices, device: str = "auto", *,
                main_device: str | None = None, cuda_variant: str | None = None,
                min_driver: Mapping[str, str] | None = None) -> LockChoice:
    """The lock to install for `main` (the lock named by --lock) on this host. `main_device`: what
    main records it is for (recorded_device; default: what its name says); `cuda_variant`: the
    CUDA lock's variant (its [tool.neuronctl] fallback, resolvers.pylock.fallback_of);
    `min_driver`: variant -> oldest driver (default: the bundled table)."""
    if device not in DEVICES:
        raise InputError(f"--device {device!r}: expected one of {', '.join(DEVICES)}")
    named = main_device or lock_device(main)
    if named != "neuron":
        return _given_fallback(main, named, host, device, cuda_variant, min_driver)
    if device != "auto":
        return _chosen(main, present, host, device, f"--device {device}", cuda_variant, min_driver)
    if host.neuron_devices > 0:
        return LockChoice(main, "neuron", f"{host.neuron_devices} Neuron device(s) found: "
                                          f"{_KIND['neuron']}")
    if host.nvidia_driver is not None:
        if "cuda" in present:
            return _chosen(main, present, host, "cuda", f"no Neuron device; {host.nvidia}",
                           cuda_variant, min_driver)
        return LockChoice(main, "neuron", f"no Neuron device; {host.nvidia}, but no CUDA fallback "
                                          f"lock: {_KIND['neuron']}",
                          (f"no {fallback_lock_path(main, 'cuda')}: make the GPU fallback with "
                           "`neuronctl lock --fallback cuda`",))
    also = " (--device cpu installs the CPU fallback lock)" if "cpu" in present else ""
    return LockChoice(main, "neuron", "no Neuron device and no NVIDIA GPU: the Neuron lock, for an "
                                      f"environment prepared for a Neuron host{also}")


def _chosen(main: Path, present: Collection[str], host: HostDevices, device: str, why: str,
            cuda_variant: str | None, min_driver: Mapping[str, str] | None) -> LockChoice:
    if device == "neuron":
        return LockChoice(main, "neuron", f"{why}: {_KIND['neuron']}")
    if device not in present:
        raise _missing(main, device, why)
    warnings = _cuda_warnings(host, cuda_variant, min_driver) if device == "cuda" else ()
    variant = f", {cuda_variant}" if device == "cuda" and cuda_variant else ""
    return LockChoice(fallback_lock_path(main, device), device,
                      f"{why}: {_KIND[device]}{variant}", warnings)


def _cuda_warnings(host: HostDevices, cuda_variant: str | None,
                   min_driver: Mapping[str, str] | None) -> tuple[str, ...]:
    """Why torch from a CUDA lock will not see a GPU on this host, if it will not."""
    if host.nvidia_driver is None:
        return ("no NVIDIA driver found on this host: torch will not see a GPU here "
                "(fine when preparing an environment for another host)",)
    if min_driver is None:
        from neuronctl.routing import load_fallback_routing

        min_driver = load_fallback_routing()["cuda"].min_driver
    old = driver_warning(host.nvidia_driver, cuda_variant, min_driver)
    return (old,) if old else ()


class PickedLock(Struct, frozen=True):
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


def pick_lock(main: Path, device: str, hardware: HardwareReport, sysroot: SysRoot) -> PickedLock:
    """The lock to install for `--lock main` and `--device device` on the host `hardware`
    describes, read; bad input (exit 2) for a fallback lock that is asked for and absent, and
    for a lock recording a fallback device the hardware does not call for (unless --device names
    it): what a lock is for is what it records, not only its name."""
    from neuronctl.resolvers.pylock import load_pylock  # the lock reader: not on the doctor's path

    present = present_fallbacks(main)
    count = neuron_devices(hardware)
    nvidia = None
    if count == 0 or device == "cuda":  # the NVIDIA driver is looked for only then
        from neuronctl.probes.nvidia import detect_nvidia

        nvidia = detect_nvidia(sysroot)
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
