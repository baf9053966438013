"""The device vocabulary, declared once: what `--device` and config `device` may name.

`auto` picks from the hardware; `neuron` is the Neuron stack; `cuda` and `cpu` are the fallback
torch builds (their own locks, pylock.cuda.toml and pylock.cpu.toml)."""

from __future__ import annotations

from typing import Literal, get_args

Device = Literal["auto", "neuron", "cuda", "cpu"]
FallbackDevice = Literal["cuda", "cpu"]

DEVICES: tuple[Device, ...] = get_args(Device)
FALLBACK_DEVICES: tuple[FallbackDevice, ...] = get_args(FallbackDevice)

Verdict = Literal["device-ok", "cpu-run", "failed"]
"""What a probe or smoke run proves (the JSON's `verdict`): a CPU run that passed checks torch or
the model, never a device, so it is never "device-ok" (issue 32 item 10)."""

CPU_RUN = "a CPU run, which checks torch and the model, not a device"


def verdict(ok: bool, device: str | None) -> Verdict:
    if not ok:
        return "failed"
    return "cpu-run" if device in (None, "cpu") else "device-ok"
