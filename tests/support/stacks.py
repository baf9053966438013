"""Throwaway venvs holding small wheels with realistic Neuron metadata and files."""

from __future__ import annotations

import sys
from pathlib import Path

from support.wheels import build_wheel, find_python, make_venv, pip_install

WRONG = ('raise Exception("WRONG PACKAGE. Please install the package from Neuron Repository: '
         'https://pip.repos.neuron.amazonaws.com")\n')


def _legacy_torch_neuronx(out: Path, version: str) -> Path:
    """A legacy XLA torch-neuronx wheel: its Requires-Dist and `xla_impl/` files."""
    return build_wheel(
        out, "torch-neuronx", version,
        requires=("libneuronxla==2.2.*", "numpy", "protobuf", "psutil", "torch==2.9.0",
                  "torch-xla==2.9.*"),
        files={"torch_neuronx/__init__.py": "", "torch_neuronx/xla_impl/__init__.py": "",
               "torch_neuronx/xla_impl/trace.py": "", "torch_neuronx/xla_impl/data_parallel.py": ""})


def wheel_set(out: Path) -> dict[str, Path]:
    w = {}
    w["torch-2.14"] = build_wheel(out, "torch", "2.14.0+cpu", requires=("filelock", "sympy>=1.13.3"),
                                  files={"torch/__init__.py": '__version__ = "2.14.0+cpu"\n'})
    w["torch-2.13"] = build_wheel(out, "torch", "2.13.0+cpu", requires=("filelock",),
                                  files={"torch/__init__.py": '__version__ = "2.13.0+cpu"\n'})
    w["torch-2.9"] = build_wheel(out, "torch", "2.9.0", requires=("filelock",),
                                 files={"torch/__init__.py": '__version__ = "2.9.0"\n'})
    w["torch-cuda"] = build_wheel(out, "torch", "2.14.0",
                                  requires=("filelock", "nvidia-cublas-cu12==12.8.4.1; "
                                            "platform_system == 'Linux'"),
                                  files={"torch/__init__.py": '__version__ = "2.14.0"\n'})
    w["tnx-native"] = build_wheel(
        out, "torch-neuronx", "2.14.3.0", requires=("torch==2.14.*", "neuronx-cc==2.*", "nki>=0.6"),
        files={"torch_neuronx/__init__.py": "", "torch_neuronx/_C.py": "",
               "torch_neuronx/nki.py": ""}, requires_python=">=3.12")
    w["tnx-legacy"] = _legacy_torch_neuronx(out, "2.9.0.2.15.32035+de43f57c")  # 2.33.x ships it
    # A legacy XLA build no Neuron release ships: the doctor fails it under a native release.
    w["tnx-legacy-unshipped"] = _legacy_torch_neuronx(out, "2.9.0.2.15.30001+0c0ffee0")
    w["tnx-placeholder"] = build_wheel(out, "torch-neuronx", "1.0",
                                       files={"torch_neuronx/__init__.py": WRONG})
    w["cc-placeholder"] = build_wheel(out, "neuronx-cc", "1.0.post1",
                                      files={"neuronxcc/__init__.py": WRONG})
    w["torch-xla"] = build_wheel(out, "torch-xla", "2.9.0", files={"torch_xla/__init__.py": ""})
    w["libneuronxla"] = build_wheel(out, "libneuronxla", "2.2.17544.0",
                                    files={"libneuronxla/__init__.py": ""})
    w["cc-2.28"] = build_wheel(out, "neuronx-cc", "2.28.7631.0+6f180f47",
                               files={"neuronxcc/__init__.py": ""})
    w["cc-2.26"] = build_wheel(out, "neuronx-cc", "2.26.6360.0", files={"neuronxcc/__init__.py": ""})
    w["nki-0.7"] = build_wheel(out, "nki", "0.7.0", files={"nki/__init__.py": ""})
    w["nrtpy"] = build_wheel(out, "nrtpy", "2.34.10", files={"nrtpy/__init__.py": ""})
    return w


STACKS = {
    "native": ("3.12", ["torch-2.14", "tnx-native", "cc-2.28", "nki-0.7"]),
    "legacy": ("3.11", ["torch-2.9", "tnx-legacy", "torch-xla", "libneuronxla", "cc-2.26"]),
    "legacy-unshipped": ("3.11", ["torch-2.9", "tnx-legacy-unshipped", "torch-xla", "libneuronxla",
                                  "cc-2.26"]),
    "placeholder": ("3.12", ["torch-2.14", "tnx-placeholder", "cc-placeholder"]),
    "clash": ("3.12", ["torch-2.13", "tnx-native", "cc-2.28", "nki-0.7", "nrtpy"]),
    "cuda": ("3.12", ["torch-cuda", "tnx-native", "cc-2.28", "nki-0.7"]),
    "empty": ("3.11", []),
}


def build_stacks(root: Path) -> dict[str, Path]:
    wheels = wheel_set(root / "wheels")
    out = {}
    for name, (minor, parts) in STACKS.items():
        python = sys.executable if minor == "3.11" else find_python(minor)
        py = make_venv(root / name, python)
        if parts:
            pip_install(py, [wheels[p] for p in parts])
        out[name] = py
    return out
