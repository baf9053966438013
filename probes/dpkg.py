"""Versions of the Neuron system packages from the dpkg database (Ubuntu/Debian hosts and images)."""

from __future__ import annotations

from neuronctl.probes.sysroot import SysRoot

STATUS_FILE = "/var/lib/dpkg/status"
MAX_STATUS_FILE = 32 * 1024 * 1024  # a dpkg status with thousands of packages is tens of MB


def parse_dpkg_status(text: str, prefix: str = "aws-neuron") -> dict[str, str]:
    """Installed packages whose name starts with `prefix` -> upstream version (Debian revision dropped)."""
    found: dict[str, str] = {}
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") or ":" not in line:
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        name = fields.get("package", "")
        if not name.startswith(prefix) or "installed" not in fields.get("status", "").split():
            continue
        version = fields.get("version", "")
        version = version.split(":", 1)[-1]
        found[name] = version.rsplit("-", 1)[0] if "-" in version else version
    return found


def installed_system_packages(root: SysRoot) -> dict[str, str]:
    text = root.read(STATUS_FILE, MAX_STATUS_FILE)
    return parse_dpkg_status(text) if text else {}
