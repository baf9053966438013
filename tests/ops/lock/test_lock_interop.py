"""The locks neuronctl writes work with the real tools: uv installs pylock.toml, pip installs the
hashed requirements export with no index, and pip's own resolution agrees on the versions."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.locks import versions
from support.venvs import copied_venv, installed
from support.wheels import find_python, make_venv

from neuronctl.resolvers.pylock import load_pylock

pytestmark = pytest.mark.slow
UV = str(Path(sys.executable).with_name("uv"))


def tool_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))}
    env.update(UV_NO_CONFIG="1", UV_PYTHON_DOWNLOADS="never", UV_CACHE_DIR=str(tmp_path / "uv-cache"), PIP_CONFIG_FILE=os.devnull,
               PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def test_uv_installs_the_pylock(cli, uni, tmp_path):
    assert cli("lock", *uni.index_flags(), "--python", "3.12", "--python", "3.13",
               "--with", "transformers[torch]").code == 0
    venv = make_venv(tmp_path / "v", find_python("3.13"))
    r = subprocess.run([UV, "pip", "install", "--python", str(venv), "-r", "pylock.toml"],
                       check=False, capture_output=True, text=True, env=tool_env(tmp_path))
    assert r.returncode == 0, r.stderr
    got = installed(venv)
    assert got["torch"] == "2.14.0+cpu" and got["torch-neuronx"] == "2.14.3.0"
    assert got["typing-extensions"] == "5.0.0" and got["accelerate"] == "1.0.0"
    assert "99.0.0" not in got.values() and got.get("torch-neuronx") != "1.0"


def test_pip_installs_the_requirements_export_with_hashes_and_no_index(cli, uni, tmp_path, pip_venvs):
    assert cli("lock", *uni.index_flags(), "--python", "3.12", "-o", "requirements.txt").code == 0
    # The venv's own pip (its Python's bundled one): a stock python3's older pip cannot run
    # under 3.12 through --python.
    venv = copied_venv(pip_venvs, "3.12", tmp_path / "v")
    r = subprocess.run([str(venv), "-m", "pip", "install", "-q",
                        "--require-hashes", "-r", "requirements.txt"],
                       check=False, capture_output=True, text=True, env=tool_env(tmp_path))
    assert r.returncode == 0, r.stderr
    got = installed(venv)
    lock_versions = {n: v[0] for n, v in versions(load_pylock(_lock_for(cli, uni))).items()}
    assert {k: got[k] for k in lock_versions} == lock_versions
    # And a tampered hash is refused by pip itself.
    text = Path("requirements.txt").read_text()
    first = text.index("--hash=sha256:") + len("--hash=sha256:")
    Path("bad.txt").write_text(text[:first] + "0" * 64 + text[first + 64:])
    venv2 = copied_venv(pip_venvs, "3.12", tmp_path / "v2")
    r = subprocess.run([str(venv2), "-m", "pip", "install", "-q",
                        "--require-hashes", "-r", "bad.txt"], check=False, capture_output=True, text=True,
                       env=tool_env(tmp_path))
    assert r.returncode != 0 and "HASHES" in r.stderr.upper()


def _lock_for(cli, uni) -> Path:
    assert cli("lock", *uni.index_flags(), "--python", "3.12").code == 0
    return Path("pylock.toml")


def _pip_report(uni, tmp_path, reqs: list[str]) -> dict[str, str]:
    report = tmp_path / f"report-{len(list(tmp_path.glob('report-*')))}.json"
    # --target: older pips (23.2) take --platform only with it, even for a dry run that installs
    # nothing, and then check Requires-Python against the running interpreter: so run a 3.12 one.
    cmd = [find_python("3.12"), "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
           "--target", str(tmp_path / "target"), "--report", str(report), "--python-version", "3.12", "--platform", "manylinux_2_28_x86_64",
           "--platform", "manylinux_2_17_x86_64",
           "--only-binary", ":all:", "--index-url", uni.urls["pypi"],
           "--extra-index-url", uni.urls["pytorch-cpu"], "--extra-index-url", uni.urls["neuron"], *reqs]
    r = subprocess.run(cmd, check=False, capture_output=True, text=True, env=tool_env(tmp_path))
    assert r.returncode == 0, r.stderr
    return {i["metadata"]["name"].lower(): i["metadata"]["version"]
            for i in json.loads(report.read_text())["install"]}


def test_pip_resolution_agrees_and_merged_indexes_pick_the_attacker(cli, uni, tmp_path):
    lock = load_pylock(_lock_for(cli, uni))
    ours = {n: v[0] for n, v in versions(lock).items()}
    pins = [f"{n}=={v}" for n, v in ours.items() if n in ("torch", "torch-neuronx", "neuronx-cc", "nki")]
    assert _pip_report(uni, tmp_path, pins) == ours
    # The trap neuronctl exists for: pip's merged indexes take the higher attacker version.
    assert _pip_report(uni, tmp_path, ["torch-neuronx"])["torch-neuronx"] == "99.0.0"
