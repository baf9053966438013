"""The operating system a root runs, as the documented OS rules name it ("ubuntu 24.04"): read
from its os-release with `distro` (this machine) or through the root's contained reader (a
captured tree). Light to import: the doctor's host.os and install's preflight both read it."""

from __future__ import annotations

from neuronctl.probes.sysroot import SysRoot


def host_os(root: SysRoot) -> str | None:
    """"ubuntu 24.04" from the root's os-release (via `distro`, through the root's bounded
    reader), None where it cannot be read."""
    os_id: str | None
    version: str | None
    if root.is_host:  # distro straight on this machine: no copy, no tempfile
        import distro

        info = distro.LinuxDistribution(include_lsb=False, include_uname=False,
                                        include_oslevel=False)
        os_id, version = info.id(), info.version()
    else:  # a captured tree: its release files through the root's contained reader
        from neuronctl.probes.host_facts import _distribution

        _pretty, os_id, version = _distribution(root)
    if not os_id:
        return None
    return f"{os_id} {version or ''}".strip().lower()[:80]
