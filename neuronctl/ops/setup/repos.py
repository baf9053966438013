"""The Neuron package repositories, their signing key and the OS targets setup plans for: data,
each value with the public source it was read from (read 2026-12-01)."""

from __future__ import annotations

from typing import Literal

from msgspec import Struct

APT_REPO = "https://apt.repos.neuron.amazonaws.com"
YUM_REPO = "https://yum.repos.neuron.amazonaws.com"
KEY_FILE = "GPG-PUB-KEY-AMAZON-AWS-NEURON.PUB"
KEY_FINGERPRINT = "00FA2C1079260870A76D2C285749CAD8646D9185"
"""Amazon AWS Neuron <neuron-maintainers@amazon.com>, created 2019-11-11."""
KEY_AWK = ('$1 == "pub" { p = 1; if ($2 ~ /^[deir]/) print "unusable-" $2; next } '
           '$1 == "fpr" && p { print $10; p = 0 }')
"""Each primary key's fingerprint from gpg's colon listing, one a line; a primary key gpg calls
revoked, expired, disabled or invalid (its validity field) adds a line that matches no
fingerprint: the file must hold exactly the expected key, and that key usable."""

SOURCES: dict[str, str] = {
    "repos": "AWS n2-manifest.json repos_n2 (deb https://apt.repos.neuron.amazonaws.com/, rpm "
             "https://yum.repos.neuron.amazonaws.com/), https://github.com/aws-neuron/"
             "aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/src/helperscripts/"
             "n2-manifest.json",
    "key-file": "https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/setup/"
                "setup-troubleshooting.html (the key at https://apt.repos.neuron.amazonaws.com/"
                "GPG-PUB-KEY-AMAZON-AWS-NEURON.PUB, key id 5749CAD8646D9185, /etc/apt/keyrings)",
    "key-fingerprint": "https://github.com/bottlerocket-os/bottlerocket-kernel-kit/blob/"
                       "ff966445322d414e6b39f5c215f07affdc5be6f5/packages/kmod-6.1-neuron/"
                       "kmod-6.1-neuron.spec (gpgkey-00FA2C1079260870A76D2C285749CAD8646D9185"
                       ".asc checks yum.repos.neuron.amazonaws.com's aws-neuronx-dkms RPMs); its "
                       "last 16 digits are the key id AWS's troubleshooting page names",
    "apt-line": "AWS's Ubuntu recipe: deb https://apt.repos.neuron.amazonaws.com "
                "${VERSION_CODENAME} main, then linux-headers-$(uname -r) and the aws-neuronx-* "
                "packages (aws-neuron-sdk setup pages)",
    "dnf": "AWS's AL2023 recipe: /etc/yum.repos.d/neuron.repo baseurl "
           "https://yum.repos.neuron.amazonaws.com, rpm --import the key, kernel-devel-$(uname -r) "
           "kernel-headers-$(uname -r), aws-neuronx-dkms-2.* (aws-neuron-sdk setup pages)",
}


class OsTarget(Struct, frozen=True):
    """An OS setup plans for: its --os id, os-release ID and VERSION_ID, package family."""

    id: str
    os_id: str
    version: str
    family: Literal["apt", "dnf"]
    codename: str | None = None
    """The apt suite (Ubuntu's VERSION_CODENAME) when the host's os-release does not say."""

    @property
    def rule_os(self) -> str:
        """The OS as the release rules name it: "ubuntu 24.04", "amzn 2023"."""
        return f"{self.os_id} {self.version}"


OS_TARGETS: tuple[OsTarget, ...] = (
    OsTarget("ubuntu-22.04", "ubuntu", "22.04", "apt", "jammy"),
    OsTarget("ubuntu-24.04", "ubuntu", "24.04", "apt", "noble"),
    OsTarget("ubuntu-26.04", "ubuntu", "26.04", "apt", "resolute"),
    OsTarget("al2023", "amzn", "2023", "dnf"),
)
OS_IDS: tuple[str, ...] = tuple(t.id for t in OS_TARGETS)


def target_by_id(name: str) -> OsTarget | None:
    return next((t for t in OS_TARGETS if t.id == name), None)


def target_for(os_id: str | None, version: str | None) -> OsTarget | None:
    """The target a host's os-release names (Ubuntu by major.minor, AL2023 by its major)."""
    if not os_id or not version:
        return None
    short = ".".join(version.split(".")[:2]) if os_id == "ubuntu" else version.split(".")[0]
    return next((t for t in OS_TARGETS if t.os_id == os_id and t.version == short), None)
