"""Neuron chip generations and what each supports, kept as data.

Sources:
- PCI ids, driver arch, NeuronCores and HBM: aws-neuron-driver (neuron_pci.c, v1..v4 arch
  folders) and the Neuron "Trainium/Inferentia architecture" pages.
- sysfs arch_type / instance_type / device_name values: aws-neuron-driver neuron_sysfs_metrics.c.
- Native TorchNeuron only on Trn2/Trn3: Neuron 2.33 release notes ("TorchNeuron ... Trn2 and Trn3").
- FP8 (float8_e4m3fn) and MXFP8/MXFP4 only on Trn3: Neuron 2.33 release notes; the compiler
  rejects F8E4M3FN on Trn1/Trn2 (NCC_EVRF051).
"""

from __future__ import annotations

from dataclasses import dataclass

from neuronctl.errors import InputError

AMAZON_PCI_VENDOR = 0x1D0F


@dataclass(frozen=True)
class Chip:
    """One Neuron chip generation: how hardware detection knows it and what the stack may use on it."""

    id: str
    name: str
    pci_device_ids: tuple[int, ...]
    driver_arch: str
    arch_type: str
    device_name: str
    instance_families: tuple[str, ...]
    cores_per_chip: int
    hbm_gib: int | None
    native_torch: bool
    fp8: bool
    mx_formats: bool

    def supports(self) -> dict[str, bool]:
        return {"native_torch": self.native_torch, "fp8": self.fp8, "mxfp8": self.mx_formats}


CHIPS: tuple[Chip, ...] = (
    Chip("inf1", "Inferentia", (0x7064, 0x7065, 0x7066, 0x7067), "v1", "NDv1", "Inferentia",
         ("inf1",), 4, None, False, False, False),
    Chip("inf2", "Inferentia2", (0x7264,), "v2", "NDv3", "Inferentia2",
         ("inf2",), 2, 32, False, False, False),
    Chip("trn1", "Trainium", (0x7164,), "v2", "NDv2", "Trainium1",
         ("trn1", "trn1n"), 2, 32, False, False, False),
    Chip("trn2", "Trainium2", (0x7364,), "v3", "NDv3", "Trainium2",
         ("trn2", "trn2u", "trn2n"), 8, 96, True, False, False),
    Chip("trn3", "Trainium3", (0x7564, 0x7565), "v4", "NDv4", "Trainium3",
         ("trn3", "trn3p", "trn3e"), 8, 144, True, True, True),
)

CHIP_IDS: tuple[str, ...] = tuple(c.id for c in CHIPS)
NATIVE_CHIPS: tuple[str, ...] = tuple(c.id for c in CHIPS if c.native_torch)


def get_chip(chip_id: str) -> Chip:
    key = chip_id.strip().lower()
    for chip in CHIPS:
        if chip.id == key:
            return chip
    raise InputError(f"unknown chip {chip_id!r}: expected one of {', '.join(CHIP_IDS)}")


def chip_for_pci_device(device_id: int) -> Chip | None:
    for chip in CHIPS:
        if device_id in chip.pci_device_ids:
            return chip
    return None


def chip_for_device_name(device_name: str) -> Chip | None:
    key = device_name.strip().lower()
    for chip in CHIPS:
        if chip.device_name.lower() == key or chip.name.lower() == key:
            return chip
    return None


def chip_for_instance_type(instance_type: str) -> Chip | None:
    """Map "trn2u.48xlarge" (or the sysfs short form "Trn2") to its chip."""
    family = instance_type.strip().lower().split(".", 1)[0]
    for chip in CHIPS:
        if family in chip.instance_families:
            return chip
    return None


def normalize_instance_family(name: str) -> str | None:
    """The manifest says "trn1n" where the chip is trn1; fold such names onto chip ids."""
    chip = chip_for_instance_type(name)
    return chip.id if chip else None
