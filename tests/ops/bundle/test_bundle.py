"""`neuronctl bundle`: a real archive opened with tarfile; its index lists every item with a status;
secrets planted in the environment, pyproject, a lock, a fake neuron-ls and the kernel log are in
no member; a missing tool is listed with its reason; a failed write leaves nothing behind."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from support.archives import members
from support.sysroots import write

from neuronctl.ops.bundle import BundleRequest, make_bundle
from neuronctl.ops.bundle_items import ITEMS, Context, Gathered, Item, run_limited
from neuronctl.probes.sysroot import SysRoot

# These captured trees carry a fake neuron-ls that the tests mean to run.
pytestmark = pytest.mark.usefixtures("sysroot_tools")


SECRETS = ("PLANTEDenv1", "PLANTEDenv2", "PLANTEDenv3", "PLANTEDpyproject", "PLANTEDlock",
           "PLANTEDneuronls", "PLANTEDkernel")
HOST = "trn2-node-17.cluster.internal"

NEURON_LS = """#!/bin/sh
# A neuron-ls that knows both flags; its processes carry credentials, as real command lines can.
cat <<EOF
[{"neuron_device": 0, "bdf": "cc:00.0", "nc_count": 8, "host": "HOSTNAME",
  "neuron_processes": [{"pid": 4242, "command": "python train.py --hf-token=PLANTEDneuronls https://bob:PLANTEDneuronls@mirror.example/x"}]}]
EOF
""".replace("HOSTNAME", HOST)


def sysroot(tmp_path: Path) -> Path:
    root = tmp_path / "sysroot"
    (root / "sys").mkdir(parents=True)  # an empty machine is still a root: sys/ (issue 22, item 11)
    write(root, "/opt/aws/neuron/bin/neuron-ls", NEURON_LS).chmod(0o755)
    write(root, "/etc/hostname", HOST.split(".", maxsplit=1)[0] + "\n")
    write(root, "/var/lib/dpkg/status", "Package: aws-neuronx-dkms\nStatus: install ok installed\n"
                                        "Version: 2.31.7.0-1\n")
    write(root, "/var/log/kern.log",
          f"Nov 30 {HOST} kernel: neuron: loaded, url https://ops:PLANTEDkernel@logs.example/\n"
          f"Nov 30 {HOST} kernel: e1000: link up\n")
    return root


def project(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    write(work, "pyproject.toml", '[project]\nname = "x"\n\n[tool.neuronctl]\nrelease = "2.33.0"\n'
          'indexes = { neuron = "https://alice:PLANTEDpyproject@mirror.example/neuron/simple" }\n')
    write(work, "pylock.toml", 'lock-version = "1.0"\n[[packages]]\nname = "nki"\n'
          'url = "https://carol:PLANTEDlock@mirror.example/nki.whl"\n')
    return work


def test_bundle_archive_has_an_index_and_no_secret(tmp_path: Path) -> None:
    root, work = sysroot(tmp_path), project(tmp_path)
    env = {**os.environ, "NEURON_CC_FLAGS": "--api-key=PLANTEDenv1",
           "PIP_INDEX_URL": "https://dave:PLANTEDenv2@mirror.example/simple",
           "NEURON_AUTH_TOKEN": "PLANTEDenv3"}
    out = work / "case.tar.gz"
    proc = subprocess.run([sys.executable, "-m", "neuronctl", "bundle", "-o", str(out),
                           "--sysroot", str(root), "--python", sys.executable,
                           "--redact-hostnames", "--json"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["bundle"]["path"] == str(out)
    files = members(out)
    index = json.loads(files["index.json"])
    status = {i["file"]: i["status"] for i in index["items"]}
    assert set(status) == {item.name for item in ITEMS}
    assert "README.md" in files and all(name in files["README.md"] for name in status)
    for name in ("env.md", "env.json", "doctor.json", "neuron-ls.json-output.json",
                 "kernel-log.txt", "system-packages.txt", "distributions.txt",
                 "tool-neuronctl.toml", "pylock.toml", "system-facts.json"):
        assert status[name] in ("collected", "partial"), (name, index)
        assert name in files
    assert status["doctor.json"] == "collected" and json.loads(files["doctor.json"])["checks"]
    assert json.loads(files["env.json"])["env"]["python"]
    # The items really carried the planted values, masked: the bundle was not merely empty.
    assert "mirror.example" in files["tool-neuronctl.toml"] and "***" in files["tool-neuronctl.toml"]
    assert "NEURON_CC_FLAGS" in files["env.md"] and "mirror.example" in files["pylock.toml"]
    assert "4242" in files["neuron-ls.json-output.json"] and "neuron: loaded" in files["kernel-log.txt"]
    assert "e1000" not in files["kernel-log.txt"]
    assert "Nov 30 <host> kernel: neuron: loaded" in files["kernel-log.txt"]
    assert "aws-neuronx-dkms 2.31.7.0" in files["system-packages.txt"]
    # Live-machine tools are not run against a captured tree: listed with the reason.
    lspci = next(i for i in index["items"] if i["file"] == "lspci.txt")
    assert lspci["status"] == "unavailable" and "--sysroot" in lspci["reason"]
    for name, text in files.items():
        for secret in SECRETS:
            assert secret not in text, (name, secret)
        assert "trn2-node-17" not in text, name
    assert "trn2-node-17" not in out.name
    assert out.stat().st_mode & 0o077 == 0  # a bundle describes the machine: the owner's only


def run_items(tmp_path: Path, items: tuple[Item, ...], root: Path | None = None) -> dict[str, dict]:
    outcome = make_bundle(BundleRequest(output=tmp_path / "b.tar.gz", python=sys.executable,
                                        sysroot=SysRoot(root or tmp_path / "empty-root"),
                                        config=tmp_path / "none.toml", items=items))
    index = json.loads(members(outcome.path)["index.json"])
    return {i["file"]: i for i in index["items"]}


def test_missing_tool_is_listed_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "empty-root").mkdir()
    neuron_ls = tuple(i for i in ITEMS if i.name.startswith("neuron-ls"))
    index = run_items(tmp_path, neuron_ls)
    for item in index.values():
        assert item["status"] == "unavailable"
        assert item["reason"] == "neuron-ls not found (looked in /opt/aws/neuron/bin/neuron-ls)"


def _sleeper(ctx: Context, timeout: float) -> Gathered:
    run_limited([sys.executable, "-c", "import time; time.sleep(60)"], timeout)
    raise AssertionError("not reached")


def _broken(ctx: Context, timeout: float) -> Gathered:
    raise RuntimeError("token=PLANTEDerror went wrong")


def _big(ctx: Context, timeout: float) -> Gathered:
    return Gathered("word " * 2_000, "generated")


def _blob(ctx: Context, timeout: float) -> Gathered:
    # One unbroken 5 MB "word" (a base64 dump, say): dropped whole, and quickly.
    return Gathered("before " + "A" * 5_000_000 + " after", "generated")


def test_items_fail_alone_at_their_limit_cap_and_errors(tmp_path: Path) -> None:
    (tmp_path / "empty-root").mkdir()
    items = (Item("slow.txt", "hangs", _sleeper, 1.0, 1000),
             Item("broken.txt", "raises", _broken, 5.0, 1000),
             Item("big.txt", "too big", _big, 5.0, 1000),
             Item("blob.txt", "one huge token", _blob, 5.0, 8_000_000))
    start = time.monotonic()
    index = run_items(tmp_path, items)
    assert time.monotonic() - start < 15
    assert index["slow.txt"]["status"] == "failed"
    assert index["slow.txt"]["reason"] == "timed out after 1s"
    assert index["broken.txt"]["status"] == "failed"
    assert index["broken.txt"]["reason"] == "RuntimeError: token=*** went wrong"
    assert index["big.txt"]["status"] == "partial" and index["big.txt"]["bytes"] < 1100
    files = members(tmp_path / "b.tar.gz")
    assert files["big.txt"].startswith("word " * 200) and "cut at 1000 bytes of 10000" in files["big.txt"]
    assert files["blob.txt"] == "before [neuronctl: 5000000 characters dropped] after"
    assert index["blob.txt"]["status"] == "collected"


def _bundle_cli(tmp_path: Path, out: Path, preexec: Callable[[], None] | None = None
                ) -> subprocess.CompletedProcess[str]:
    root = tmp_path / "noisy-root"
    (root / "sys").mkdir(parents=True)  # an empty machine is still a root: sys/ (issue 22, item 11)
    # ~200 kB that does not compress: the archive is bigger than any limit set below.
    write(root, "/var/log/kern.log", "".join(f"neuron: {os.urandom(32).hex()}\n"
                                             for _ in range(3000)))
    return subprocess.run([sys.executable, "-m", "neuronctl", "bundle", "-o", str(out),
                           "--sysroot", str(root)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, check=False,
                          preexec_fn=preexec)


def test_output_into_a_missing_directory_exits_2_before_collecting_and_writes_nothing(
        tmp_path: Path) -> None:
    # Bad input, found before any item is gathered (the early output-path check).
    blocker = write(tmp_path, "not-a-dir", "")
    proc = _bundle_cli(tmp_path, blocker / "case.tar.gz")
    assert proc.returncode == 2, proc.stderr
    assert "is not a directory" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert blocker.read_text() == ""


def _small_files() -> None:
    # Writing past 20 kB fails with EFBIG (the signal that would kill us is ignored, as a
    # full disk fails a write with ENOSPC): the archive fails half-way through being written.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))


@pytest.mark.parametrize("existing", [False, True])
def test_a_write_failing_half_way_leaves_no_partial_archive(tmp_path: Path, existing: bool) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "case.tar.gz"
    if existing:
        out.write_bytes(b"the previous bundle")
    proc = _bundle_cli(tmp_path, out, _small_files)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "cannot write" in proc.stderr and "nothing was written" in proc.stderr
    left = sorted(p.name for p in out_dir.iterdir())
    assert left == (["case.tar.gz"] if existing else [])
    if existing:
        assert out.read_bytes() == b"the previous bundle"
