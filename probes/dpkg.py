"""Versions of the Neuron system packages from the dpkg database (Ubuntu/Debian hosts and images)."""

from __future__ import annotations

from neuronctl.probes.sysroot import SysRoot

STATUS_FILE = "/var/lib/dpkg/status"
MAX_STATUS_FILE = 32 * 1024 * 1024  # a dpkg status with thousands of packages is tens of MB


def parse_dpkg_status(text: str, prefix: str = "aws-neuron") -> dict[str, str]:
    """Installed packages whose name starts with `prefix` -> upstream version (Debian revision
    dropped). Only the stanzas holding the prefix at all are parsed (a host's status file holds
    hundreds of others: ~0.7 MB on a small Debian image, 20 ms to parse whole), each once, in
    one forward pass: linear in the file's size whatever it holds."""
    found: dict[str, str] = {}
    for stanza in _stanzas_holding(text, prefix):
        fields = _fields(stanza)
        name = fields.get("package", "")
        if not name.startswith(prefix) or "installed" not in fields.get("status", "").split():
            continue
        version = fields.get("version", "")
        version = version.split(":", 1)[-1]
        found[name] = version.rsplit("-", 1)[0] if "-" in version else version
    return found


def _stanzas_holding(text: str, prefix: str) -> list[str]:
    """The stanzas (text split at blank lines, as "\n\n" splits it) in which `prefix` occurs:
    a stanza without it cannot name such a package. Every search starts where the last one
    stopped, so no character is looked at more than twice."""
    stanzas = []
    done = 0  # everything before this offset belongs to stanzas already taken or passed over
    at = text.find(prefix)
    while at >= 0:
        before = text.rfind("\n\n", done, at)
        start = done if before < 0 else before + 2
        end = text.find("\n\n", at)
        end = len(text) if end < 0 else end
        stanzas.append(text[start:end])
        done = end
        at = text.find(prefix, done)
    return stanzas


def _fields(stanza: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in stanza.splitlines():
        if line[:1] in (" ", "\t") or ":" not in line:
            continue
        key, _, value = line.partition(":")
        fields[key.strip().lower()] = value.strip()
    return fields


def installed_system_packages(root: SysRoot) -> dict[str, str]:
    text = root.read_text(STATUS_FILE, MAX_STATUS_FILE)
    return parse_dpkg_status(text) if text else {}
