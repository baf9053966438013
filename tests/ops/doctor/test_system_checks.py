"""The system checks against fixture sysroots built here: a holder process tree in /proc, a kernel
upgraded without a DKMS rebuild, mixed dpkg generations, two libnrt, a container without
/dev/neuron*, nodes this user cannot open; and neuron-ls's two JSON forms."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from support.doctor_facts import sysroot_facts
from support.sysroots import write

from neuronctl.ops.doctor.system_checks import (
    check_device_access,
    check_device_holders,
    check_driver_kernel,
    check_system_packages,
)
from neuronctl.probes.device_holders import find_device_holders
from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.system_packages import parse_neuron_ls_json, run_neuron_ls
from neuronctl.probes.tools import run_tool


def process(root: Path, pid: int, ppid: int, cmd: list[str], fds: dict[int, str],
            state: str = "S (sleeping)") -> None:
    base = root / "proc" / str(pid)
    (base / "fd").mkdir(parents=True)
    (base / "cmdline").write_bytes(b"\0".join(w.encode() for w in cmd) + b"\0")
    (base / "status").write_text(f"Name:\t{cmd[0][:15]}\nState:\t{state}\nPid:\t{pid}\n"
                                 f"PPid:\t{ppid}\n")
    for fd, target in fds.items():
        os.symlink(target, base / "fd" / str(fd))


def holder_tree(root: Path) -> None:
    for i in range(2):
        write(root, f"/dev/neuron{i}", "")
    process(root, 1, 0, ["/sbin/init"], {0: "/dev/null"})
    process(root, 100, 1, ["python", "train.py"], {3: "/dev/neuron0", 4: "/dev/neuron1",
                                                   5: "socket:[123]"})
    process(root, 200, 999, ["python", "serve.py"], {7: "/dev/neuron1"})  # parent 999 is gone
    process(root, 300, 100, ["worker"], {9: "/dev/neuron0"}, state="Z (zombie)")
    process(root, 400, 1, ["bash"], {0: "/dev/pts/0", 1: "/dev/neuron_fake"})


def test_holders_listed_with_pid_command_devices_and_stale_ones_called_out(tmp_path: Path) -> None:
    holder_tree(tmp_path)
    outcome = check_device_holders(sysroot_facts(tmp_path))
    assert outcome.status == "warn"
    assert "3 process(es) hold Neuron devices" in outcome.message
    assert "2 of them left behind" in outcome.message
    text = "\n".join(outcome.details)
    assert "pid 100 (python train.py) holds /dev/neuron0, /dev/neuron1" in text
    assert "pid 200 (python serve.py) holds /dev/neuron1 [parent gone]" in text
    assert "pid 300 (worker) holds /dev/neuron0 [ZOMBIE]" in text
    assert "pid 400" not in text and "pid 1 " not in text
    # The zombie's parent (100) must reap it: it is named in the fix as well.
    assert outcome.fix is not None and outcome.fix.startswith("kill 100 200 300 && kill 100")


def test_no_holders_passes_and_no_nodes_skips(tmp_path: Path) -> None:
    process(tmp_path, 1, 0, ["/sbin/init"], {0: "/dev/null"})
    assert check_device_holders(sysroot_facts(tmp_path)).status == "skip"
    write(tmp_path, "/dev/neuron0", "")
    assert check_device_holders(sysroot_facts(tmp_path)).status == "pass"


def test_without_device_nodes_no_process_is_looked_at(tmp_path: Path) -> None:
    """No /dev/neuron* here: skipped before the /proc scan, which on a host without Neuron
    devices (a laptop, a CI runner with thousands of processes) would read every fd table."""
    holder_tree(tmp_path)  # processes whose fd links name /dev/neuron0 and 1 ...
    for node in (tmp_path / "dev").glob("neuron*"):
        node.unlink()  # ... which do not exist (read, the scan would warn about three holders)
    outcome = check_device_holders(sysroot_facts(tmp_path))
    assert (outcome.status, outcome.details) == ("skip", ())


def test_unreadable_fd_directory_is_counted_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "proc" / "42").mkdir(parents=True)  # no fd/ directory: cannot be listed
    scan = find_device_holders(SysRoot(tmp_path))
    assert scan.holders == () and scan.unreadable == 1


def kernel_tree(root: Path, running: str, built_for: str) -> None:
    write(root, "/proc/sys/kernel/osrelease", running + "\n")
    write(root, f"/lib/modules/{built_for}/updates/dkms/neuron.ko", "")
    (root / "lib" / "modules" / running / "kernel").mkdir(parents=True)
    write(root, f"/var/lib/dkms/aws-neuronx/2.31.7.0/{built_for}/x86_64/module/neuron.ko", "")
    (root / "var/lib/dkms/aws-neuronx/2.31.7.0/source").mkdir(parents=True)
    write(root, "/var/lib/dpkg/status", "Package: aws-neuronx-dkms\nStatus: install ok installed\n"
                                        "Version: 2.31.7.0-1\n")


def test_kernel_upgraded_without_dkms_rebuild_fails_with_the_dkms_command(tmp_path: Path) -> None:
    kernel_tree(tmp_path, running="6.8.0-1020-aws", built_for="6.8.0-1015-aws")
    outcome = check_driver_kernel(sysroot_facts(tmp_path))
    assert outcome.status == "fail"
    assert "6.8.0-1020-aws" in outcome.message and "built for 6.8.0-1015-aws" in outcome.message
    assert outcome.fix == ("sudo apt-get install -y linux-headers-6.8.0-1020-aws && "
                           "sudo dkms install -m aws-neuronx -v 2.31.7.0 -k 6.8.0-1020-aws && "
                           "sudo modprobe neuron")
    assert "dkms aws-neuronx/2.31.7.0: built for 6.8.0-1015-aws" in outcome.details


def test_module_for_the_running_kernel_passes(tmp_path: Path) -> None:
    kernel_tree(tmp_path, running="6.8.0-1015-aws", built_for="6.8.0-1015-aws")
    assert check_driver_kernel(sysroot_facts(tmp_path)).status == "pass"


def test_hostile_kernel_release_is_not_used_as_a_path(tmp_path: Path) -> None:
    write(tmp_path, "/proc/sys/kernel/osrelease", "../../../etc\n")
    assert check_driver_kernel(sysroot_facts(tmp_path)).status == "skip"


MIXED_DPKG = """Package: aws-neuron-dkms
Status: install ok installed
Version: 2.3.26.0-1

Package: aws-neuronx-dkms
Status: install ok installed
Version: 2.31.7.0-1

Package: aws-neuron-tools
Status: install ok installed
Version: 2.1.4.0-1

Package: aws-neuronx-runtime-lib
Status: install ok installed
Version: 2.35.30.0-1
"""


def test_mixed_generations_fail_and_name_the_old_libnrt(tmp_path: Path) -> None:
    write(tmp_path, "/var/lib/dpkg/status", MIXED_DPKG)
    write(tmp_path, "/var/lib/dpkg/info/aws-neuron-tools.list",
          "/opt/aws/neuron/bin/neuron-top\n/opt/aws/neuron/lib/libnrt.so.1\n")
    outcome = check_system_packages(sysroot_facts(tmp_path))
    assert outcome.status == "fail"
    assert "aws-neuron-dkms, aws-neuron-tools installed beside" in outcome.message
    assert "aws-neuron-tools still owns /opt/aws/neuron/lib/libnrt.so.1" in outcome.message
    assert outcome.fix == "sudo apt-get remove -y aws-neuron-dkms aws-neuron-tools"


def test_two_libnrt_on_the_loader_path_warn(tmp_path: Path) -> None:
    write(tmp_path, "/opt/aws/neuron/lib/libnrt.so.1", "new")
    os.symlink("libnrt.so.1", tmp_path / "opt/aws/neuron/lib/libnrt.so")
    write(tmp_path, "/home/me/old-runtime/libnrt.so.1", "old")
    # A link elsewhere to the same file is one library, not two.
    write(tmp_path, "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n")
    write(tmp_path, "/etc/ld.so.conf.d/neuron.conf", "/usr/local/neuron\n")
    (tmp_path / "usr/local/neuron").mkdir(parents=True)
    os.symlink("/opt/aws/neuron/lib/libnrt.so.1", tmp_path / "usr/local/neuron/libnrt.so.1")
    one = check_system_packages(sysroot_facts(tmp_path))
    assert one.status == "pass", one
    two = check_system_packages(sysroot_facts(tmp_path, {"LD_LIBRARY_PATH": "/home/me/old-runtime"}))
    assert two.status == "warn"
    assert "2 different libnrt.so on the loader path; the first (/home/me/old-runtime)" in two.message


def test_system_packages_from_another_release_warn_with_pins(tmp_path: Path) -> None:
    # runtime 2.34.10.0 and tools 2.32.28.0 are Neuron 2.32.0's; the stack checked is 2.33.0.
    write(tmp_path, "/var/lib/dpkg/status",
          "Package: aws-neuronx-runtime-lib\nStatus: install ok installed\nVersion: 2.34.10.0-1\n\n"
          "Package: aws-neuronx-dkms\nStatus: install ok installed\nVersion: 2.31.7.0-1\n")
    outcome = check_system_packages(sysroot_facts(tmp_path))
    assert outcome.status == "warn"
    assert "aws-neuronx-runtime-lib 2.34.10.0 is from Neuron 2.32.0" in outcome.message
    assert "the Python stack is Neuron 2.33.0 (2.35.30.0)" in outcome.message
    assert outcome.fix == "sudo apt-get install -y 'aws-neuronx-runtime-lib=2.35.30.0*'"


def test_container_without_devices_on_a_neuron_host_names_the_flags(tmp_path: Path) -> None:
    write(tmp_path, "/.dockerenv", "")
    write(tmp_path, "/proc/1/cgroup", "0::/system.slice/docker-abc.scope\n")
    for i in range(2):
        write(tmp_path, f"/sys/bus/pci/devices/0000:{0xcc + i:02x}:00.0/vendor", "0x1d0f\n")
    outcome = check_device_access(sysroot_facts(tmp_path))
    assert outcome.status == "fail"
    assert outcome.fix == "docker run --device=/dev/neuron0 --device=/dev/neuron1 ..."
    write(tmp_path, "/proc/1/cgroup", "0::/kubepods/burstable/pod1234/abc\n")
    outcome = check_device_access(sysroot_facts(tmp_path))
    assert outcome.fix is not None and "aws.amazon.com/neuron: 2" in outcome.fix


def test_nodes_this_user_cannot_open_fail(tmp_path: Path) -> None:
    for i in range(2):
        node = write(tmp_path, f"/dev/neuron{i}", "")
        node.chmod(0o660)
    outcome = check_device_access(sysroot_facts(tmp_path), uid=1000, groups={1000})
    assert outcome.status == "fail"
    assert "2 of 2" in outcome.message and "/dev/neuron0, /dev/neuron1" in outcome.message
    ok = check_device_access(sysroot_facts(tmp_path), uid=1000, groups={1000, node.stat().st_gid})
    assert ok.status == "pass"
    assert stat.S_IMODE(os.stat(node).st_mode) == 0o660


DEVICE = {"neuron_device": 0, "bdf": "cc:00.0", "nc_count": 8}


def test_neuron_ls_both_json_forms(tmp_path: Path) -> None:
    assert parse_neuron_ls_json(json.dumps([DEVICE])) == [DEVICE]
    assert parse_neuron_ls_json(json.dumps({"neuron_devices": [DEVICE], "version": "2.34"})) \
        == [DEVICE]
    assert parse_neuron_ls_json("{not json") is None
    # A tool that knows only the old flag: the new one fails, the old one is used.
    tool = write(tmp_path, "neuron-ls", "#!/bin/sh\n[ \"$1\" = --json-output ] || exit 2\n"
                                        f"echo '{json.dumps([DEVICE])}'\n")
    tool.chmod(0o755)
    old = run_neuron_ls(tool, run_tool)
    assert old.form == "json-output" and old.devices == [DEVICE]
    assert old.errors == ("--output-format json: exit 2",)
    tool.write_text("#!/bin/sh\n[ \"$1\" = --output-format ] || exit 2\n"
                    f"echo '{json.dumps({'neuron_devices': [DEVICE]})}'\n")
    new = run_neuron_ls(tool, run_tool)
    assert new.form == "output-format" and new.devices == [DEVICE]


def test_kernel_mismatch_outweighs_a_passing_driver_check(tmp_path: Path) -> None:
    from neuronctl.ops.doctor.runner import CheckOutcome
    from neuronctl.ops.doctor.system_checks import with_kernel_check

    kernel_tree(tmp_path, running="6.8.0-1020-aws", built_for="6.8.0-1015-aws")
    driver = CheckOutcome("pass", "driver 2.31.7.0", None, ("loaded module: 2.31.7.0",))
    merged = with_kernel_check(driver, check_driver_kernel(sysroot_facts(tmp_path)))
    assert merged.status == "fail" and merged.message.endswith("; driver 2.31.7.0")
    assert merged.fix is not None and "dkms install" in merged.fix
    assert merged.details[0] == "loaded module: 2.31.7.0"
    skipped = with_kernel_check(driver, CheckOutcome("skip", "unknown kernel"))
    assert skipped == driver


def test_rpm_packages_are_read_with_a_time_limit_and_validated(tmp_path: Path) -> None:
    from neuronctl.probes.system_packages import read_system_packages
    from neuronctl.probes.tools import ToolResult

    (tmp_path / "var/lib/rpm").mkdir(parents=True)
    calls: list[tuple[list[str], float]] = []

    def rpm(argv: object, timeout: float) -> ToolResult:
        calls.append((list(argv), timeout))  # type: ignore[call-overload]
        return ToolResult(0, "aws-neuronx-dkms 2.31.7.0\naws-neuron-dkms 2.3.26.0\n"
                             "aws-neuronx-tools ../../evil\nbash 5.2\n", "")

    pk = read_system_packages(SysRoot(tmp_path), rpm)
    assert pk.packages == {"aws-neuronx-dkms": "2.31.7.0", "aws-neuron-dkms": "2.3.26.0"}
    assert pk.source == "rpm"
    argv, timeout = calls[0]
    assert argv[:3] == ["rpm", "--root", str(tmp_path)] and 0 < timeout <= 10
    gone = read_system_packages(SysRoot(tmp_path), lambda a, t: ToolResult(None, "", "", "no rpm"))
    assert gone.packages == {} and gone.source == "none"


def test_the_dpkg_status_is_read_once_a_run_whichever_reads_it_first(tmp_path: Path, monkeypatch) -> None:
    """Hardware detection and packages.system both need dpkg's Neuron packages: the status file
    (~0.7 MB on a small image) is read once for them in a doctor run, and the check judges what
    it holds either way (hardware gathered first, as after an install, or the check first)."""
    write(tmp_path, "/var/lib/dpkg/status",
          "Package: aws-neuronx-runtime-lib\nStatus: install ok installed\nVersion: 2.34.10.0-1\n\n"
          "Package: aws-neuronx-dkms\nStatus: install ok installed\nVersion: 2.31.7.0-1\n")
    reads: list[str] = []
    real = SysRoot.read_bytes

    def counted(self: SysRoot, absolute: str | Path, *args: object, **kwargs: object) -> bytes | None:
        reads.append(str(absolute))
        return real(self, absolute, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SysRoot, "read_bytes", counted)
    for hardware_first in (True, False):
        reads.clear()
        f = sysroot_facts(tmp_path)
        f.planned = frozenset({"hardware"})  # a chosen check reads the hardware (run_doctor says so)
        if hardware_first:
            assert f.hardware.system_packages["aws-neuronx-dkms"] == "2.31.7.0"
        outcome = check_system_packages(f)
        assert outcome.status == "warn", outcome
        assert "aws-neuronx-runtime-lib 2.34.10.0 is from Neuron 2.32.0" in outcome.message
        assert f.system_packages.packages["aws-neuronx-dkms"] == "2.31.7.0"
        assert f.hardware.system_packages["aws-neuronx-dkms"] == "2.31.7.0"  # after, either way
        assert reads.count("/var/lib/dpkg/status") == 1, (hardware_first, reads)
    # A run whose checks read no hardware (--only packages.system) reads the file itself, once.
    reads.clear()
    alone = sysroot_facts(tmp_path)
    assert check_system_packages(alone).status == "warn"
    assert reads.count("/var/lib/dpkg/status") == 1 and not alone.gathered("hardware")
