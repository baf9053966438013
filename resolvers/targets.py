"""Platform targets: the Python version and platform a lock (or an install's wheel choice) is
for, not the machine running neuronctl. "Target interpreter" is another thing: the Python an
install, doctor or probe works on (neuronctl.ops.target_env).

Each target gives the wheel tags it accepts (best first), the marker environment requirements
are evaluated in, and the marker expression that names it in a lock's `environments`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property

from msgspec import Struct
from packaging import tags as wheel_tags
from packaging.tags import Tag

from neuronctl.errors import InputError

DEFAULT_PLATFORM = "manylinux_2_28_x86_64"
ARCHES = ("x86_64", "aarch64")
_PYTHON = re.compile(r"^3\.(\d{1,2})(?:\.(\d{1,3}))?$")
_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_(x86_64|aarch64)$")
_MUSLLINUX = re.compile(r"^musllinux_(\d+)_(\d+)_(x86_64|aarch64)$")
_LEGACY_MANYLINUX = {"manylinux2014": (2, 17), "manylinux2010": (2, 12), "manylinux1": (2, 5)}


class PlatformTarget(Struct, frozen=True, order=True, dict=True):
    """One Python and Linux platform a lock or resolution is for (3.12, manylinux_2_28_x86_64)."""

    python: str
    """"3.12", or "3.12.1" when the user named a patch release."""
    platform: str
    """A Linux platform tag: manylinux_2_28_x86_64, musllinux_1_2_aarch64, linux_x86_64."""

    @property
    def minor(self) -> tuple[int, int]:
        major, minor = self.python.split(".")[:2]
        return int(major), int(minor)

    @property
    def python_minor(self) -> str:
        return "{}.{}".format(*self.minor)

    @property
    def arch(self) -> str:
        return next(a for a in ARCHES if self.platform.endswith(a))

    @property
    def label(self) -> str:
        return f"cp{self.minor[0]}{self.minor[1]}-{self.platform}"

    @cached_property
    def tags(self) -> tuple[Tag, ...]:
        platforms = platform_family(self.platform)
        return (*wheel_tags.cpython_tags(self.minor, platforms=platforms),
                *wheel_tags.compatible_tags(self.minor, f"cp{self.minor[0]}{self.minor[1]}", platforms))

    @cached_property
    def tag_rank(self) -> Mapping[Tag, int]:
        return {tag: i for i, tag in enumerate(self.tags)}

    @cached_property
    def markers(self) -> dict[str, str]:
        full = self.python if self.python.count(".") == 2 else f"{self.python}.0"
        return {
            "implementation_name": "cpython",
            "implementation_version": full,
            "os_name": "posix",
            "platform_machine": self.arch,
            "platform_python_implementation": "CPython",
            "platform_release": "",
            "platform_system": "Linux",
            "platform_version": "",
            "python_full_version": full,
            "python_version": self.python_minor,
            "sys_platform": "linux",
        }

    @property
    def marker(self) -> str:
        """The PEP 508 expression that holds exactly in this target."""
        version = (f'python_full_version == "{self.python}"' if self.python.count(".") == 2
                   else f'python_version == "{self.python_minor}"')
        return f'{version} and sys_platform == "linux" and platform_machine == "{self.arch}"'

    def wheel_rank(self, wheel_tags: Iterable[Tag]) -> int | None:
        """Lower is better; None when no tag of the wheel fits this target."""
        ranks = [self.tag_rank[t] for t in wheel_tags if t in self.tag_rank]
        return min(ranks) if ranks else None

    def to_json(self) -> dict[str, str]:
        return {"python": self.python, "platform": self.platform}


def platform_family(platform: str) -> list[str]:
    """The platform tags a target platform accepts, newest first (as pip does for --platform)."""
    m = _MANYLINUX.match(platform)
    if m:
        major, minor, arch = int(m.group(1)), int(m.group(2)), m.group(3)
        out = []
        for glibc in range(minor, 4, -1):
            out.append(f"manylinux_{major}_{glibc}_{arch}")
            for legacy, version in _LEGACY_MANYLINUX.items():
                if version == (major, glibc):
                    out.append(f"{legacy}_{arch}")
        # Last, as pip and uv rank it on a Linux host: the Neuron repo publishes such wheels.
        return [*out, f"linux_{arch}"]
    m = _MUSLLINUX.match(platform)
    if m:
        major, minor, arch = int(m.group(1)), int(m.group(2)), m.group(3)
        return [*(f"musllinux_{major}_{v}_{arch}" for v in range(minor, -1, -1)), f"linux_{arch}"]
    return [platform]


def parse_python(text: str, where: str = "--python-version") -> str:
    """A platform target's Python version; `where` names how it was given, for the error."""
    value = text.strip()
    if not _PYTHON.match(value):
        raise InputError(f"{where} {text!r}: expected a Python version such as 3.12 or 3.12.4")
    return value


def parse_platform(text: str) -> str:
    value = text.strip()
    if value in {f"linux_{a}" for a in ARCHES}:
        return value
    m = _MANYLINUX.match(value) or _MUSLLINUX.match(value)
    if m:
        return value
    for legacy, (major, minor) in _LEGACY_MANYLINUX.items():
        for arch in ARCHES:
            if value == f"{legacy}_{arch}":
                return f"manylinux_{major}_{minor}_{arch}"
    raise InputError(f"--platform {text!r}: expected a Linux platform tag such as "
                     f"{DEFAULT_PLATFORM} or manylinux_2_28_aarch64 (Trainium hosts run Linux)")


def make_targets(pythons: Sequence[str], platforms: Sequence[str],
                 python_source: str = "--python-version") -> tuple[PlatformTarget, ...]:
    """Every python x platform pair, validated, de-duplicated and in a stable order."""
    if not pythons:
        raise InputError("no Python version to lock for: pass --python-version 3.12 (or set "
                         "python in [tool.neuronctl])")
    py = [parse_python(p, python_source) for p in pythons]
    plat = [parse_platform(p) for p in platforms] or [DEFAULT_PLATFORM]
    return tuple(sorted({PlatformTarget(p, q) for p in py for q in plat},
                        key=lambda t: (t.minor, t.python, t.platform)))


def target_for_interpreter(python_version: str, libc: Sequence[str], machine: str
                           ) -> PlatformTarget:
    """The platform target an inspected interpreter is: its Python line and its glibc/musl platform."""
    minor = ".".join(python_version.split(".")[:2])
    if machine not in ARCHES:
        raise InputError(f"Python {python_version} runs on {machine}; Neuron wheels are for "
                         f"{' and '.join(ARCHES)} Linux")
    kind, version = (*libc, "", "")[:2]
    parts = version.split(".")
    if kind == "glibc" and len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
        return PlatformTarget(minor, f"manylinux_{parts[0]}_{parts[1]}_{machine}")
    if kind == "musl" and len(parts) >= 2:
        return PlatformTarget(minor, f"musllinux_{parts[0]}_{parts[1]}_{machine}")
    return PlatformTarget(minor, f"linux_{machine}")
