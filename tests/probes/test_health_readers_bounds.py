"""Hostile captured trees against the issue-27 readers: each must stay bounded, inside the root,
and never take garbage for a fact (a count, a device, a hardware error)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.health_sysroots import HW_LINES, add_health, add_kernel_log
from support.sysroots import build_host, write

from neuronctl.probes.compile_cache import CacheLocation, inspect_cache
from neuronctl.probes.device_health import read_device_health
from neuronctl.probes.efa import read_efa
from neuronctl.probes.kernel_log import read_kernel_log
from neuronctl.probes.sysroot import SysRoot

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_health_hostile.py)


def test_a_log_that_is_a_directory_or_binary_is_not_a_fact(tmp_path: Path) -> None:
    root = build_host(tmp_path / "h", "trn2")
    (root / "var/log/kern.log").mkdir(parents=True)  # a directory where the log should be
    write(root, "/var/log/dmesg", "\0\xff" * 5000 + "\n[1.0] \x1b]0;pwned\x07 NEURON_HW_ERR=DMA_ERROR\n")
    log = read_kernel_log(SysRoot(root))
    assert log.source == "/var/log/dmesg"
    assert all("\x1b" not in line.text and "\x07" not in line.text for line in log.lines)
    assert all(len(line.text) <= 2048 for line in log.lines)


def test_health_files_full_of_tokens_and_huge_counters(tmp_path: Path) -> None:
    root = build_host(tmp_path / "h", "trn2")
    add_health(root, 0, "hbm " * 100_000, {"mem_ecc_corrected": "9" * 40 + "\n"})
    add_health(root, 1, "\x1b[2J$(reboot)\n", {"sram_ecc_corrected": "-5\n"})
    write(root, "/sys/class/neuron_device/neuron123456789012/core_count", "4\n")  # past any host
    health = read_device_health(SysRoot(root))
    assert [d.name for d in health] == ["neuron0", "neuron1"]
    assert len(health[0].unhealthy or ()) == 64 and health[0].ecc == {}
    assert health[0].unreadable == ("mem_ecc_corrected",)
    assert health[1].unhealthy == ("??2J??reboot?",) and health[1].unreadable == ("sram_ecc_corrected",)


def test_a_deep_or_wide_stats_tree_is_walked_within_its_bound(tmp_path: Path) -> None:
    root = build_host(tmp_path / "h", "trn2")
    deep = root / "sys/class/neuron_device/neuron0/stats/hardware"
    for i in range(600):  # wider than MAX_ENTRIES
        (deep / f"d{i}").mkdir(parents=True)
    write(root, "/sys/class/neuron_device/neuron0/stats/hardware/a/b/c/d/e/mem_ecc_corrected", "7\n")
    os.symlink("/", deep / "loop")  # a link to the real root: never entered
    health = read_device_health(SysRoot(root))
    assert health[0].ecc == {}


def test_a_cache_tree_of_links_and_a_mountinfo_of_garbage(tmp_path: Path) -> None:
    root = build_host(tmp_path / "h", "trn2")
    cache = root / "var/tmp/neuron-compile-cache"
    cache.mkdir(parents=True)
    os.symlink("/", cache / "neuronxcc-2.0.0")
    os.symlink("/etc", cache / "MODULE_x")
    write(root, "/proc/self/mountinfo", "garbage\n - \n" + "x" * 100000 + "\n")
    state = inspect_cache(SysRoot(root), CacheLocation("legacy-xla",
                                                       "/var/tmp/neuron-compile-cache",
                                                       "default", True))
    assert state.present and all(e.link and e.size == 0 for e in state.entries)
    assert state.fstype is None


def test_a_cache_path_leaving_the_root_is_not_read(tmp_path: Path, cli, monkeypatch) -> None:
    root = build_host(tmp_path / "h", "trn2")
    outside = tmp_path / "outside"
    write(outside, "neuronxcc-1.0/MODULE/model.neff", "secret")
    (root / "var").mkdir(exist_ok=True)
    os.symlink(outside, root / "var/tmp")  # a parent folder that is a link out of the root
    monkeypatch.delenv("NEURON_CC_FLAGS", raising=False)
    monkeypatch.delenv("NEURON_COMPILE_CACHE_URL", raising=False)
    r = cli("doctor", "--level", "1", "--only", "cache.compile", "--json", "--sysroot", str(root))
    (check,) = json.loads(r.out)["checks"]
    assert "neuronxcc-1.0" not in json.dumps(check)


def test_infiniband_names_and_driver_links_are_only_named(tmp_path: Path) -> None:
    root = build_host(tmp_path / "h", "trn2")
    for i in range(200):  # more than MAX_RDMA_DEVICES
        dev = root / f"sys/class/infiniband/e{i}/device"
        dev.mkdir(parents=True)
        os.symlink("../../efa", dev / "driver")
    efa = read_efa(SysRoot(root))
    assert len(efa.devices) == 128


def test_a_kernel_log_link_to_this_machines_kmsg_is_not_read(tmp_path: Path) -> None:
    root = build_host(tmp_path / "h", "trn2")
    (root / "var/log").mkdir(parents=True)
    os.symlink("/dev/kmsg", root / "var/log/kern.log")
    add_kernel_log(root, [HW_LINES["DMA_ERROR"]], name="/var/log/dmesg")
    log = read_kernel_log(SysRoot(root))
    assert log.source == "/var/log/dmesg"  # the link out of the root is passed over
