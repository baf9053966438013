"""No leftovers: what only a replaced or removed stack required leaves with it (the pure graph walk
of backend/leftovers.py), and end to end, a CUDA torch's nvidia-* and triton leave a venv moved to
the Neuron stack, with both engines."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from neuronctl.backend.leftovers import Going, leftovers

LINUX = {"platform_system": "Linux", "platform_machine": "x86_64", "python_version": "3.12",
         "sys_platform": "linux"}


@dataclass(frozen=True)
class Dist:
    version: str
    requires: tuple[str, ...] = ()
    requested: bool = False


def cuda_env(**more: Dist) -> dict[str, Dist]:
    env = {
        "torch": Dist("2.14.0+cu130", ("filelock", "nvidia-cublas-cu13==13.1; platform_system == 'Linux'",
                                       "triton==3.6.0; platform_machine == 'x86_64'", "setuptools")),
        "nvidia-cublas-cu13": Dist("13.1", ("nvidia-cuda-runtime-cu13",)),
        "nvidia-cuda-runtime-cu13": Dist("13.0.96"),
        "triton": Dist("3.6.0"),
        "filelock": Dist("3.16.1"),
        "setuptools": Dist("80.0"),
        "pip": Dist("25.0"),
    }
    env.update(more)
    return env


TORCH = Going("torch", "2.14.0+cu130", "replaced")
STACK = {"torch", "filelock", "torch-neuronx", "neuronx-cc", "nki"}


def test_what_only_the_replaced_torch_required_leaves_with_its_reason():
    left = leftovers(cuda_env(), [TORCH], STACK, LINUX)
    assert set(left) == {"nvidia-cublas-cu13", "nvidia-cuda-runtime-cu13", "triton"}
    assert left["triton"] == "only required by torch 2.14.0+cu130, which is replaced"
    # Transitively: the runtime came in through cublas, and is still named after torch.
    assert left["nvidia-cuda-runtime-cu13"] == left["triton"]


def test_a_package_the_user_asked_for_by_name_is_never_a_leftover():
    # pip resolved torch's dependencies (no REQUESTED) but the user installed triton by name, and
    # cublas: what cublas requires stays with it.
    env = cuda_env(triton=Dist("3.6.0", requested=True),
                   **{"nvidia-cublas-cu13": Dist("13.1", ("nvidia-cuda-runtime-cu13",), True)})
    assert leftovers(env, [TORCH], STACK, LINUX) == {}
    env = cuda_env(triton=Dist("3.6.0", requested=True))
    assert set(leftovers(env, [TORCH], STACK, LINUX)) == {"nvidia-cublas-cu13",
                                                          "nvidia-cuda-runtime-cu13"}


def test_requested_on_everything_says_nothing():
    # A --no-deps install from a lock (or `pip install *.whl`) marks every package REQUESTED.
    env = {name: Dist(d.version, d.requires, True) for name, d in cuda_env().items()}
    assert set(leftovers(env, [TORCH], STACK, LINUX)) == {"nvidia-cublas-cu13",
                                                          "nvidia-cuda-runtime-cu13", "triton"}


def test_the_inspection_reports_requested_and_validates_it():
    from neuronctl.probes.pyenv import MalformedInspection, _dist

    base = {"name": "triton", "version": "3.6.0"}
    assert _dist({**base, "requested": True}).requested is True
    assert _dist(base).requested is False
    with pytest.raises(MalformedInspection, match="requested"):
        _dist({**base, "requested": "yes"})


def test_what_something_staying_requires_stays_and_what_that_requires_too():
    env = cuda_env(myapp=Dist("1.0", ("Triton>=3",)),
                   other=Dist("1.0", ("nvidia_cublas_cu13; extra == 'gpu'",)))
    left = leftovers(env, [TORCH], STACK, LINUX)
    # myapp (not in the plan, so it stays) requires triton; other's extra may be installed.
    assert left == {}
    env = cuda_env(other=Dist("1.0", ("nvidia-cuda-runtime-cu13",)))
    assert set(leftovers(env, [TORCH], STACK, LINUX)) == {"nvidia-cublas-cu13", "triton"}


def test_the_new_stack_and_installer_tooling_never_leave():
    env = cuda_env(**{"filelock": Dist("3.16.1"), "triton": Dist("3.6.0")})
    left = leftovers(env, [TORCH], STACK | {"triton"}, LINUX)
    assert "triton" not in left and "filelock" not in left and "setuptools" not in left
    assert "pip" not in left and "torch" not in left


def test_markers_that_do_not_hold_and_extras_do_not_make_leftovers():
    env = cuda_env()
    mac = {**LINUX, "platform_system": "Darwin"}
    assert set(leftovers(env, [TORCH], STACK, mac)) == {"triton"}
    env["torch"] = Dist("2.14.0+cu130", ("triton; extra == 'cuda'",))
    assert leftovers(env, [TORCH], STACK, LINUX) == {}


def test_untrusted_requirement_text_names_nothing():
    env = cuda_env()
    env["torch"] = Dist("2.14.0+cu130", ("../../etc ; rm -rf", "x" * 5000, "triton; os_name ~= 'x'",
                                         "not-installed-at-all", "triton[" ))
    assert leftovers(env, [TORCH], STACK, LINUX) == {}


def test_removed_and_replaced_roots_are_both_named():
    env = cuda_env(**{"torch-xla": Dist("2.9.0", ("triton",))})
    left = leftovers(env, [TORCH, Going("torch-xla", "2.9.0", "removed")], STACK, LINUX)
    assert left["triton"] == ("only required by torch 2.14.0+cu130 and torch-xla 2.9.0, which are "
                              "replaced or removed")
    assert leftovers(env, [], STACK, LINUX) == {}


# End to end: a venv with a CUDA torch (built here) moved to the Neuron stack's CPU torch.

ENGINES = ["pip", "uv"]


def cuda_venv(root: Path) -> Path:
    from support.wheels import build_wheel, find_python, make_venv, pip_install

    out = root / "cuda-wheels"
    wheels = [
        build_wheel(out, "torch", "2.14.0+cu130",
                    requires=("filelock", "nvidia-cublas-cu13==13.1.0.3; platform_system == 'Linux'",
                              "triton==3.6.0")),
        build_wheel(out, "nvidia-cublas-cu13", "13.1.0.3", requires=("nvidia-cuda-runtime-cu13",)),
        build_wheel(out, "nvidia-cuda-runtime-cu13", "13.0.96"),
        build_wheel(out, "triton", "3.6.0"),
        build_wheel(out, "filelock", "3.16.1"),
        build_wheel(out, "mytool", "1.0", requires=("nvidia-cuda-runtime-cu13",)),
    ]
    py = make_venv(root / "cuda", find_python("3.12"), with_pip=True)
    pip_install(py, wheels)
    return root / "cuda"


@pytest.mark.slow
@pytest.mark.parametrize("engine", ENGINES)
def test_cuda_torch_moved_to_the_neuron_stack_loses_its_cuda_packages(cli, uni, tmp_path, engine):
    from support.venvs import installed

    assert cli("lock", *uni.index_flags(), "--python", "3.12").code == 0
    venv = cuda_venv(tmp_path)
    r = cli("install", "--lock", "pylock.toml", "--python", str(venv), "--engine", engine,
            "--dry-run")
    assert r.code == 0, r.err + r.out
    assert "nvidia-cublas-cu13" in r.out and "triton" in r.out
    assert "only required by torch 2.14.0+cu130, which is replaced" in r.out
    r = cli("install", "--lock", "pylock.toml", "--python", str(venv), "--engine", engine)
    assert r.code == 2 and "pass --yes" in r.err and "nvidia-cublas-cu13 13.1.0.3" in r.err
    r = cli("install", "--lock", "pylock.toml", "--python", str(venv), "--engine", engine, "--yes",
            "--no-check")
    assert r.code == 0, r.err + r.out
    got = installed(venv / "bin" / "python")
    assert got["torch"] == "2.14.0+cpu" and got["torch-neuronx"] == "2.14.3.0"
    assert "nvidia-cublas-cu13" not in got and "triton" not in got
    # mytool stays, and so does the runtime it requires.
    assert got["mytool"] == "1.0" and got["nvidia-cuda-runtime-cu13"] == "13.0.96"


def test_the_real_inspection_sees_requested(tmp_path):
    import sys

    from neuronctl.probes.pyenv import inspect_python

    env = inspect_python(sys.executable, tags=False)
    # This venv's neuronctl was installed by name (pip install -e .): pip wrote REQUESTED.
    assert env.distributions["neuronctl"].requested is True
    assert any(not d.requested for d in env.distributions.values())
