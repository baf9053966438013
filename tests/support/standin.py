"""The stand-in `neuron` backend (tests/support/standin_neuron), built as real wheels and installed with
real pip into a real venv: the target the device probe, the doctor and smoke run against.

Two wheels, both test doubles that never reach neuronctl's wheel:
- torch-neuronx 2.13.3.0 (import name torch_neuronx, autoload entry point in `torch.backends`),
  installed into the venv;
- rival-backend 0.1 (a competing PrivateUse1 backend, "rival"), installed with `pip --target`
  into a folder of its own: put on PYTHONPATH, that folder comes before the venv's site-packages
  on sys.path, so its autoload entry point runs before torch_neuronx's (entry points are found
  in sys.path order; inside one folder the order is the file system's, which no test can pin).

Installing the 700 MB torch wheel per session is too slow for CI on 2 cores, so the venv sees
the test venv's torch and transformers (already installed) through a `.pth` file naming the test
venv's site-packages, placed after its own site-packages; only the stand-in wheels are installed,
with the real pip, offline and without dependencies (`--no-index --no-deps`,
PIP_CONFIG_FILE=os.devnull), as tests/support/wheels.py does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.wheels import build_wheel, make_venv, pip_install, site_packages

SOURCE = Path(__file__).resolve().parent / "standin_neuron"
VERSION = "2.13.3.0"
"""The native torch-neuronx that the default release (Neuron 2.33.1) pins for torch 2.13."""
SWITCHES = ("NEURON_STANDIN_AUTOLOAD_FAIL", "NEURON_STANDIN_EXPLICIT_IMPORT",
            "NEURON_STANDIN_COMPILE_FAIL", "NEURON_STANDIN_DEVICE_COUNT",
            "NEURON_STANDIN_LOG_FALLBACK")


def _sources(*names: str) -> dict[str, str]:
    files: dict[str, str] = {}
    for name in names:
        path = SOURCE / name
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            files[file.relative_to(SOURCE).as_posix()] = file.read_text()
    return files


def build_standin_wheels(outdir: Path) -> tuple[Path, Path]:
    """The stand-in torch-neuronx wheel and the rival backend's wheel."""
    neuron = _sources("torch_neuronx", "_torch_neuronx_autoload.py")
    neuron[f"torch_neuronx-{VERSION}.dist-info/entry_points.txt"] = (
        "[torch.backends]\ntorch_neuronx = _torch_neuronx_autoload:autoload\n")
    rival = _sources("rival_backend")
    rival["rival_backend-0.1.dist-info/entry_points.txt"] = (
        "[torch.backends]\nrival_backend = rival_backend:autoload\n")
    summary = "neuronctl test double of torch-neuronx (never released)"
    return (build_wheel(outdir, "torch-neuronx", VERSION, files=neuron, summary=summary),
            build_wheel(outdir, "rival-backend", "0.1", files=rival,
                        summary="neuronctl test double: a competing PrivateUse1 backend"))


def torch_venv(venv: Path, wheels: list[Path]) -> Path:
    """A venv seeing our torch (and transformers) through a .pth, with `wheels` pip-installed."""
    python = make_venv(venv)
    ours = sysconfig.get_paths()["purelib"]
    # "zz-": .pth files are read in name order; ours adds to sys.path after the venv's own.
    (site_packages(venv) / "zz-neuronctl-test-torch.pth").write_text(ours + "\n")
    if wheels:
        pip_install(python, wheels)
    return python


def make_standin_venv(root: Path) -> tuple[Path, Path]:
    """A venv with the stand-in installed, seeing our torch; and the rival's folder."""
    neuron_wheel, rival_wheel = build_standin_wheels(root / "wheels")
    python = torch_venv(root / "venv", [neuron_wheel])
    rival = root / "rival"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    "--no-cache-dir", "--target", str(rival), str(rival_wheel)],
                   check=True, capture_output=True, env=env)
    return python, rival


@dataclass(frozen=True)
class Standin:
    """The stand-in venv's python, the rival backend's folder, and environments for each case."""

    python: Path
    rival: Path

    def env(self, base: Mapping[str, str] | None = None, *, rival: bool = False,
            **switches: str) -> dict[str, str]:
        """os.environ (or `base`) with the stand-in's switches as given (NEURON_STANDIN_ + key
        upper-cased, e.g. device_count="0") and none left over; rival=True puts the competing
        backend first."""
        env = {k: v for k, v in (os.environ if base is None else base).items()
               if k not in SWITCHES and k != "PYTHONPATH"}
        for key, value in switches.items():
            name = f"NEURON_STANDIN_{key.upper()}"
            assert name in SWITCHES, name
            env[name] = value
        if rival:
            env["PYTHONPATH"] = str(self.rival)
        return env


@pytest.fixture(scope="session")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Standin:
    """Built once per session (a few seconds: two small wheels, one venv, pip twice)."""
    python, rival = make_standin_venv(tmp_path_factory.mktemp("standin"))
    return Standin(python, rival)


@pytest.fixture(scope="session")
def standin_python(standin: Standin) -> Path:
    """The python of a venv where `import torch` autoloads the stand-in `neuron` backend."""
    return standin.python


FAKE_PLUGIN = '''
import types
import torch


def _autoload():
    torch.utils.rename_privateuse1_backend("neuron")
    mod = types.ModuleType("torch_neuron_fake")
    mod.is_available = lambda: True
    mod.device_count = lambda: 2
    mod.current_device = lambda: 0
    torch._register_device_module("neuron", mod)
'''


def fake_neuron_plugin(root: Path) -> Path:
    """A tiny PrivateUse1 plugin named "neuron" under `root` (put it on PYTHONPATH), loaded by
    torch's backend autoload like the real one: it registers the device and has no kernels, so
    the first move to the device is where a run fails. Returns `root`."""
    (root / "fake_neuron").mkdir()
    (root / "fake_neuron" / "__init__.py").write_text(FAKE_PLUGIN)
    info = root / "fake_neuron-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-neuron\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[torch.backends]\nfake_neuron = fake_neuron:_autoload\n")
    return root
