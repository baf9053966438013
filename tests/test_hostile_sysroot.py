"""A captured sysroot is untrusted: its files may be huge, devices or FIFOs, and its programs
must not run unless the user asks for that."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from sysroots import build_cpu_host, write

from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.system_facts import read_bounded

DMI = "sys/class/dmi/id/product_name"


def _cap_memory() -> None:
    # On code that reads /dev/zero whole, fail with MemoryError instead of eating the machine.
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _detect(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neuronctl", "detect", "--json", "--sysroot",
                           str(root)], capture_output=True, text=True, timeout=60,
                          preexec_fn=_cap_memory, check=False)


def test_sysroot_read_is_bounded(tmp_path: Path) -> None:
    write(tmp_path, DMI, "x" * (3 << 20))
    root = SysRoot(tmp_path)
    text = root.read("/" + DMI)
    assert text is not None and len(text) == 1 << 20
    assert len(root.read("/" + DMI, limit=10) or "") == 10
    assert len(read_bounded(tmp_path / DMI, 100) or "") == 100


def test_devices_and_fifos_in_a_sysroot_are_absent(tmp_path: Path) -> None:
    (tmp_path / "sys/class/dmi/id").mkdir(parents=True)
    os.symlink("/dev/zero", tmp_path / DMI)
    os.mkfifo(tmp_path / "fifo")
    root = SysRoot(tmp_path)
    assert root.read("/" + DMI) is None
    assert root.read("/fifo") is None  # the old read blocked here forever
    assert read_bounded(tmp_path / "fifo") is None
    assert read_bounded(tmp_path / DMI) is None


@pytest.mark.parametrize("kind", ["zero", "fifo"])
def test_detect_survives_a_hostile_sysroot(tmp_path: Path, kind: str) -> None:
    build_cpu_host(tmp_path)
    target = tmp_path / DMI
    target.unlink(missing_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "zero":
        os.symlink("/dev/zero", target)
    else:
        os.mkfifo(target)
    proc = _detect(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "internal error" not in proc.stderr and "MemoryError" not in proc.stderr
