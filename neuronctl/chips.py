"""Neuron chip generations and what each supports, kept as data.

Sources:
- PCI ids, driver arch, NeuronCores and HBM: aws-neuron-driver (neuron_pci.c, v1..v4 arch
  folders) and the Neuron "Trainium/Inferentia architecture" pages.
- sysfs arch_type / instance_type / device_name values: aws-neuron-driver neuron_sysfs_metrics.c.
- Native TorchNeuron only on Trn2/Trn3: Neuron 2.33 release notes ("TorchNeuron ... Trn2 and Trn3").
- OCP FP8 (float8_e4m3fn) and MXFP8/MXFP4 only on Trn3: Neuron 2.33 release notes; the compiler
  rejects F8E4M3FN on Trn1/Trn2 (NCC_EVRF051). Trn1/Trn2 have the configurable cFP8 formats
  instead (the capability is named for what it is: `cfp8`, not "fp8"); whether Trn3 and Inf2
  also have them is not stated in the sources read (None: not published).
- Instance families: aws-neuron-driver's platform maps, v3/neuron_dhal_v3.c (trn2p, trn2eu,
  trn2u, trn2u-ac: UltraServer; trn2es: PDS; trn2en) at 6bbfbe23 and v4/neuron_dhal_v4.c (trn3e,
  trn3, trn3s-es, trn3sn, trn3sn-es, trn3p: UltraServer; 3xlarge sizes trn3pd98, trn3s-es,
  trn3sn, trn3sn-es.3xlarge, one device each) at 9cc489ec; trn2n from neuron-ls output
  (NEURON-FACTS).
- NeuronCores: sysfs `core_count` and the chip table count physical cores; neuron-ls `nc_count`
  counts logical ones at its LNC (`logical_neuroncore_config`). LNC (1 or 2) exists on Trn2/Trn3
  only; Trn2's default is 2 (8 physical -> 4 logical a chip). The two are never one number.
"""

from __future__ import annotations

from msgspec import Struct

from neuronctl.errors import InputError

AMAZON_PCI_VENDOR = 0x1D0F


class Chip(Struct, frozen=True):
    """One Neuron chip generation: how hardware detection knows it and what the stack may use on it."""

    id: str
    name: str
    pci_device_ids: tuple[int, ...]
    driver_arch: str
    arch_type: str
    device_name: str
    instance_families: tuple[str, ...]
    cores_per_chip: int
    """Physical NeuronCores a chip."""
    hbm_gib: int | None
    native_torch: bool
    ocp_fp8: bool
    """OCP float8_e4m3fn (native FP8)."""
    mxfp8: bool
    """MX formats (MXFP8/MXFP4)."""
    cfp8: bool | None
    """The configurable cFP8 formats; None where no source says."""
    lnc: bool = False
    """Whether the logical NeuronCore setting (LNC 1 or 2) applies."""

    @property
    def fp8(self) -> bool:
        """The old name of `ocp_fp8` (kept: it was in `detect --json` as supports.fp8)."""
        return self.ocp_fp8

    def supports(self) -> dict[str, bool | None]:
        return {"native_torch": self.native_torch, "ocp_fp8": self.ocp_fp8, "mxfp8": self.mxfp8,
                "cfp8": self.cfp8,
                "fp8": self.ocp_fp8}  # the old key, meaning OCP FP8: kept for existing readers

    def logical_cores(self, physical: int, lnc: int | None) -> int | None:
        """Physical NeuronCores as logical ones at `lnc`; None where LNC applies but is unknown."""
        if not self.lnc:
            return physical
        if lnc not in (1, 2):
            return None
        return physical // lnc

    def physical_cores(self, logical: int, lnc: int | None) -> int | None:
        if not self.lnc:
            return logical
        if lnc not in (1, 2):
            return None
        return logical * lnc


CHIPS: tuple[Chip, ...] = (
    Chip("inf1", "Inferentia", (0x7064, 0x7065, 0x7066, 0x7067), "v1", "NDv1", "Inferentia",
         ("inf1",), 4, None, False, False, False, None),
    Chip("inf2", "Inferentia2", (0x7264,), "v2", "NDv3", "Inferentia2",
         ("inf2",), 2, 32, False, False, False, None),
    Chip("trn1", "Trainium", (0x7164,), "v2", "NDv2", "Trainium1",
         ("trn1", "trn1n"), 2, 32, False, False, False, True),
    Chip("trn2", "Trainium2", (0x7364,), "v3", "NDv3", "Trainium2",
         ("trn2", "trn2n", "trn2u", "trn2p", "trn2eu", "trn2u-ac", "trn2es", "trn2en"), 8, 96,
         True, False, False, True, lnc=True),
    Chip("trn3", "Trainium3", (0x7564, 0x7565), "v4", "NDv4", "Trainium3",
         ("trn3", "trn3p", "trn3e", "trn3pd98", "trn3s-es", "trn3sn", "trn3sn-es"), 8, 144,
         True, True, True, None, lnc=True),
)

DEVICES_BY_INSTANCE: dict[str, int] = {
    # Neuron devices (chips) by instance type, where a source gives them: NEURON-FACTS for inf2,
    # trn1 and the trn2 48xlarge sizes; aws-neuron-driver v4/neuron_dhal_v4.c for Trn3's 3xlarge
    # sizes ("3xl instances ... only have 1 device"). trn2.3xlarge: not published.
    "inf2.xlarge": 1, "inf2.8xlarge": 1, "inf2.24xlarge": 6, "inf2.48xlarge": 12,
    "trn1.2xlarge": 1, "trn1.32xlarge": 16, "trn1n.32xlarge": 16,
    "trn2.48xlarge": 16, "trn2u.48xlarge": 16,
    "trn3pd98.3xlarge": 1, "trn3s-es.3xlarge": 1, "trn3sn.3xlarge": 1, "trn3sn-es.3xlarge": 1,
}


def devices_for_instance(instance_type: str) -> int | None:
    """How many Neuron devices an instance type has, where a source says; else None."""
    return DEVICES_BY_INSTANCE.get(instance_type.strip().lower())

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
