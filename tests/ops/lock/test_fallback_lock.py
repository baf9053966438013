"""`neuronctl lock --fallback`: a GPU (or CPU) fallback lock beside the Neuron one, against real
loopback indexes (PyPI-, PyTorch-CPU-, Neuron- and PyTorch-CUDA-like), checked with
packaging.pylock and installed by uv (--dry-run: no GPU here) on a host whose sysroot fakes an
NVIDIA driver."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.pylock import Pylock
from support.wheels import find_python, make_venv

from neuronctl.errors import InputError
from neuronctl.ops.lock.choice import HostDevices, choose_lock, present_fallbacks
from neuronctl.probes.nvidia import detect_nvidia
from neuronctl.probes.sysroot import SysRoot
from neuronctl.resolvers.pylock import fallback_of, load_pylock
from neuronctl.resolvers.stack_roots import neuron_packages
from neuronctl.routing import fallback_base_routing, load_fallback_routing
from neuronctl.tomlfile import read_toml

NVIDIA = {"nvidia-cublas", "nvidia-cuda-runtime", "nvidia-cudnn-cu13", "nvidia-nccl-cu13"}


def pins(lock: Pylock) -> dict[str, str]:
    return {str(p.name): str(p.version) for p in lock.packages}


def test_cuda_fallback_lock_holds_the_cuda_torch_its_nvidia_deps_and_no_neuron_package(cli, cu,
                                                                                      cuda_wheels):
    r = cli("lock", *cu.index_flags(), "--python", "3.12", "--fallback", "cuda")
    assert r.code == 0, r.err
    assert "torch 2.14.0+cu130, cuda fallback of Neuron 2.33.1" in r.out and "pylock.cuda.toml" in r.out
    assert not Path("pylock.toml").exists()  # the fallback goes beside it, never over it
    lock = load_pylock(Path("pylock.cuda.toml"))  # packaging.pylock validates it
    got = pins(lock)
    assert got["torch"] == "2.14.0+cu130"  # the +cu128 build on the same index is not it
    assert got.keys() >= NVIDIA and got["triton"] == "3.6.0"
    assert not got.keys() & neuron_packages()
    index_of = {str(p.name): p.index for p in lock.packages}
    for name in (*NVIDIA, "torch", "triton"):
        assert index_of[name] == cu.url  # as download.pytorch.org/whl/cu130 lists them
    # ... while the nvidia-* files stay on their upstream host, where that index links.
    urls = {str(p.name): [w.url for w in p.wheels or ()] for p in lock.packages}
    assert all(u.startswith(cu.upstream_url + "/files/") for n in NVIDIA for u in urls[n])
    assert all(u.startswith(cu.url.removesuffix("/simple")) for u in urls["torch"])
    real = {w.name: hashlib.sha256(w.read_bytes()).hexdigest() for w, _ in cuda_wheels}
    assert all(w.hashes["sha256"] == real[w.name] for p in lock.packages if str(p.name) in NVIDIA
               for w in p.wheels or ())
    assert index_of["filelock"] == cu.uni.urls["pypi"]
    assert fallback_of(lock) == {"device": "cuda", "variant": "cu130"}
    tool = read_toml(Path("pylock.cuda.toml"), "lock")["tool"]["neuronctl"]
    assert "torch-neuronx" not in tool and tool["pins"] == {"torch": "2.14.0+cu130"}
    assert tool["indexes"]["pytorch-cuda"] == cu.url and tool["torch"] == "2.14.0"
    # The Neuron indexes were never asked for a Neuron name: no Neuron package was wanted.
    assert not [h for h in cu.uni.neuron.hits if "/simple/" in h[1]]


def test_fallback_check_and_the_neuron_lock_beside_it(cli, cu):
    flags = [*cu.index_flags(), "--python", "3.12", "--with", "transformers"]
    assert cli("lock", *flags, "--fallback", "cuda").code == 0
    assert cli("lock", *flags).code == 0
    main = read_toml(Path("pylock.toml"), "lock")["tool"]["neuronctl"]
    assert "pytorch-cuda" not in main["indexes"] and "fallback" not in main
    assert pins(load_pylock(Path("pylock.toml")))["torch"] == "2.14.0+cpu"
    assert pins(load_pylock(Path("pylock.cuda.toml")))["transformers"] == "4.50.0"  # same --with
    r = cli("lock", *flags, "--fallback", "cuda", "--check")
    assert r.code == 0 and "pylock.cuda.toml: up to date (torch 2.14.0+cu130" in r.out
    r = cli("lock", *flags, "--fallback", "cuda=cu128", "--check")
    assert r.code == 1 and "fallback: variant: lock has cu130, requested cu128" in r.err
    assert "--fallback=cuda=cu128" in r.err  # the refresh command keeps the flag
    r = cli("lock", *flags, "--check", "-o", "pylock.cuda.toml")
    assert r.code == 1 and "it is a cuda fallback lock; check it with --fallback cuda" in r.err
    # -o names the Neuron lock; the fallback is checked where it was written, beside it.
    r = cli("lock", *flags, "--fallback", "cuda", "--check", "-o", "pylock.toml")
    assert r.code == 0 and "pylock.cuda.toml: up to date" in r.out
    Path("pylock.cuda.toml").write_bytes(Path("pylock.toml").read_bytes())
    r = cli("lock", *flags, "--fallback", "cuda", "--check")
    assert r.code == 1 and "it is a Neuron lock; check it with no --fallback" in r.err
    assert cli("lock", *flags, "--fallback", "cuda").code == 0
    # The Neuron lock beside it still checks clean: the fallback changed nothing of it.
    assert cli("lock", *flags).code == 0 and cli("lock", *flags, "--check").code == 0


def test_cpu_fallback_takes_torch_from_the_cpu_index_without_touching_the_cuda_one(cli, cu):
    r = cli("lock", *cu.index_flags(), "--python", "3.12", "--python", "3.13", "--fallback", "cpu")
    assert r.code == 0, r.err
    lock = load_pylock(Path("pylock.cpu.toml"))
    assert pins(lock)["torch"] == "2.14.0+cpu" and not pins(lock).keys() & (NVIDIA | neuron_packages())
    assert len(lock.environments or ()) == 2
    assert fallback_of(lock) == {"device": "cpu"}
    assert "pytorch-cuda" not in read_toml(Path("pylock.cpu.toml"), "lock")["tool"]["neuronctl"]["indexes"]
    assert cu.cuda.hits == []


def test_the_cuda_index_comes_from_the_environment_and_the_variant_picks_its_url(cli, cu, monkeypatch):
    monkeypatch.setenv("NEURONCTL_INDEX_PYTORCH_CUDA", cu.url)
    r = cli("lock", *cu.uni.index_flags(), "--python", "3.12", "--fallback", "cuda=cu130", "--json")
    assert r.code == 0, r.err
    assert cu.cuda.hits and pins(load_pylock(Path("pylock.cuda.toml")))["torch"] == "2.14.0+cu130"
    doc = json.loads(r.out)
    assert doc["command"] == "lock" and doc["fallback"] == {"device": "cuda", "variant": "cu130"}
    assert {"name": "torch", "version": "2.14.0+cu130", "index": "pytorch-cuda",
            "targets": ["cp312-manylinux_2_28_x86_64"]} in doc["packages"]
    fb = load_fallback_routing()["cuda"]
    assert fb.default_variant("2.14.0") == "cu130" == fb.default_variant("2.10.1")
    assert fallback_base_routing("cuda", "cu128").indexes["pytorch-cuda"] == \
        "https://download.pytorch.org/whl/cu128"
    assert fallback_base_routing("cuda", "cu128").index_for("nvidia-cusparselt-cu13") == "pytorch-cuda"


def test_a_variant_the_index_lacks_is_a_conflict_naming_the_builds_it_has(cli, cu):
    r = cli("lock", *cu.index_flags(), "--python", "3.12", "--fallback", "cuda=cu126")
    assert r.code == 1 and "torch==2.14.0+cu126" in r.err
    assert not Path("pylock.cuda.toml").exists()


@pytest.mark.parametrize(("flags", "message"), [
    (["--fallback", "rocm"], "expected cuda, cuda=VARIANT"),
    (["--fallback", "cuda=12.8"], "expected a name such as cu126"),
    (["--fallback", "cpu=cu130"], "only cuda takes a variant"),
    (["--fallback", "cuda", "--with", "torch-neuronx"], "holds no Neuron package"),
    (["--fallback", "cuda", "-o", "gpu.toml"], "pylock.toml or pylock.NAME.toml"),
])
def test_bad_fallback_requests_are_exit_2_and_write_nothing(cli, cu, flags, message):
    r = cli("lock", *cu.index_flags(), "--python", "3.12", *flags)
    assert r.code == 2 and message in r.err and "Traceback" not in r.err
    assert not list(Path(".").glob("*.toml")) and cu.cuda.hits == []


def uv_dry_run(lock: Path, venv_python: Path) -> subprocess.CompletedProcess[str]:
    uv = Path(sys.executable).with_name("uv")
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
    env.update(UV_NO_CONFIG="1", UV_PYTHON_DOWNLOADS="never", UV_CACHE_DIR=str(lock.parent / "uv-cache"))
    return subprocess.run([str(uv), "pip", "install", "--dry-run", "-r", str(lock), "--python",
                           str(venv_python)], capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def test_a_host_with_an_nvidia_driver_picks_the_cuda_lock_and_uv_installs_it(cli, cu, tmp_path):
    flags = [*cu.index_flags(), "--python", "3.12"]
    assert cli("lock", *flags).code == 0 and cli("lock", *flags, "--fallback", "cuda").code == 0
    host = tmp_path / "host"
    (host / "sys/module/nvidia").mkdir(parents=True)
    (host / "sys/module/nvidia/version").write_text("580.65.06\n")
    nvidia = detect_nvidia(SysRoot(host))
    main = Path("pylock.toml").resolve()
    cuda_lock = load_pylock(main.with_name("pylock.cuda.toml"))
    choice = choose_lock(main, present_fallbacks(main), HostDevices(0, nvidia.driver, nvidia.source),
                         cuda_variant=(fallback_of(cuda_lock) or {}).get("variant"))
    assert choice.path.name == "pylock.cuda.toml" and choice.warnings == ()
    assert "NVIDIA driver 580.65.06 (from /sys/module/nvidia/version)" in choice.reason
    venv = make_venv(tmp_path / "venv", find_python("3.12"))
    for state in (cu.cuda, cu.uni.neuron, cu.uni.torch):
        state.reset_counts()
    done = uv_dry_run(choice.path, venv)
    assert done.returncode == 0, done.stderr
    for line in ("+ torch==2.14.0+cu130", "+ nvidia-cublas==13.1.0.3", "+ triton==3.6.0"):
        assert line in done.stderr + done.stdout
    assert "torch-neuronx" not in done.stderr + done.stdout
    assert cu.uni.neuron.hits == cu.uni.torch.hits == []  # uv asked nothing Neuron, nothing +cpu


@pytest.mark.parametrize(("table", "message"), [
    ('device = "rocm"', "device 'rocm': expected cuda or cpu"),
    ('device = "cuda"\nvariant = 130', "expected a table of short strings"),
])
def test_a_forged_fallback_table_is_bad_input_naming_the_lock(cli, cu, table, message):
    assert cli("lock", *cu.index_flags(), "--python", "3.12", "--fallback", "cuda").code == 0
    path = Path("pylock.cuda.toml")
    text = path.read_text()
    path.write_text(text.replace('[tool.neuronctl.fallback]\ndevice = "cuda"\nvariant = "cu130"',
                                 f"[tool.neuronctl.fallback]\n{table}"))
    with pytest.raises(InputError) as exc:
        fallback_of(load_pylock(path), str(path))
    assert exc.value.message.startswith("pylock.cuda.toml: [tool.neuronctl] fallback") and message in exc.value.message


def test_latest_and_the_requirements_export_work_for_a_fallback_lock(cli, cu):
    flags = [*cu.index_flags(), "--python", "3.12", "--fallback", "cuda", "--latest"]
    r = cli("lock", *flags, "-o", "requirements.txt")
    assert r.code == 0, r.err  # --latest: ==2.14.*,>=2.14.0 and the +cu130 label, not >=2.14.0+cu130
    assert not Path("requirements.txt").exists()  # beside the export -o names, never over it
    text = Path("requirements.cuda.txt").read_text()
    assert text.startswith("# neuronctl ") and "torch 2.14.0+cu130, cuda fallback of Neuron 2.33.1" in text
    assert "torch @ " in text and "%2Bcu130" in text and "%2Bcu128" not in text and "torch-neuronx" not in text
    assert cli("lock", *flags, "-o", "requirements.txt", "--check").code == 0
