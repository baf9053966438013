"""The device vocabulary, declared once: what `--device` and config `device` may name.

`auto` picks from the hardware; `neuron` is the Neuron stack; `cuda` and `cpu` are the fallback
torch builds (their own locks, pylock.cuda.toml and pylock.cpu.toml)."""

from __future__ import annotations

from typing import Literal, get_args

Device = Literal["auto", "neuron", "cuda", "cpu"]
FallbackDevice = Literal["cuda", "cpu"]

DEVICES: tuple[Device, ...] = get_args(Device)
FALLBACK_DEVICES: tuple[FallbackDevice, ...] = get_args(FallbackDevice)
