"""Which processes hold /dev/neuron* open, from /proc under a SysRoot (each pid's fd links,
cmdline and status), and whether one descends from another. Apart from
neuronctl.probes.system_facts so that the doctor on a host without Neuron devices, whose
device.holders check does not scan, does not create these classes (issue 36).

Every byte comes from a tree that may be captured from elsewhere, so each read is bounded."""

from __future__ import annotations

import os
import re
from pathlib import Path

from msgspec import Struct

from neuronctl.probes.sysroot import SysRoot
from neuronctl.probes.system_facts import MAX_SMALL_FILE

MAX_PIDS = 65536
MAX_FDS_PER_PID = 4096
MAX_CMDLINE = 4096

_NEURON_NODE = re.compile(r"/dev/neuron\d+")


class DeviceHolder(Struct, frozen=True):
    """A process holding /dev/neuron* open: what it is and whether it was left behind."""

    pid: int
    command: str
    devices: tuple[str, ...]
    state: str | None
    ppid: int | None
    parent_gone: bool

    @property
    def zombie(self) -> bool:
        return (self.state or "").startswith("Z")

    def describe(self) -> str:
        notes = [n for n, on in (("ZOMBIE", self.zombie), ("parent gone", self.parent_gone)) if on]
        extra = f" [{', '.join(notes)}]" if notes else ""
        return f"pid {self.pid} ({self.command or '?'}) holds {', '.join(self.devices)}{extra}"


class HolderScan(Struct, frozen=True):
    """The processes holding Neuron devices, and how many could not be looked into."""

    holders: tuple[DeviceHolder, ...]
    unreadable: int
    """Processes whose open files could not be listed (another user's, without privilege)."""


def _status_fields(text: str | None) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in (text or "").splitlines()[:80]:
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def _held_devices(fd_dir: Path) -> tuple[list[str], bool]:
    """The /dev/neuron* nodes among a process's open files, and whether they could be listed."""
    try:
        entries = os.scandir(fd_dir)
    except OSError:
        return [], False
    found: set[str] = set()
    with entries:
        for count, entry in enumerate(entries):
            if count >= MAX_FDS_PER_PID:
                break
            try:
                target = os.readlink(entry.path)
            except OSError:
                continue
            if _NEURON_NODE.fullmatch(target):
                found.add(target)
    return sorted(found, key=lambda d: int(d[len("/dev/neuron"):])), True


def _command(root: SysRoot, proc: Path, fields: dict[str, str]) -> str:
    raw = root.read_text(proc / "cmdline", MAX_CMDLINE) or ""
    words = [w for w in raw.split("\0") if w]
    text = " ".join(words) if words else f"[{fields.get('Name', '?')}]"
    return "".join(c if c.isprintable() else "?" for c in text)[:200]


def find_device_holders(root: SysRoot) -> HolderScan:
    """Processes with /dev/neuron* open, from /proc/<pid>/fd links, cmdline and status."""
    proc_root = root.path("/proc")
    if not root.inside(proc_root):  # a captured /proc linked to this machine's: not that system
        return HolderScan((), 0)
    try:
        pids = sorted(int(p.name) for p in proc_root.iterdir()
                      if p.name.isascii() and p.name.isdigit() and len(p.name) <= 10)[:MAX_PIDS]
    except OSError:
        return HolderScan((), 0)
    holders, unreadable = [], 0
    for pid in pids:
        proc = proc_root / str(pid)
        if not root.inside(proc / "fd"):  # /proc/<pid> linked out of the tree (to /proc/self)
            continue
        devices, listed = _held_devices(proc / "fd")
        if not listed:
            unreadable += proc.is_dir()
            continue
        if not devices:
            continue
        fields = _status_fields(root.read_text(proc / "status", MAX_SMALL_FILE))
        ppid_text = fields.get("PPid", "")
        ppid = int(ppid_text) if ppid_text.isascii() and ppid_text.isdigit() and len(ppid_text) <= 10 \
            else None
        parent_gone = ppid not in (None, 0) and not (proc_root / str(ppid)).is_dir()
        holders.append(DeviceHolder(pid, _command(root, proc, fields), tuple(devices),
                                    fields.get("State"), ppid, parent_gone))
    return HolderScan(tuple(holders), unreadable)


def descends_from(root: SysRoot, pid: int, ancestor: int) -> bool:
    """Whether `pid`'s parent chain reaches `ancestor` (a device probe this process started
    holds the devices too, and is not a stranger's process)."""
    for _ in range(64):
        if pid == ancestor:
            return True
        fields = _status_fields(root.read_text(f"/proc/{pid}/status", MAX_SMALL_FILE))
        parent = fields.get("PPid", "")
        if not (parent.isascii() and parent.isdigit() and len(parent) <= 10) or int(parent) in (0, pid):
            return False
        pid = int(parent)
    return False
