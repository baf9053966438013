"""Fallback locks never take the Neuron lock's place (issue 22, item 9): `lock --fallback` writes
pylock.cuda.toml / pylock.cpu.toml beside what -o names, never over it, and `install --lock`
installs a lock that records a fallback device only where the hardware calls for that device or
--device names it. Real loopback indexes (PyPI-, PyTorch-, Neuron- and CUDA-like), hosts from
sysroot fixtures, the CLI end to end (--dry-run: nothing is installed, no GPU here)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from support.sysroots import build_cpu_host, build_host, nvidia_host
from support.wheels import find_python

from neuronctl.errors import InputError
from neuronctl.ops.lock.choice import HostDevices, choose_lock
from neuronctl.ops.lock.request import fallback_path

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_lock.py)

# By path: with HOME moved by the isolation, "3.12" is found only where PYENV_ROOT or PATH says.
PY312 = find_python("3.12")
NEURON_HOST = HostDevices(2)
GPU_HOST = HostDevices(0, "580.65.06", "/sys/module/nvidia/version")
BARE_HOST = HostDevices(0)


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("neuronctl: error: "), err
    assert "Traceback" not in err
    return lines[0]


# lock: where a fallback lock goes.

def test_a_fallback_lock_goes_beside_the_lock_o_names_never_over_it(cli, cu, tmp_path):
    flags = [*cu.index_flags(), "--python", "3.12"]
    assert cli("lock", *flags, "-o", "pylock.toml").code == 0
    neuron = Path("pylock.toml").read_bytes()
    r = cli("lock", *flags, "-o", "pylock.toml", "--fallback", "cuda")
    assert r.code == 0, r.err
    assert Path("pylock.toml").read_bytes() == neuron  # the Neuron lock is as it was
    cuda = Path("pylock.cuda.toml").read_text()
    assert "cu130" in cuda and "torch-neuronx" not in cuda and "-> pylock.cuda.toml" in r.out
    # In a folder, and beside a named lock (install --lock pylock.prod.toml looks there too).
    (tmp_path / "locks").mkdir()
    assert cli("lock", *flags, "-o", str(tmp_path / "locks/pylock.toml"), "--fallback", "cpu").code == 0
    assert sorted(p.name for p in (tmp_path / "locks").iterdir()) == ["pylock.cpu.toml"]
    assert cli("lock", *flags, "-o", "pylock.prod.toml", "--fallback", "cpu").code == 0
    assert not Path("pylock.prod.toml").exists() and Path("pylock.cpu.toml").is_file()
    # --check looks where the lock went, and still tells a Neuron lock from a fallback one.
    r = cli("lock", *flags, "-o", "pylock.toml", "--fallback", "cuda", "--check")
    assert r.code == 0 and r.out.startswith("pylock.cuda.toml: up to date"), r.err
    assert cli("lock", *flags, "-o", "pylock.toml", "--check").code == 0
    r = cli("lock", *flags, "-o", "pylock.cuda.toml", "--check")
    assert r.code == 1 and "it is a cuda fallback lock; check it with --fallback cuda" in r.err


def test_a_link_in_the_fallback_lock_place_is_replaced_not_written_through(cli, cu):
    flags = [*cu.index_flags(), "--python", "3.12"]
    assert cli("lock", *flags).code == 0
    neuron = Path("pylock.toml").read_bytes()
    Path("pylock.cuda.toml").symlink_to("pylock.toml")
    assert cli("lock", *flags, "--fallback", "cuda").code == 0
    assert Path("pylock.toml").read_bytes() == neuron
    assert not Path("pylock.cuda.toml").is_symlink() and b"cu130" in Path("pylock.cuda.toml").read_bytes()


def test_a_config_named_lock_keeps_its_place_too(cli, cu):
    flags = [*cu.index_flags(), "--python", "3.12"]
    Path("locks").mkdir()
    Path("pyproject.toml").write_text('[tool.neuronctl]\nlock = "locks/pylock.toml"\n')
    assert cli("lock", *flags).code == 0
    neuron = Path("locks/pylock.toml").read_bytes()
    assert cli("lock", *flags, "--fallback", "cuda").code == 0
    assert Path("locks/pylock.toml").read_bytes() == neuron and Path("locks/pylock.cuda.toml").is_file()
    Path("pyproject.toml").write_text('[tool.neuronctl]\nlock = "pylock.cpu.toml"\n')
    r = cli("lock", *flags)
    assert r.code == 2 and "config `lock` pylock.cpu.toml: that is the CPU fallback lock's name" in r.err


@pytest.mark.parametrize("where", ["user", "--config"])
def test_a_relative_config_lock_is_written_where_doctor_reads_it(cli, cu, where):
    """docs/config.md: relative paths in a file are taken from its folder. `lock` once wrote a
    relative config `lock` from the working directory while doctor (and install) read it from
    the config's folder: the lock written was not the lock checked."""
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "neuronctl" if where == "user" else Path("conf")
    (folder / "locks").mkdir(parents=True)
    (folder / "config.toml").write_text('lock = "locks/pylock.toml"\n')
    Path("locks").mkdir()  # the same name from the working directory: not where the key points
    config = ["--config", str(folder / "config.toml")] if where == "--config" else []
    assert cli(*config, "lock", *cu.index_flags(), "--python-version", "3.12").code == 0
    assert (folder / "locks" / "pylock.toml").is_file() and not any(Path("locks").iterdir())
    doctor = json.loads(cli(*config, "doctor", "--level", "1", "--json").out)
    drift = next(c for c in doctor["checks"] if c["id"] == "lock.drift")
    assert str(folder.resolve() / "locks" / "pylock.toml") in drift["message"], drift


@pytest.mark.parametrize("place", ["~/victim/pylock.toml", "../victim/pylock.toml",
                                   "/ABS/victim/requirements.txt", "linked/pylock.toml"])
def test_a_projects_lock_key_cannot_write_outside_the_project(cli, cu, place):
    """A checkout's pyproject.toml names where `lock` writes and what doctor reads: a file
    outside the project (in another project, through a link to elsewhere) is refused, and the
    file there is untouched and unshown; the user's own -o (and their own config) still write
    anywhere."""
    project = Path.cwd()
    victim = project.parent / "victim"  # beside the project (and in the isolated HOME)
    victim.mkdir(exist_ok=True)
    (project / "linked").symlink_to(victim)
    for name in ("pylock.toml", "requirements.txt"):
        (victim / name).write_text("lock-version = 'SECRET-VALUE-1'\n")
    Path("pyproject.toml").write_text(
        f'[tool.neuronctl]\nlock = "{place.replace("/ABS", str(project.parent))}"\n')
    flags = [*cu.index_flags(), "--python-version", "3.12"]
    r = cli("lock", *flags)
    assert r.code == 2 and "is outside the project" in one_error_line(r.err), r.err
    assert all((victim / n).read_text() == "lock-version = 'SECRET-VALUE-1'\n"
               for n in ("pylock.toml", "requirements.txt"))
    doctor = cli("doctor", "--level", "1", "--json")  # doctor reads the key: not outside either
    assert doctor.code == 2 and "is outside the project" in doctor.err, doctor.err
    assert "SECRET-VALUE-1" not in doctor.out + doctor.err
    assert cli("lock", *flags, "-o", str(victim / "pylock.toml")).code == 0
    assert "SECRET-VALUE-1" not in (victim / "pylock.toml").read_text()


@pytest.mark.parametrize(("args", "message"), [
    (["-o", "pylock.cpu.toml", "--fallback", "cuda"],
     "-o pylock.cpu.toml: that is the CPU fallback lock's name; a cuda fallback lock is written as "
     "pylock.cuda.toml"),
    (["-o", "requirements.cpu.txt", "--fallback", "cuda"], "written as requirements.cuda.txt"),
    (["-o", "pylock.cuda.toml"], "-o pylock.cuda.toml: that is the CUDA fallback lock's name"),
    (["-o", "pylock.cpu.toml"], "or the fallback with --fallback cpu"),
    (["-o", "pylock.CUDA.toml"], "that is the CUDA fallback lock's name"),  # one file on macOS
    (["-o", "locks"], "-o locks: that is a directory; name the lock file in it (e.g. locks/pylock.toml)"),
    (["-o", "locks", "--fallback", "cuda"], "-o locks: that is a directory"),
    (["-o", "pylock.toml", "--fallback", "cuda"], "the fallback lock's place pylock.cuda.toml is a "
                                                  "directory"),
])
def test_a_lock_name_that_would_take_another_locks_place_is_exit_2(cli, cu, args, message):
    Path("locks").mkdir()
    if "pylock.toml" in args:
        Path("pylock.cuda.toml").mkdir()
    r = cli("lock", *cu.index_flags(), "--python-version", "3.12", *args)
    assert r.code == 2 and message in one_error_line(r.err), r.err
    assert not [p for p in Path(".").rglob("*") if p.is_file() and p.suffix in (".toml", ".txt")]
    assert cu.cuda.hits == [] and not [h for h in cu.uni.pypi.hits if "/simple/" in h[1]]


def test_fallback_path_names():
    assert fallback_path("pylock.toml", "cuda") == "pylock.cuda.toml"
    assert fallback_path("a/b/pylock.dev.toml", "cpu") == "a/b/pylock.cpu.toml"
    assert fallback_path("pylock.cuda.toml", "cuda") == "pylock.cuda.toml"
    assert fallback_path("req.txt", "cuda", "requirements") == "req.cuda.txt"
    assert fallback_path("req.cuda.txt", "cuda", "requirements") == "req.cuda.txt"
    assert fallback_path("reqs", "cpu", "requirements") == "reqs.cpu"
    assert fallback_path("-", "cuda") == "-"
    assert fallback_path("R.CUDA.txt", "cuda", "requirements") == "R.CUDA.txt"
    with pytest.raises(InputError, match=re.escape("the CPU fallback lock's name; a cuda fallback "
                                                   "lock is written as R.cuda.txt")):
        fallback_path("R.Cpu.txt", "cuda", "requirements")
    with pytest.raises(InputError, match="the CPU fallback lock's name"):
        fallback_path("pylock.CPU.toml", "cuda")
    with pytest.raises(InputError, match="the CUDA fallback lock's name"):
        fallback_path("x/pylock.cuda.toml", "cpu")


# install: a lock recording a fallback device goes only where that device is.

def test_a_cuda_lock_over_pylock_toml_is_refused_on_a_neuron_host(cli, cu, tmp_path):
    """What the old `lock -o pylock.toml --fallback cuda` left: pylock.toml holding the CUDA lock.
    On a Neuron host the hardware picks the Neuron lock, so installing it is refused (exit 2, one
    line) unless --device cuda says so; it had planned CUDA torch and nvidia-* without a word."""
    flags = [*cu.index_flags(), "--python", "3.12"]
    assert cli("lock", *flags, "--fallback", "cuda").code == 0
    Path("pylock.cuda.toml").rename("pylock.toml")
    trn2 = build_host(tmp_path / "trn2", "trn2")
    venv = tmp_path / "v"
    base = ("--venv", str(venv), "--venv-python", PY312, "--dry-run", "--sysroot", str(trn2),
            "--engine", "uv")
    r = cli("install", "--lock", "pylock.toml", *base)
    line = one_error_line(r.err)
    assert r.code == 2 and "nvidia" not in r.out and "cu130" not in r.out, r.out
    assert line == ("neuronctl: error: pylock.toml is the CUDA fallback lock, but this host has 2 "
                    "Neuron device(s): pass --device cuda to install it here anyway")
    r = cli("install", "--lock", "pylock.toml", *base, "--json")
    assert r.code == 2 and '"kind": "input"' in r.out
    r = cli("install", "--lock", "pylock.toml", *base, "--device", "neuron")
    assert r.code == 2 and "--device neuron: pylock.toml is the CUDA fallback lock" in r.err
    r = cli("install", "--lock", "pylock.toml", *base, "--device", "cuda")
    assert r.code == 0, r.err
    assert "lock: pylock.toml (the CUDA fallback lock, named on the command line; --device cuda)" in r.err
    assert re.search(r"install +torch +2\.14\.0\+cu130 ", r.out)
    # Config `device` picks the lock as --device does (said in a note); a typed flag beats it.
    Path("pyproject.toml").write_text('[tool.neuronctl]\ndevice = "cuda"\n')
    r = cli("install", "--lock", "pylock.toml", *base)
    assert r.code == 0 and "note: device cuda (config device, " in r.err, r.err
    r = cli("install", "--lock", "pylock.toml", *base, "--device", "neuron")
    assert r.code == 2 and "--device neuron: pylock.toml is the CUDA fallback lock" in r.err
    Path("pyproject.toml").unlink()
    assert not venv.exists()
    # Where the hardware is an NVIDIA GPU, that lock is what it calls for.
    gpu = nvidia_host(tmp_path / "gpu")
    r = cli("install", "--lock", "pylock.toml", *base[:-4], "--sysroot", str(gpu), "--engine", "uv")
    assert r.code == 0 and "named on the command line; NVIDIA driver 580.65.06" in r.err, r.err


def test_a_cpu_lock_goes_to_a_host_with_no_accelerator_only(cli, cu, tmp_path):
    flags = [*cu.index_flags(), "--python", "3.12"]
    assert cli("lock", *flags, "--fallback", "cpu").code == 0
    base = ("--venv", str(tmp_path / "v"), "--venv-python", PY312, "--dry-run", "--engine", "uv")
    # Config `device` (what doctor and smoke probe) asks nothing of an install without --lock.
    Path("pyproject.toml").write_text('[tool.neuronctl]\ndevice = "cpu"\n')
    r = cli("install", *cu.index_flags(), *base, "--sysroot", str(build_cpu_host(tmp_path / "c0")))
    assert r.code == 0 and "picks the lock" not in r.err, r.err
    Path("pyproject.toml").unlink()
    cpu = build_cpu_host(tmp_path / "cpu")
    r = cli("install", "--lock", "pylock.cpu.toml", *base, "--sysroot", str(cpu))
    assert r.code == 0 and "no Neuron device and no NVIDIA GPU" in r.err, r.err
    for host in (build_host(tmp_path / "trn2", "trn2"), nvidia_host(tmp_path / "gpu")):
        r = cli("install", "--lock", "pylock.cpu.toml", *base, "--sysroot", str(host))
        assert r.code == 2 and "pass --device cpu to install it here anyway" in one_error_line(r.err)
        assert cli("install", "--lock", "pylock.cpu.toml", *base, "--sysroot", str(host),
                   "--device", "cpu").code == 0


def test_a_lock_whose_name_and_record_disagree_is_bad_input(cli, cu, tmp_path):
    """A Neuron lock renamed pylock.cuda.toml is found beside pylock.toml on a GPU host; a CUDA
    lock renamed pylock.cpu.toml is given directly: each is refused, naming the file."""
    flags = [*cu.index_flags(), "--python", "3.12"]
    assert cli("lock", *flags).code == 0
    Path("pylock.cuda.toml").write_bytes(Path("pylock.toml").read_bytes())
    gpu = nvidia_host(tmp_path / "gpu")
    base = ("--venv", str(tmp_path / "v"), "--venv-python", PY312, "--dry-run", "--sysroot", str(gpu))
    r = cli("install", "--lock", "pylock.toml", *base)
    assert r.code == 2 and one_error_line(r.err) == (
        "neuronctl: error: pylock.cuda.toml: named as the CUDA fallback lock, but its "
        "[tool.neuronctl] records the Neuron lock; rename it, or make it again with neuronctl lock")
    assert "torch-neuronx" not in r.out
    assert cli("lock", *flags, "--fallback", "cuda").code == 0
    Path("pylock.cuda.toml").rename("pylock.cpu.toml")
    r = cli("install", "--lock", "pylock.cpu.toml", *base, "--device", "cpu")
    assert r.code == 2 and "pylock.cpu.toml: named as the CPU fallback lock, but its " \
                           "[tool.neuronctl] records the CUDA fallback lock" in one_error_line(r.err)


def test_a_forged_fallback_device_in_pylock_toml_is_bad_input(cli, cu, tmp_path):
    flags = [*cu.index_flags(), "--python", "3.12"]
    assert cli("lock", *flags, "--fallback", "cuda").code == 0
    text = Path("pylock.cuda.toml").read_text()
    Path("pylock.toml").write_text(text.replace('device = "cuda"', 'device = "neuron"'))
    trn2 = build_host(tmp_path / "trn2", "trn2")
    r = cli("install", "--lock", "pylock.toml", "--venv", str(tmp_path / "v"), "--dry-run",
            "--sysroot", str(trn2))
    assert r.code == 2 and "fallback: device 'neuron': expected cuda or cpu" in one_error_line(r.err)


# The choice alone (pure).

def test_what_the_hardware_calls_for():
    assert (NEURON_HOST.device, GPU_HOST.device, BARE_HOST.device) == ("neuron", "cuda", "cpu")
    assert HostDevices(2, "580.65.06").device == "neuron"  # Neuron devices win over a GPU


@pytest.mark.parametrize(("host", "device", "ok"), [
    (GPU_HOST, "auto", True), (NEURON_HOST, "auto", False), (BARE_HOST, "auto", False),
    (NEURON_HOST, "cuda", True), (BARE_HOST, "cuda", True), (GPU_HOST, "cpu", False),
    (GPU_HOST, "neuron", False),
])
def test_a_recorded_cuda_lock_named_pylock_toml(host, device, ok):
    main = Path("pylock.toml")
    if ok:
        choice = choose_lock(main, {"cuda"}, host, device, main_device="cuda")
        assert (choice.path, choice.device) == (main, "cuda")
    else:
        with pytest.raises(InputError):
            choose_lock(main, {"cuda"}, host, device, main_device="cuda")


def test_a_given_cuda_lock_warns_as_a_chosen_one_does():
    choice = choose_lock(Path("pylock.cuda.toml"), set(), HostDevices(0, "550.144.03"),
                         cuda_variant="cu130", min_driver={"cu130": "580"})
    assert "older than cu130 needs (>= 580)" in choice.warnings[0]
    away = choose_lock(Path("pylock.cuda.toml"), set(), NEURON_HOST, "cuda", min_driver={})
    assert "no NVIDIA driver found" in away.warnings[0]


def test_recorded_device():
    from neuronctl.ops.lock.choice import recorded_device

    cuda = {"device": "cuda", "variant": "cu130"}
    assert recorded_device(Path("pylock.toml"), {"schema": 1}, cuda) == "cuda"
    assert recorded_device(Path("pylock.toml"), {"schema": 1}, None) == "neuron"
    assert recorded_device(Path("pylock.cuda.toml"), None, None) == "cuda"  # not neuronctl's: its name
    assert recorded_device(Path("pylock.cuda.toml"), {}, cuda) == "cuda"
    for path, fallback in (("pylock.cuda.toml", None), ("pylock.cpu.toml", cuda)):
        with pytest.raises(InputError, match="named as the"):
            recorded_device(Path(path), {}, fallback)
