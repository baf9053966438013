"""`neuronctl env` against `python -m torch.utils.collect_env` (issue 15): a superset of what torch
prints, with torch's own facts from torch's own code; the same OS/CPU/compiler facts without torch;
a torch that hangs cut at the timeout; whatever the target writes validated and redacted."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.procs import gone
from support.wheels import find_python, make_venv, site_packages

from neuronctl.probes.host_facts import gather_host_facts
from neuronctl.probes.sysroot import SysRoot

# collect_env's placeholders for a fact it did not find: not facts, so nothing to carry over.
# ("No CUDA" and "No relevant packages" are its wording for "none" on a CPU-only machine.)
PLACEHOLDERS = {"N/A", "Could not collect", "None", "", "No CUDA", "No relevant packages"}


def normalized(text: str) -> str:
    return " ".join(text.split())


def collect_env_values(output: str) -> list[tuple[str, str]]:
    """(label, value) for every value `python -m torch.utils.collect_env` prints."""
    values, section = [], "main"
    for line in output.splitlines():
        if line.startswith("Collecting environment information"):
            continue
        if line in ("CPU:", "Versions of relevant libraries:"):
            section = line
            continue
        if section == "Versions of relevant libraries:":
            values.append(("library", line.split("] ", 1)[-1]))  # "[pip3] torch==2.13.0+cpu"
            continue
        label, sep, value = line.partition(":")
        values.append((label.strip(), value.strip()) if sep else ("(continued)", line.strip()))
    return [(label, normalized(value)) for label, value in values if value.strip() not in PLACEHOLDERS]


def test_env_shows_every_value_torch_collect_env_prints(cli, monkeypatch):
    """Against the real collect_env of torch 2.13 in the test venv, in the same environment
    (with variables collect_env reads, and ones it drops that we keep)."""
    kept = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "OMP_NUM_THREADS": "1",
            "TORCHINDUCTOR_CACHE_DIR": "/tmp/inductor-cache", "TORCHDYNAMO_VERBOSE": "1",
            "LD_LIBRARY_PATH": "/opt/nowhere/lib", "TORCHINDUCTOR_API_TOKEN": "HUSHtok"}
    for name, value in kept.items():
        monkeypatch.setenv(name, value)
    reference = subprocess.run([sys.executable, "-m", "torch.utils.collect_env"], capture_output=True,
                               text=True, timeout=300, check=True).stdout
    assert re.search(r"^PyTorch version: 2\.\d+", reference, re.M), reference
    r = cli("env", "--python", sys.executable)
    assert r.code == 0, r.err
    shown = normalized(r.out)
    # "CPU MHz" / "CPU(s) scaling MHz" move with the CPU's clock between the two runs: the only
    # values left out of the comparison (absent on this machine's lscpu, present on others).
    missing = [(label, value) for label, value in collect_env_values(reference)
               if "MHz" not in label and value not in shown]
    assert not missing, missing
    for name in ("PYTORCH_CUDA_ALLOC_CONF", "OMP_NUM_THREADS", "TORCHINDUCTOR_CACHE_DIR",
                 "TORCHDYNAMO_VERBOSE", "LD_LIBRARY_PATH"):
        assert f"| {name} | {kept[name]} |" in r.out
    assert "| TORCHINDUCTOR_API_TOKEN | <redacted> |" in r.out and "HUSHtok" not in r.out
    assert "{'PYTORCH_CUDA_ALLOC_CONF': 'expandable_segments:True'}" in r.out  # collect_env's form
    data = json.loads(cli("env", "--json", "--python", sys.executable).out)["env"]
    assert data["collect_env"]["status"] == "ok"
    assert data["collect_env"]["fields"]["torch_version"] == data["torch"]["version"]
    assert data["torch_build"]["local_label"] == data["torch"]["version"].partition("+")[2]
    assert data["torch_build"]["debug_build"] == "False"
    assert data["python"]["build"] == sys.version.replace("\n", " ")


def _reference_cpu_model() -> str | None:
    out = subprocess.run(["lscpu"], capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"},
                         check=False).stdout
    found = re.search(r"^Model name:\s*(.+)$", out, re.M)
    return found.group(1).strip() if found else None


def _os_release_pretty_name() -> str:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        if os.path.exists(path):
            found = re.search(r'^PRETTY_NAME="?([^"\n]*)"?$', Path(path).read_text(), re.M)
            if found:
                return found.group(1)
    raise AssertionError("no os-release on this machine")


@pytest.mark.slow
def test_env_without_torch_still_reports_os_cpu_and_compilers(cli, tmp_path):
    python = make_venv(tmp_path / "v", find_python("3.12"))
    r = cli("env", "--json", "--python", str(python))
    assert r.code == 0, r.err
    data = json.loads(r.out)["env"]
    assert data["collect_env"]["status"] == "absent"
    assert data["os"]["distribution"] == _os_release_pretty_name()
    gcc = shutil.which("gcc")
    expected_gcc = (re.search(r"gcc (.*)", subprocess.run([gcc, "--version"], capture_output=True,
                                                          text=True, check=True).stdout).group(1)
                    if gcc else None)
    assert data["compilers"]["gcc"] == expected_gcc
    assert data["cpu"]["model"] == _reference_cpu_model()
    assert data["cpu"]["cpus"] == os.cpu_count() and data["cpu"]["flags"]
    build = subprocess.run([str(python), "-c", "import sys; print(sys.version)"], capture_output=True,
                           text=True, check=True).stdout.strip().replace("\n", " ")
    assert data["python"]["build"] == build and data["python"]["bits"] == 64
    text = cli("env", "--python", str(python)).out
    assert f"| distribution | {_os_release_pretty_name()} |" in text
    assert "torch.utils.collect_env: absent: torch is not installed" in text


def _torch_in_venv(venv_python: Path, init: str, version: str = "2.13.0+cu130",
                collect_env: str | None = None) -> Path:
    site = site_packages(venv_python.parent.parent)
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text(init)
    if collect_env is not None:
        (site / "torch" / "utils").mkdir()
        (site / "torch" / "utils" / "__init__.py").write_text("")
        (site / "torch" / "utils" / "collect_env.py").write_text(collect_env)
    info = site / f"torch-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
    (info / "RECORD").write_text("")
    return site


@pytest.mark.slow
def test_a_torch_whose_import_hangs_is_cut_at_the_timeout(cli, tmp_path):
    """The import sleeps, and leaves a child behind that would hold the pipes: env still answers
    at the timeout with everything else, and nothing it started is left running."""
    python = make_venv(tmp_path / "v", find_python("3.12"))
    pids = tmp_path / "pids"
    _torch_in_venv(python, "import os, subprocess, time\n"
                        "child = subprocess.Popen(['sleep', '120'])\n"
                        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
                        "time.sleep(120)\n")
    start = time.monotonic()
    r = cli("env", "--json", "--python", str(python), "--timeout", "3")
    took = time.monotonic() - start
    assert r.code == 0, r.err
    assert took < 20, took
    data = json.loads(r.out)["env"]
    assert data["collect_env"]["status"] == "timeout"
    assert "timed out after 3s" in data["collect_env"]["detail"]
    # what came before the import, and everything gathered outside the target, is still there
    assert data["python"]["build"].startswith("3.12.") and data["os"]["distribution"]
    assert data["cpu"]["model"] == _reference_cpu_model()
    assert data["torch"]["version"] == "2.13.0+cu130"
    for pid in map(int, pids.read_text().split()):
        deadline = time.monotonic() + 5
        while not gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone(pid), pid


HOSTILE_COLLECT_ENV = '''
import collections, sys
print('{"torch": "ok", "collect_env": {"torch_version": "forged-on-stdout"}}')
Info = collections.namedtuple("Info", "torch_version is_debug_build cuda_compiled_version gcc_version "
                              "cuda_runtime_version pip_packages caching_allocator_config cpu_info")
def get_env_info():
    return Info("2.13.0+cu130", "False", "13.0", "(\\x1b[31mEvil\\x1b[0m) 12.2.0",
                "see https://bob:HUSHpw@mirror.example/x", "torch==2.13.0+cu130\\n" + "x" * 200000,
                {"PYTORCH_CUDA_ALLOC_CONF": "Authorization: Bearer HUSHtok"}, "Model name: Evil CPU")
'''


@pytest.mark.slow
def test_what_the_target_writes_is_validated_bounded_and_redacted(cli, tmp_path):
    python = make_venv(tmp_path / "v", find_python("3.12"))
    _torch_in_venv(python, "", collect_env=HOSTILE_COLLECT_ENV)
    r = cli("env", "--json", "--python", str(python))
    assert r.code == 0, r.err
    assert "HUSH" not in r.out and "\\u001b" not in r.out and "forged-on-stdout" not in r.out
    data = json.loads(r.out)["env"]
    fields = data["collect_env"]["fields"]
    assert data["collect_env"]["status"] == "ok" and fields["torch_version"] == "2.13.0+cu130"
    assert fields["gcc_version"] == "(?[31mEvil?[0m) 12.2.0"
    assert len(fields["pip_packages"]) == 128 * 1024  # cut at the field's cap
    assert data["torch_build"] == {**data["torch_build"], "local_label": "cu130", "cuda_compiled": "13.0"}
    assert "torch 2.13.0+cu130 (CUDA build)" in data["summary"]
    text = cli("env", "--python", str(python)).out
    assert "HUSH" not in text and "\x1b" not in text and "| CUDA used to build PyTorch | 13.0 |" in text
    assert "Model name: Evil CPU" in text  # torch's own CPU text is what the CPU block shows


@pytest.mark.slow
@pytest.mark.parametrize(("collect_env", "why"), [
    ("def get_env_info():\n    raise RuntimeError('boom')\n", "get_env_info: RuntimeError: boom"),
    ("import collections\nI = collections.namedtuple('I', 'torch_version')\n"
     "def get_env_info():\n    return I(['a', 'list'])\n", "torch_version: not a string"),
    ("class I:\n    def _asdict(self):\n        return {'Bad Name': 'x'}\n"
     "def get_env_info():\n    return I()\n", "field name 'Bad Name'"),
    ("import collections\nI = collections.namedtuple('I', 'cpu_info')\n"
     "def get_env_info():\n    return I('x' * 600000)\n", "more than 512 KiB"),
], ids=["raises", "wrong-type", "bad-name", "overflow"])
def test_a_broken_collect_env_is_reported_not_fatal(cli, tmp_path, collect_env, why):
    python = make_venv(tmp_path / "v", find_python("3.12"))
    _torch_in_venv(python, "", collect_env=collect_env)
    r = cli("env", "--json", "--python", str(python))
    assert r.code == 0, r.err
    data = json.loads(r.out)["env"]
    assert data["collect_env"]["status"] == "error" and why in data["collect_env"]["detail"]
    assert data["collect_env"]["fields"] == {} and data["os"]["distribution"]


def test_under_a_sysroot_the_trees_os_and_cpu_are_read_and_no_tool_is_run(cli, tmp_path):
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/os-release").write_text('NAME="Amazon Linux"\nVERSION="2023"\nID="amzn"\n'
                                         'VERSION_ID="2023"\nPRETTY_NAME="Amazon Linux 2023.6.20250218"\n')
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/osrelease").write_text("6.1.127-135.201.amzn2023.x86_64\n")
    block = ("processor\t: {n}\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7R13 Processor\n"
             "physical id\t: 0\nsiblings\t: 4\ncpu cores\t: 2\nflags\t\t: fpu avx2 sha_ni\n")
    (root / "proc/cpuinfo").write_text("\n".join(block.format(n=n) for n in range(4)))
    data = json.loads(cli("env", "--json", "--sysroot", str(root)).out)["env"]
    assert data["os"]["distribution"] == "Amazon Linux 2023.6.20250218"
    assert (data["os"]["distribution_id"], data["os"]["distribution_version"]) == ("amzn", "2023")
    assert data["os"]["kernel"] == "6.1.127-135.201.amzn2023.x86_64"
    assert data["cpu"] == {**data["cpu"], "model": "AMD EPYC 7R13 Processor", "cpus": 4, "sockets": 1,
                           "cores_per_socket": 2, "threads_per_core": 2,
                           "flags": ["fpu", "avx2", "sha_ni"], "source": "/proc/cpuinfo"}
    assert data["compilers"] == {"gcc": None, "clang": None, "cmake": None}
    assert any("not run under --sysroot" in note for note in data["notes"])


def test_a_hanging_compiler_is_cut_at_its_time_limit(tmp_path, monkeypatch):
    """A `gcc` wrapper that never answers, and leaves a child holding its stdout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gcc = bin_dir / "gcc"
    gcc.write_text("#!/bin/sh\nsleep 60 &\nsleep 60\n")
    gcc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    start = time.monotonic()
    facts = gather_host_facts(SysRoot(), timeout=1.0)
    assert time.monotonic() - start < 5
    assert facts.compilers["gcc"] is None and "gcc: timed out after 1s" in facts.notes
