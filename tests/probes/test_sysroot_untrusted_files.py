"""A captured sysroot is untrusted: its files may be huge, devices or FIFOs, and its programs
must not run unless the user asks for that."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from support.sysroots import build_cpu_host, write

from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.system_facts import read_bounded

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile_sysroot.py)

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


def _planted_tool(root: Path, marker: Path) -> None:
    tool = write(root, "/opt/aws/neuron/bin/neuron-ls",
                 f"#!/bin/sh\ntouch '{marker}'\necho '[]'\n")
    tool.chmod(0o755)


def test_tools_inside_a_sysroot_run_only_when_asked(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from neuronctl.probes.hardware import detect_hardware

    root, marker = build_cpu_host(tmp_path / "root"), tmp_path / "ran"
    _planted_tool(root, marker)
    report = detect_hardware(SysRoot(root), env={}, imds=lambda _env: None)  # type: ignore[arg-type,return-value]
    assert not marker.exists()
    assert report.neuron_ls == "not run: tools inside --sysroot run only with NEURONCTL_SYSROOT_TOOLS=1"
    monkeypatch.setenv("NEURONCTL_SYSROOT_TOOLS", "0")
    detect_hardware(SysRoot(root), env={}, imds=lambda _env: None)  # type: ignore[arg-type,return-value]
    assert not marker.exists()
    monkeypatch.setenv("NEURONCTL_SYSROOT_TOOLS", "1")
    detect_hardware(SysRoot(root), env={}, imds=lambda _env: None)  # type: ignore[arg-type,return-value]
    assert marker.exists()


def test_a_sysroot_tools_value_other_than_1_or_0_is_bad_input(cli, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """"yes" once read as off, silently: a switch that lets a tree's programs run says what it
    takes, and runs nothing."""
    root, marker = build_cpu_host(tmp_path / "root"), tmp_path / "ran"
    _planted_tool(root, marker)
    for value in ("yes", "true", "on"):
        monkeypatch.setenv("NEURONCTL_SYSROOT_TOOLS", value)
        r = cli("detect", "--sysroot", str(root))
        assert r.code == 2 and not marker.exists(), r.err
        assert f"NEURONCTL_SYSROOT_TOOLS: expected 1 (on) or 0 (off), got '{value}'" in r.err
        assert len(r.err.strip().splitlines()) <= 2 and "Traceback" not in r.err
    # doctor and bundle say so before any work: not ten failed checks, not an archive of errors
    monkeypatch.setenv("NEURONCTL_SYSROOT_TOOLS", "yes")
    archive = tmp_path / "b.tar.gz"
    for args in (["doctor", "--level", "1"], ["bundle", "-o", str(archive)]):
        r = cli(*args, "--sysroot", str(root))
        assert r.code == 2 and r.err.startswith("neuronctl: error: NEURONCTL_SYSROOT_TOOLS: "), r.err
        assert len(r.err.strip().splitlines()) == 1 and not marker.exists()
    assert not archive.exists()


def test_bundle_does_not_run_a_sysroot_tool_unasked(tmp_path: Path) -> None:
    import json
    import tarfile

    from neuronctl.ops.bundle import BundleRequest, make_bundle
    from neuronctl.ops.bundle_items import ITEMS

    root, marker = build_cpu_host(tmp_path / "root"), tmp_path / "ran"
    _planted_tool(root, marker)
    items = tuple(i for i in ITEMS if i.name.startswith("neuron-ls"))
    outcome = make_bundle(BundleRequest(output=tmp_path / "b.tar.gz", python=sys.executable,
                                        sysroot=SysRoot(root), config=tmp_path / "none.toml",
                                        items=items))
    with tarfile.open(outcome.path, "r:gz") as tar:
        handle = next(tar.extractfile(m) for m in tar.getmembers() if m.name.endswith("index.json"))
        assert handle is not None
        index = json.loads(handle.read())
    assert not marker.exists()
    for item in index["items"]:
        assert item["status"] == "unavailable"
        assert "NEURONCTL_SYSROOT_TOOLS=1" in item["reason"]


def test_run_capped_stops_a_flood_at_the_cap() -> None:
    import time

    from neuronctl.probes.tools import run_capped, run_tool

    start = time.monotonic()
    done = run_capped([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"],
                      30, cap=1 << 20)
    assert done.over_cap and done.returncode is None and len(done.stdout) == 1 << 20
    assert time.monotonic() - start < 15
    result = run_tool(["/bin/sh", "-c", "yes"], 30)
    assert result.error is not None and result.error.startswith("output over")


def test_run_capped_kills_a_grandchild_holding_the_pipe() -> None:
    import time

    from neuronctl.probes.tools import run_capped

    start = time.monotonic()
    done = run_capped(["/bin/sh", "-c", "sleep 60 & echo started"], 1.5)
    assert done.timed_out and b"started" in done.stdout
    assert time.monotonic() - start < 10


def test_bundle_and_fleet_commands_are_capped() -> None:
    from neuronctl.ops.bundle_items import Unavailable, run_limited

    with pytest.raises(Unavailable, match="output over 1000 bytes"):
        run_limited(["/bin/sh", "-c", "yes"], 30, cap=1000)


def test_reads_never_leave_the_sysroot(tmp_path: Path) -> None:
    from neuronctl.probes.device_holders import find_device_holders
    from neuronctl.probes.system_facts import read_kernel_modules
    from neuronctl.probes.system_packages import find_runtime_libraries, loader_dirs

    root, outside = tmp_path / "root", tmp_path / "outside"
    write(outside, "/evil.conf", "/leaked-dir\n")
    write(outside, "/secret", "host secret\n")
    write(outside, "/libnrt.so.1", "")
    write(outside, "/extra/neuron.ko", "")
    write(root, "/etc/ld.so.conf", "include ../outside/*.conf\ninclude ../../outside/*.conf\n")
    write(root, "/proc/sys/kernel/osrelease", "6.1.0\n")
    lib = root / "opt/aws/neuron/lib"
    lib.mkdir(parents=True)
    os.symlink("../../../../../outside/libnrt.so.1", lib / "libnrt.so.1")
    (root / "lib/modules").mkdir(parents=True)
    os.symlink(outside, root / "lib/modules/6.1.0")
    os.symlink(outside / "secret", root / "etc/hostname")
    (root / "proc/²").mkdir()  # "²".isdigit() is true; int() refuses it
    sysroot = SysRoot(root)

    assert "/leaked-dir" not in loader_dirs(sysroot, {})
    libs = find_runtime_libraries(sysroot, {})
    assert [lib.real for lib in libs] == ["/opt/aws/neuron/lib/libnrt.so.1"]
    assert read_kernel_modules(sysroot).modules_by_kernel.get("6.1.0", ()) == ()
    assert sysroot.read("/etc/hostname") is None
    assert sysroot.glob("/etc/../..", "*") == [] and sysroot.glob("/etc", "../*") == []
    assert find_device_holders(sysroot).holders == ()


def test_host_tools_are_read_up_to_the_cap_only() -> None:
    import time

    from neuronctl.probes.host_facts import OUTPUT_CAP, run_bounded

    start = time.monotonic()
    out, why = run_bounded(["/bin/sh", "-c", "yes"], 30, "yes")
    assert why == "" and out is not None and len(out) == OUTPUT_CAP
    assert time.monotonic() - start < 10  # stopped at the cap, not at the 30 s deadline
