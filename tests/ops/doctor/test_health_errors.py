"""`hardware.errors` (issue 27): the documented NEURON_HW_ERR codes in the kernel log, sysfs
health in both driver generations, corrected ECC over the threshold, devices the driver lost;
read bounded (a 1 GB log costs MAX_LOG_BYTES), through the root, never hanging."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.health_sysroots import (
    HW_LINES,
    LOOKALIKES,
    NOT_KERNEL,
    add_health,
    add_kernel_log,
    sparse_log,
)
from support.sysroots import build_host, write

from neuronctl.ops.doctor.health_rules import HW_ERROR_CODES, match_hw_errors
from neuronctl.probes import kernel_log as kl
from neuronctl.probes.kernel_log import LogLine, parse_kmsg_record, read_kernel_log
from neuronctl.probes.sysroot import SysRoot


def errors(cli, root: Path, *extra: str) -> dict:
    r = cli("doctor", "--level", "1", "--only", "hardware.errors", "--json", "--sysroot", str(root),
            *extra)
    assert r.code in (0, 1), r.out + r.err
    (check,) = json.loads(r.out)["checks"]
    return check


def test_each_documented_code_fails_with_device_count_and_drain(cli, tmp_path: Path) -> None:
    host = build_host(tmp_path / "h", "trn2")
    add_kernel_log(host, ["usb 1-1: new device", *HW_LINES.values(), HW_LINES["DMA_ERROR"]])
    check = errors(cli, host)
    assert check["status"] == "fail" and check["severity"] == "drain"
    for code in HW_ERROR_CODES:
        assert f"NEURON_HW_ERR={code}" in check["message"]
    assert "neuron0: NEURON_HW_ERR=DMA_ERROR x2" in check["message"]
    assert "neuron1: NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR x1" in check["message"]
    assert "drain" in check["fix"] and "neuronctl bundle" in check["fix"]
    assert any("kernel log: /var/log/kern.log" in d for d in check["details"])


def test_code_like_strings_in_another_context_do_not_match(cli, tmp_path: Path) -> None:
    host = build_host(tmp_path / "h", "trn2")
    add_kernel_log(host, list(LOOKALIKES))
    check = errors(cli, host)
    assert check["status"] == "pass", check
    assert check["severity"] == "info"


def test_another_programs_syslog_line_is_not_the_kernels(cli, tmp_path: Path) -> None:
    host = build_host(tmp_path / "h", "trn2")
    log = add_kernel_log(host, ["neuron: fine"])
    with log.open("a") as fh:
        fh.write(NOT_KERNEL + "\n")
    assert errors(cli, host)["status"] == "pass"


def test_the_matcher_takes_the_token_only() -> None:
    lines = [LogLine(t, None) for t in (*LOOKALIKES, "x NEURON_HW_ERR=DMA_ERROR",
                                         "NEURON_HW_ERR=NC_UNCORRECTABLE_ERROR")]
    hits = match_hw_errors(lines)
    assert [(h.code, h.device, h.count) for h in hits] == [
        ("DMA_ERROR", None, 1), ("NC_UNCORRECTABLE_ERROR", None, 1)]


def test_only_the_last_boot_counts(cli, tmp_path: Path) -> None:
    host = build_host(tmp_path / "h", "trn2")
    old = add_kernel_log(host, [HW_LINES["DMA_ERROR"]])
    with old.open("a") as fh:  # the node rebooted after the error
        fh.write(old.read_text().splitlines()[0] + "\nhost kernel: [1.0] neuron: driver loaded\n")
    assert errors(cli, host)["status"] == "pass"


def test_lookback_leaves_older_errors_out(cli, tmp_path: Path) -> None:
    host = build_host(tmp_path / "h", "trn2")
    # the error at 1 s after boot, the newest line at 10001 s: 5 minutes back holds no error
    add_kernel_log(host, [HW_LINES["HBM_UNCORRECTABLE_ERROR"], "neuron: ok"],
                   name="/var/log/dmesg", step=10000.0)
    assert errors(cli, host)["status"] == "fail"
    assert errors(cli, host, "--lookback", "5m")["status"] == "pass"
    assert errors(cli, host, "--lookback", "3h")["status"] == "fail"


@pytest.mark.parametrize("bad", ["0", "-5m", "abc", "5x", "1e400", "400d", ""])
def test_a_bad_lookback_is_exit_2(cli, tmp_path: Path, bad: str) -> None:
    host = build_host(tmp_path / "h", "trn2")
    r = cli("doctor", "--level", "1", "--only", "hardware.errors", "--lookback", bad,
            "--sysroot", str(host))
    assert r.code == 2 and "--lookback" in r.err and "Traceback" not in r.err


def test_sysfs_health_new_driver_names_device_and_component(cli, tmp_path: Path) -> None:
    host = build_host(tmp_path / "h", "trn2")
    add_kernel_log(host, ["neuron: fine"])
    add_health(host, 0, "")
    add_health(host, 1, "hbm\nlink_efa\n")
    check = errors(cli, host)
    assert check["status"] == "fail" and check["severity"] == "drain"
    assert "neuron1: component hbm unhealthy" in check["message"]
    assert "neuron1: component link_efa unhealthy" in check["message"]
    assert "neuron0" not in check["message"]


def test_sysfs_health_new_driver_all_healthy_passes(cli, tmp_path: Path) -> None:
    host = build_host(tmp_path / "h", "trn2")
    add_kernel_log(host, ["neuron: fine"])
    add_health(host, 0, "")
    add_health(host, 1, "\n")
    assert errors(cli, host)["status"] == "pass"


def test_older_driver_without_health_status_is_not_called_healthy(cli, tmp_path: Path) -> None:
    host = build_host(tmp_path / "h", "trn2", driver="2.29.0.0")
    add_kernel_log(host, ["neuron: fine"])
    add_health(host, 0, None)
    check = errors(cli, host)
    assert check["status"] == "pass"
    assert any("exposes no stats/hardware/health_status" in d for d in check["details"])
    # no kernel log either: nothing read could show an error, so no pass
    (host / "var/log/kern.log").unlink()
    assert errors(cli, host)["status"] == "skip"


@pytest.mark.parametrize("ecc_dir", ["stats/hardware", "stats/hardware/ecc"])
def test_corrected_ecc_over_the_threshold_warns_as_info(cli, tmp_path: Path, ecc_dir: str) -> None:
    host = build_host(tmp_path / "h", "trn2")
    add_kernel_log(host, ["neuron: fine"])
    add_health(host, 0, "", {"sram_ecc_corrected": "5\n", "mem_ecc_corrected": "250000\n"}, ecc_dir)
    add_health(host, 1, "", {"mem_ecc_corrected": "not-a-number\n"}, ecc_dir)
    check = errors(cli, host)
    assert check["status"] == "warn" and check["severity"] == "info"
    assert "neuron0: mem_ecc_corrected = 250000" in check["message"]
    assert "sram_ecc_corrected" not in check["message"]
    assert any("neuron1: mem_ecc_corrected is not a count" in d for d in check["details"])


def test_pci_devices_the_driver_does_not_show_are_missing(cli, tmp_path: Path) -> None:
    host = build_host(tmp_path / "h", "trn2", devices=3)
    add_kernel_log(host, ["neuron: fine"])
    import shutil

    shutil.rmtree(host / "sys/class/neuron_device/neuron2")
    check = errors(cli, host)
    assert check["status"] == "fail" and check["severity"] == "drain"
    assert "3 Neuron PCI device(s) but the driver shows 2" in check["message"]


def test_a_1gb_kernel_log_is_read_from_its_end_within_the_bound(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    host = build_host(tmp_path / "h", "trn2")
    sparse_log(host / "var/log/kern.log", 1 << 30, "\nhost kernel: [5.0] " + HW_LINES["DMA_ERROR"] + "\n")
    read_total = 0
    real_read = os.read

    def counting(fd: int, n: int) -> bytes:
        nonlocal read_total
        data = real_read(fd, n)
        read_total += len(data)
        return data

    monkeypatch.setattr(os, "read", counting)
    log = read_kernel_log(SysRoot(host))
    monkeypatch.undo()
    assert log.source == "/var/log/kern.log" and log.truncated
    assert log.bytes_read == kl.MAX_LOG_BYTES
    assert read_total <= kl.MAX_LOG_BYTES + 65536  # the file's end, not its gigabyte
    assert [h.code for h in match_hw_errors(log.lines)] == ["DMA_ERROR"]


def test_hostile_logs_and_health_files_are_not_followed_or_waited_on(cli, tmp_path: Path) -> None:
    host = build_host(tmp_path / "h", "trn2")
    outside = write(tmp_path, "outside.log", "kernel: [1.0] " + HW_LINES["DMA_ERROR"] + "\n")
    (host / "var/log").mkdir(parents=True)
    (host / "var/log/kern.log").symlink_to(outside)  # a link out of the root: not that system's
    os.mkfifo(host / "var/log/dmesg")  # a FIFO where a log should be: never opened for a read
    health = host / "sys/class/neuron_device/neuron0/stats/hardware/health_status"
    health.mkdir(parents=True)
    os.mkfifo(health / "unhealthy_components")
    (host / "sys/class/neuron_device/neuron1/stats/hardware").mkdir(parents=True)
    (host / "sys/class/neuron_device/neuron1/stats/hardware/mem_ecc_corrected").symlink_to(
        write(tmp_path, "ecc", "999999\n"))
    check = errors(cli, host)
    assert check["status"] == "skip", check
    assert "DMA_ERROR" not in json.dumps(check) and "999999" not in json.dumps(check)


def test_kmsg_records_and_the_journal_fallback(tmp_path: Path) -> None:
    line = parse_kmsg_record("3,1234,5000000,-;neuron: nd 0: NEURON_HW_ERR=DMA_ERROR\n SUBSYSTEM=x\n")
    assert line == LogLine("neuron: nd 0: NEURON_HW_ERR=DMA_ERROR", 5.0)
    assert parse_kmsg_record("garbage without a header") is None
    # written to /dev/kmsg from user space (facility LOG_USER, 1 << 3 | level): not the kernel's
    assert parse_kmsg_record("14,99,6000000,-;NEURON_HW_ERR=DMA_ERROR") is None
    asked: list[list[str]] = []

    def journal(argv: list[str], timeout: float) -> str:
        asked.append(argv)
        return "[    7.000000] host kernel: " + HW_LINES["NC_UNCORRECTABLE_ERROR"] + "\n"

    log = read_kernel_log(SysRoot(), journal, kmsg_path=str(tmp_path / "no-kmsg"))
    assert log.source == "journalctl -k -b"
    assert asked and asked[0][:4] == ["journalctl", "-k", "-b", "--no-pager"]
    assert "-n" in asked[0]  # bounded by lines, and by time in run_journal
    assert [h.code for h in match_hw_errors(log.lines)] == ["NC_UNCORRECTABLE_ERROR"]


def test_kmsg_is_read_non_blocking_and_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a FIFO with no writer where /dev/kmsg should be: the open and the read return at once
    fifo = tmp_path / "kmsg"
    os.mkfifo(fifo)
    log = read_kernel_log(SysRoot(), lambda argv, t: None, kmsg_path=str(fifo))
    assert log.source == "/dev/kmsg" and log.lines == ()
    # a kmsg that never ends is cut at the bound, keeping the newest records
    records = tmp_path / "records"
    records.write_text("".join(f"6,{i},{i * 1000},-;line {i}\n" for i in range(50)))
    monkeypatch.setattr(kl, "MAX_KMSG_RECORDS", 10)
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: real_read(fd, 24) or b"6,0,0,-;again\n")
    log = read_kernel_log(SysRoot(), lambda argv, t: None, kmsg_path=str(records))
    monkeypatch.undo()
    assert log.truncated and len(log.lines) == 10


def test_this_hosts_kernel_log_is_read_or_said_unreadable() -> None:
    log = read_kernel_log(SysRoot())
    assert log.bytes_read <= kl.MAX_LOG_BYTES
    assert log.source is not None or log.problem
