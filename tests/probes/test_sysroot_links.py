"""Hostile sysroots, second pass: every read of a captured tree stays inside it (links out of the
tree put this machine's files, a .netrc, into bundles and the doctor's messages); a sysroot that
is missing or holds neither proc/ nor sys/ is exit 2 however it is named; and a kernel upgraded
without a DKMS rebuild gets the rebuild, not a package install that does nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.doctor_facts import sysroot_facts
from support.sysroots import build_host, captured, write

from neuronctl.ops.bundle import BundleRequest, make_bundle
from neuronctl.ops.bundle_items import ITEMS, Context
from neuronctl.ops.doctor.checks_hardware import check_driver_and_kernel
from neuronctl.ops.doctor.system_checks import check_device_holders
from neuronctl.probes.device_holders import descends_from, find_device_holders
from neuronctl.probes.host_facts import gather_host_facts
from neuronctl.probes.nvidia import detect_nvidia
from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.system_facts import container_evidence, read_device_access
from neuronctl.probes.system_packages import read_system_packages

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_sysroot.py)

SECRET = "PLANTEDhostsecret"
NETRC = f"machine neuron.example login bob password {SECRET}\n"


def host_file(tmp_path: Path, name: str, text: str) -> Path:
    """A file of 'this machine', outside every captured tree."""
    path = tmp_path / "host" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def link(root: Path, absolute: str, target: Path | str) -> Path:
    path = root / absolute.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)
    return path


# ------------------------------------------------------------------ item 4: reads stay inside

def test_kernel_log_linked_out_of_the_tree_is_not_bundled(tmp_path: Path) -> None:
    root = captured(tmp_path)
    netrc = host_file(tmp_path, ".netrc", f"neuron {NETRC}")
    link(root, "/var/log/kern.log", netrc)
    item = next(i for i in ITEMS if i.name == "kernel-log.txt")
    ctx = Context(SysRoot(root), sys.executable, (), {}, tmp_path / "none.toml", tmp_path)
    try:
        text = item.gather(ctx, 5.0).text
    except Exception as exc:  # Unavailable: what the index says instead
        text = str(exc)
    assert SECRET not in text and "neuron.example" not in text


def test_kernel_log_tail_link_through_a_linked_directory_is_refused(tmp_path: Path) -> None:
    root = captured(tmp_path)
    host_file(tmp_path, "log/kern.log", f"kernel: neuron: {SECRET}\n")
    link(root, "/var/log", tmp_path / "host" / "log")  # the directory, not the file, leaves
    assert SysRoot(root).read_bytes("/var/log/kern.log", 1 << 20, tail=True) is None
    outcome = make_bundle(BundleRequest(output=tmp_path / "b.tar.gz", python=sys.executable,
                                        sysroot=SysRoot(root), config=tmp_path / "none.toml",
                                        items=tuple(i for i in ITEMS
                                                    if i.name == "kernel-log.txt")))
    record = outcome.items[0]
    assert record.status == "unavailable" and SECRET not in (record.reason or "")


def _holder(root: Path, pid: int, cmdline: Path | None = None, status: Path | None = None) -> None:
    base = root / "proc" / str(pid)
    (base / "fd").mkdir(parents=True)
    os.symlink("/dev/neuron0", base / "fd" / "3")
    if cmdline is not None:
        os.symlink(cmdline, base / "cmdline")
    else:
        (base / "cmdline").write_bytes(b"python\0train.py\0")
    if status is not None:
        os.symlink(status, base / "status")
    else:
        (base / "status").write_text("Name:\tpython\nState:\tS (sleeping)\nPPid:\t1\n")


def test_proc_cmdline_and_status_linked_out_reach_no_message(tmp_path: Path) -> None:
    root = captured(tmp_path)
    write(root, "/dev/neuron0", "")
    _holder(root, 1)
    _holder(root, 100, cmdline=host_file(tmp_path, "cmdline", f"curl\0--netrc\0{SECRET}\0"))
    _holder(root, 200, status=host_file(tmp_path, "status",
                                        f"Name:\t{SECRET}\nState:\tZ (zombie)\nPPid:\t4242\n"))
    scan = find_device_holders(SysRoot(root))
    shown = " ".join(h.describe() for h in scan.holders)
    assert SECRET not in shown and "ZOMBIE" not in shown and "parent gone" not in shown
    outcome = check_device_holders(sysroot_facts(root))
    assert SECRET not in outcome.message + " ".join(outcome.details) + (outcome.fix or "")
    assert not descends_from(SysRoot(root), 200, 4242)  # the outside status names no parent


def test_a_proc_entry_linked_out_of_the_tree_is_no_holder(tmp_path: Path) -> None:
    root = captured(tmp_path)
    write(root, "/dev/neuron0", "")
    elsewhere = tmp_path / "host" / "proc-777"
    (elsewhere / "fd").mkdir(parents=True)
    os.symlink("/dev/neuron0", elsewhere / "fd" / "3")
    (elsewhere / "cmdline").write_bytes(f"ssh\0{SECRET}\0".encode())
    (elsewhere / "status").write_text("Name:\tssh\nState:\tS\nPPid:\t1\n")
    link(root, "/proc/777", elsewhere)
    assert find_device_holders(SysRoot(root)).holders == ()


def test_proc_1_cgroup_linked_out_is_no_container_evidence(tmp_path: Path) -> None:
    root = captured(tmp_path)
    link(root, "/proc/1/cgroup", host_file(tmp_path, "cgroup", "0::/kubepods/burstable/x\n"))
    assert container_evidence(SysRoot(root)) == ((), False)
    assert not read_device_access(SysRoot(root), 1000, {1000}).in_container


def test_pci_vendor_linked_out_counts_no_device(tmp_path: Path) -> None:
    root = captured(tmp_path)
    link(root, "/sys/bus/pci/devices/0000:cc:00.0/vendor", host_file(tmp_path, "v", "0x1d0f\n"))
    assert read_device_access(SysRoot(root), 1000, {1000}).host_devices == 0


def test_package_database_linked_out_is_not_read(tmp_path: Path) -> None:
    root = captured(tmp_path)
    link(root, "/var/lib/dpkg/status", host_file(
        tmp_path, "status", "Package: aws-neuronx-dkms\nStatus: install ok installed\n"
                            f"Version: 9.9.9.9-{SECRET}\n"))
    assert read_system_packages(SysRoot(root)).packages == {}


def test_dpkg_file_list_linked_out_is_not_read(tmp_path: Path) -> None:
    root = captured(tmp_path)
    write(root, "/var/lib/dpkg/status", "Package: aws-neuron-runtime\nStatus: install ok installed\n"
                                        "Version: 1.0-1\n\nPackage: aws-neuronx-runtime-lib\n"
                                        "Status: install ok installed\nVersion: 2.35.30.0-1\n")
    link(root, "/var/lib/dpkg/info/aws-neuron-runtime.list",
         host_file(tmp_path, "list", f"/opt/{SECRET}/libnrt.so.1\n"))
    assert read_system_packages(SysRoot(root)).old_generation_libnrt == {}


def test_nvidia_version_linked_out_is_no_driver(tmp_path: Path) -> None:
    root = captured(tmp_path)
    link(root, "/sys/module/nvidia/version", host_file(tmp_path, "nv", "550.144.03\n"))
    link(root, "/proc/driver/nvidia/version", host_file(
        tmp_path, "nvp", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.144.03  Release\n"))
    assert detect_nvidia(SysRoot(root)).driver is None


def test_os_release_linked_out_names_no_distribution(tmp_path: Path) -> None:
    root = captured(tmp_path)
    link(root, "/etc/os-release", host_file(tmp_path, "os-release",
                                            f'NAME="{SECRET}"\nPRETTY_NAME="{SECRET} 1"\nID=x\n'))
    link(root, "/etc/redhat-release", host_file(tmp_path, "rh", f"{SECRET} release 9\n"))
    host = gather_host_facts(SysRoot(root))
    assert SECRET not in json.dumps(host.to_json())
    # and a tree's own os-release is still read, as distro reads it
    write(root, "/usr/lib/os-release", 'PRETTY_NAME="Ubuntu 24.04 LTS"\nID=ubuntu\nVERSION_ID="24.04"\n')
    assert gather_host_facts(SysRoot(root)).distribution == "Ubuntu 24.04 LTS"


def test_a_huge_os_release_is_read_up_to_a_cap(tmp_path: Path) -> None:
    root = captured(tmp_path)
    big = write(root, "/etc/os-release", 'PRETTY_NAME="Debian 12"\nID=debian\n')
    with big.open("a") as fh:  # 64 MiB of one line after the fields: distro would read it all
        fh.truncate(64 << 20)
    host = gather_host_facts(SysRoot(root))
    assert host.distribution == "Debian 12"


def test_reads_check_the_file_opened_not_only_the_path(tmp_path: Path) -> None:
    root = captured(tmp_path)
    write(root, "/etc/hostname", "inside\n")
    outside = host_file(tmp_path, "hostname", SECRET)
    sysroot = SysRoot(root)
    assert sysroot.read("/etc/hostname") == "inside"
    link(root, "/etc/hostname2", outside)
    link(root, "/etc/loop", root / "etc" / "loop")
    assert sysroot.read("/etc/hostname2") is None and sysroot.read("/etc/loop") is None
    assert sysroot.read_bytes(root / "etc/../../host/hostname") is None


# ---------------------------------------------------------- item 11: a wrong sysroot is exit 2

def _cli(*args: str, env: dict[str, str] | None = None, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neuronctl", *args], cwd=cwd,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=120, check=False)


COMMANDS = [("doctor", "--level", "1"), ("env",), ("detect",), ("bundle", "-o", "b.tar.gz"),
            ("install", "--dry-run", "--release", "2.33.0")]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_a_missing_sysroot_in_the_environment_is_exit_2(tmp_path: Path, args: tuple[str, ...]) -> None:
    r = _cli(*args, env={"NEURONCTL_SYSROOT": str(tmp_path / "nope")}, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "NEURONCTL_SYSROOT" in lines[0] and "nope" in lines[0]
    assert "Traceback" not in r.stderr and not (tmp_path / "b.tar.gz").exists()


@pytest.mark.parametrize("how", ["flag", "env"])
@pytest.mark.parametrize("args", [COMMANDS[0], COMMANDS[2], COMMANDS[3]], ids=lambda a: a[0])
def test_a_root_without_proc_or_sys_is_exit_2(tmp_path: Path, args: tuple[str, ...],
                                              how: str) -> None:
    empty = tmp_path / "host-mount"  # a DaemonSet's /host with the mount missing: an empty dir
    empty.mkdir()
    extra, env = (("--sysroot", str(empty)), None) if how == "flag" else \
        ((), {"NEURONCTL_SYSROOT": str(empty)})
    r = _cli(*args, *extra, env=env, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and "neither proc/ nor sys/" in r.stderr
    assert "healthy" not in r.stdout


def test_a_root_with_sys_is_still_read(tmp_path: Path) -> None:
    root = build_host(tmp_path / "trn2", "trn2", neuron_ls=False)
    r = _cli("detect", "--json", env={"NEURONCTL_SYSROOT": str(root)}, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hardware"]["chip"] == "trn2"


def test_sysroot_validation_is_one_function() -> None:
    with pytest.raises(Exception, match="no such directory"):
        SysRoot.from_env(None, {"NEURONCTL_SYSROOT": "/nope/neuronctl"})
    assert SysRoot.from_env(None, {}).is_host and SysRoot.from_env(None, {"NEURONCTL_SYSROOT": "/"}).is_host


# ----------------------------------------------- item 12: the DKMS fix rebuilds for the kernel

def _upgraded_kernel(root: Path, *, dpkg: bool = True) -> Path:
    """A trn2 host rebooted into a new kernel without a DKMS rebuild: the driver is not loaded
    (no /dev/neuron*, no sysfs class, no module version), the PCI devices are there."""
    build_host(root, "trn2", driver=None, sysfs=False, dev_nodes=False, neuron_ls=False,
               runtime="2.35.30.0" if dpkg else None, dkms_pkg="2.31.7.0")
    write(root, "/proc/sys/kernel/osrelease", "6.8.0-1020-aws\n")
    write(root, "/lib/modules/6.8.0-1015-aws/updates/dkms/neuron.ko", "")
    (root / "lib/modules/6.8.0-1020-aws/kernel").mkdir(parents=True)
    write(root, "/var/lib/dkms/aws-neuronx/2.31.7.0/6.8.0-1015-aws/x86_64/module/neuron.ko", "")
    (root / "var/lib/dkms/aws-neuronx/2.31.7.0/source").mkdir(parents=True)
    return root


REBUILD = ("linux-headers-6.8.0-1020-aws && sudo dkms install -m aws-neuronx -v 2.31.7.0 "
           "-k 6.8.0-1020-aws && sudo modprobe neuron")


def test_driver_not_loaded_after_a_kernel_upgrade_gets_the_rebuild(tmp_path: Path) -> None:
    root = _upgraded_kernel(tmp_path / "host")
    r = _cli("doctor", "--json", "--only", "hardware.driver", "--sysroot", str(root), cwd=tmp_path)
    check = next(c for c in json.loads(r.stdout)["checks"] if c["id"] == "hardware.driver")
    assert check["status"] == "fail", check
    assert check["fix"] == f"sudo apt-get install -y {REBUILD}", check
    assert "aws-neuronx-dkms=" not in check["fix"]  # installing it again is a no-op


def test_rebuild_on_an_rpm_host_uses_its_package_manager(tmp_path: Path) -> None:
    root = _upgraded_kernel(tmp_path / "al2023", dpkg=False)
    (root / "var/lib/rpm").mkdir(parents=True)
    write(root, "/usr/bin/dnf", "")
    outcome = check_driver_and_kernel(sysroot_facts(root))
    assert outcome.status == "fail"
    assert outcome.fix == ("sudo dnf install -y kernel-devel-6.8.0-1020-aws && sudo dkms install "
                           "-m aws-neuronx -v 2.31.7.0 -k 6.8.0-1020-aws && sudo modprobe neuron")


def test_driver_not_loaded_with_a_module_for_the_kernel_is_modprobe(tmp_path: Path) -> None:
    root = _upgraded_kernel(tmp_path / "host")
    write(root, "/lib/modules/6.8.0-1020-aws/updates/dkms/neuron.ko", "")
    outcome = check_driver_and_kernel(sysroot_facts(root))
    assert outcome.status == "fail" and outcome.fix == "sudo modprobe neuron"


def test_driver_package_missing_is_still_installed(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    build_host(root, "trn2", driver=None, sysfs=False, dev_nodes=False, neuron_ls=False,
               runtime=None)
    outcome = check_driver_and_kernel(sysroot_facts(root))
    assert outcome.status == "fail"
    assert outcome.fix is not None and outcome.fix.startswith("sudo apt-get install -y ")
    assert "aws-neuronx-dkms=" in outcome.fix and outcome.fix.endswith("sudo modprobe neuron")


def test_existence_checks_stay_inside_the_tree(tmp_path: Path) -> None:
    root = captured(tmp_path)
    marker = host_file(tmp_path, "dockerenv", "")
    link(root, "/.dockerenv", marker)
    link(root, "/var/run/secrets/kubernetes.io", marker.parent)
    assert not SysRoot(root).exists("/.dockerenv")
    assert container_evidence(SysRoot(root)) == ((), False)
    write(root, "/run/.containerenv", "")
    assert container_evidence(SysRoot(root)) == (("/run/.containerenv",), False)


def test_the_open_descriptor_is_checked_against_the_root(tmp_path: Path) -> None:
    """A link swapped in after the path was resolved still cannot take the read out: the file
    actually opened is checked (through /proc/self/fd) against the root."""
    from neuronctl.probes.sysroot import read_regular_bytes

    root = captured(tmp_path)
    outside = host_file(tmp_path, "netrc", NETRC)
    assert read_regular_bytes(outside, within=root.resolve()) is None
    assert read_regular_bytes(outside) == NETRC.encode()
    inside = write(root, "/etc/hostname", "node\n")
    assert read_regular_bytes(inside, within=root.resolve()) == b"node\n"
