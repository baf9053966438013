"""PyPI placeholder ("WRONG PACKAGE") versions (RELEASE-FACTS section 8): a doctor flags each
when installed; neuron-cc 1.0.post1, the one a version compare of 1.0 misses, in a real venv."""

from __future__ import annotations

import json
import sys

import pytest
from support.stacks import WRONG
from support.wheels import build_wheel, make_venv, pip_install

from neuronctl.torch_neuronx import PLACEHOLDER_SOURCES, PLACEHOLDERS, is_placeholder

SECTION_8 = {
    "neuron-cc": ("1.0", "1.0.post1"), "jax-neuron": ("1.0",), "jaxlib-neuronx": ("1.0",),
    "neuronx-hwm": ("1.0",), "tensorflow-neuronx": ("1.0",), "tensorboard-neuron": ("1.0",),
    "tensorboard-plugin-neuronx": ("1.0",), "libtorch-neuronx-lite": ("0.0.1",),
    "transformers-neuronx": ("0.1",),
}


@pytest.mark.parametrize(("name", "versions"), sorted(SECTION_8.items()))
def test_every_listed_placeholder_is_known(name, versions):
    for version in versions:
        assert is_placeholder(name, version), (name, version)
        assert is_placeholder(name.replace("-", "_").upper(), version)
    assert PLACEHOLDER_SOURCES[name] == f"https://pypi.org/project/{name}/"


def test_real_releases_are_not_placeholders():
    assert not is_placeholder("transformers-neuronx", "0.13.470")
    assert not is_placeholder("neuron-cc", "1.24.0.0")
    assert not is_placeholder("libtorch-neuronx-lite", "2.14.0.1.0.4089")
    assert set(SECTION_8) <= set(PLACEHOLDERS)


def test_doctor_fails_on_neuron_cc_1_0_post1_in_a_venv(cli, tmp_path):
    wheel = build_wheel(tmp_path / "w", "neuron-cc", "1.0.post1",
                        files={"neuroncc/__init__.py": WRONG})
    py = make_venv(tmp_path / "venv", sys.executable)
    pip_install(py, [wheel])
    r = cli("doctor", "--level", "1", "--only", "packages.placeholders", "--python", str(py),
            "--json")
    check = next(c for c in json.loads(r.out)["checks"] if c["id"] == "packages.placeholders")
    assert check["status"] == "fail" and "neuron-cc 1.0.post1" in check["message"]
