import pytest

from neuronctl.chips import chip_for_instance_type, chip_for_pci_device, get_chip
from neuronctl.errors import InputError
from neuronctl.torch_neuronx import classify, is_placeholder, torch_matches


@pytest.mark.parametrize(
    ("version", "flavour", "torch"),
    [
        ("2.14.3.0", "native", "2.14"),
        ("2.13.3.0", "native", "2.13"),
        ("2.14.3.0+abc1234", "native", "2.14"),
        ("2.9.0.2.15.32035", "xla", "2.9.0"),
        ("2.9.0.2.15.32035+de43f57c", "xla", "2.9.0"),
        ("1.13.1.1.14.0", "xla", "1.13.1"),
        ("2.1.2.2.3.0", "xla", "2.1.2"),
        ("2.5.1.2.4.0", "xla", "2.5.1"),
        ("2.1.1.2.0.1b0", "xla", "2.1.1"),
        ("2.6.0.2.7.5413", "xla", "2.6.0"),
        ("1.0", "placeholder", None),
        ("2.11.0", "unknown", None),
    ],
)
def test_classify_real_versions(version, flavour, torch):
    info = classify(version)
    assert info.flavour == flavour
    assert info.torch == torch


def test_classify_keeps_local_label_and_neuron_part():
    info = classify("2.9.0.2.15.32035+de43f57c")
    assert info.local == "de43f57c"
    assert info.public == "2.9.0.2.15.32035"
    assert info.neuron == "2.15.32035"
    assert info.torch_requirement() == "==2.9.0"
    assert classify("2.14.3.0").torch_requirement() == "==2.14.*"


def test_classify_rejects_garbage():
    with pytest.raises(InputError, match="not a PEP 440 version"):
        classify("banana")


def test_torch_matches_lines():
    native = classify("2.14.3.0")
    assert torch_matches("2.14.0+cpu", native)
    assert not torch_matches("2.13.0+cpu", native)
    legacy = classify("2.9.0.2.15.32035")
    assert torch_matches("2.9.0", legacy)
    assert not torch_matches("2.9.1", legacy)


def test_placeholders():
    assert is_placeholder("torch-neuronx", "1.0")
    assert is_placeholder("neuronx_cc", "1.0.post1")
    assert is_placeholder("nki", "0.0.1")
    assert not is_placeholder("nki", "0.7.0")


def test_chip_support():
    # OCP FP8 and MX formats are Trn3's; Trn1/Trn2 have cFP8; "fp8" is the old key (= ocp_fp8)
    assert get_chip("trn3").supports() == {"native_torch": True, "ocp_fp8": True, "mxfp8": True,
                                           "cfp8": None, "fp8": True}
    assert get_chip("TRN2").supports() == {"native_torch": True, "ocp_fp8": False, "mxfp8": False,
                                           "cfp8": True, "fp8": False}
    assert get_chip("trn1").supports()["cfp8"] is True and get_chip("trn2").fp8 is False
    for chip in ("trn1", "inf2", "inf1"):
        assert get_chip(chip).native_torch is False
    with pytest.raises(InputError, match="unknown chip"):
        get_chip("trn9")


def test_chip_lookup_by_pci_and_instance():
    assert chip_for_pci_device(0x7364).id == "trn2"
    assert chip_for_pci_device(0x7565).id == "trn3"
    assert chip_for_pci_device(0x7264).id == "inf2"
    assert chip_for_pci_device(0x1234) is None
    assert chip_for_instance_type("trn2u.48xlarge").id == "trn2"
    assert chip_for_instance_type("trn1n.32xlarge").id == "trn1"
    assert chip_for_instance_type("Trn3").id == "trn3"
    assert chip_for_instance_type("m5.large") is None
