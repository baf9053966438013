"""`setup --dockerfile`: a Dockerfile for a release's user space (runtime library, collectives,
tools; never the driver, which is the host's), the repository key checked by fingerprint as on a
host, and the Python stack from a lock through `neuronctl install --lock`. The host's
requirements are written as comments and as labels a doctor inside the container reads:

  com.neuronctl.release       the Neuron release ("2.33.1")
  com.neuronctl.runtime       aws-neuronx-runtime-lib's version in the image
  com.neuronctl.collectives   aws-neuronx-collectives's version
  com.neuronctl.tools         aws-neuronx-tools's version
  com.neuronctl.driver        the release's own aws-neuronx-dkms (the driver it ships with)
  com.neuronctl.driver-range  the host driver versions the runtime works with (a PEP 440
                              range, from the documented rules; the release's driver line where
                              no rule gives one)
  com.neuronctl.driver-rules  the rule ids that range comes from
  com.neuronctl.devices       what to pass in: "/dev/neuron*" (docker run --device=/dev/neuron0 ...)
  com.neuronctl.k8s-resource  the Kubernetes resource to request: "aws.amazon.com/neuron"
  com.neuronctl.lock          the lock the Python stack was installed from

neuronctl goes into the image from what the user has, never by a bare name from an index (no
project named neuronctl there is ours): a wheel in the build context, copied in and checked by
the sha256 written here before pip reads it (setup builds one from its own files by default:
ops/setup/wheel.py), or a requirement the user names. The base image's OS (by its tag) is held to
the release rules as `setup --os` holds a host, and the lock must be in the build context.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from pathlib import Path

from msgspec import Struct

from neuronctl._version import __version__
from neuronctl.errors import InputError
from neuronctl.ops.setup.plan import USER_SPACE, _pins
from neuronctl.ops.setup.repos import (
    APT_REPO,
    KEY_AWK,
    KEY_FILE,
    OS_TARGETS,
    SOURCES,
    YUM_REPO,
    OsTarget,
    target_by_id,
)
from neuronctl.release.model import Release
from neuronctl.release.rules import Situation, enforce, normal_range

LABELS = ("release", "runtime", "collectives", "tools", "driver", "driver-range", "driver-rules",
          "devices", "k8s-resource", "lock")
_IMAGE = re.compile(r"[a-z0-9][a-z0-9._/:@-]{0,200}")
_LOCK = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,200}")
VENV = "/opt/neuronctl/venv"
MAX_WHEEL_BYTES = 64 << 20
"""neuronctl's wheel is well under 1 MiB; a bigger file is not one."""
_SPEC = re.compile(r"[A-Za-z0-9 ._:/@=<>!~,+%#&?\[\]-]{1,500}")


class ToolSource(Struct, frozen=True):
    """How the image gets neuronctl: a wheel in the build context with its sha256 (checked in
    the Dockerfile before pip sees it), or a requirement the user gave (`--neuronctl-spec`)."""

    wheel: str | None = None
    sha256: str | None = None
    spec: str | None = None
    note: str = ""
    """Where it came from, for the user (not written into the Dockerfile: it may name a local
    path)."""


_LABEL_CHARS = re.compile(r"[^A-Za-z0-9 ._:;,/()<>=*+-]")


def _plain(text: str) -> str:
    """A label value or comment from data (rule ids come from a manifest a user may update):
    one line, no quote, dollar or backslash Docker would read."""
    return _LABEL_CHARS.sub("?", text)


def check_base(image: str) -> str:
    if not _IMAGE.fullmatch(image):
        raise InputError(f"--base: {image[:80]!r} is not an image reference (name[:tag][@digest])")
    return image


def check_lock_name(name: str, where: str = "--lock") -> str:
    return check_context_path(name, where)


def base_target(image: str) -> OsTarget | None:
    """The OS a base image names by its tag (ubuntu:24.04, ubuntu:noble, amazonlinux:2023, with
    or without a registry), or None (no tag, `latest`, another image): the tag is what the
    Dockerfile's FROM pulls, so it is what the rules are checked against."""
    name = image.split("@", 1)[0]
    repo, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "")
    last = repo.rsplit("/", 1)[-1]
    if last == "ubuntu":
        for target in (t for t in OS_TARGETS if t.os_id == "ubuntu"):
            if tag == target.codename or re.fullmatch(re.escape(target.version) + r"([.-].*)?", tag):
                return target
    if last == "amazonlinux" and re.fullmatch(r"2023([.-].*)?", tag):
        return target_by_id("al2023")
    return None


def check_base_rules(release: Release, image: str, allow: bool) -> list[str]:
    """The documented rules over the image's OS and the Python stack, as `setup --os OS
    --with-python` checks them for a host: exit 2 unless --allow-unsupported."""
    target = base_target(image)
    if target is None:
        if not allow:
            raise InputError(f"--base {image}: its OS is not one the release rules are checked "
                             "for (ubuntu:22.04, ubuntu:24.04, ubuntu:26.04, amazonlinux:2023, by "
                             "tag)", hint="name the OS by the tag, or --allow-unsupported")
        return [f"allowed (--allow-unsupported): --base {image}, an OS the rules do not know"]
    pins = _pins(release)
    framework = release.default_framework()
    situation = Situation(release.version, flavour=framework.flavour if framework else None,
                          os=target.rule_os, driver=pins["aws-neuronx-dkms"],
                          runtime=pins["aws-neuronx-runtime-lib"],
                          torch=".".join(framework.torch.split(".")[:2]) if framework else None)
    return enforce(release.rules, [situation], allow=allow,
                   what=f"image of Neuron {release.version} on {image} ({target.id})")


def check_lock_present(lock: str, context: Path, where: str = "--lock") -> None:
    """The Dockerfile copies the lock: without one the build fails at COPY, so say so now.
    `where`: how the error names it (--lock, or config `lock`, its default)."""
    path = context / check_lock_name(lock, where)
    if not path.is_file():
        raise InputError(f"{where} {lock}: no such file in the build context ({context}): the "
                         "Dockerfile copies the lock its Python stack installs from",
                         hint="write it first: neuronctl lock" + (
                             f" -o {shlex.quote(lock)}" if where == "--lock" else ""))


def wheel_source(name: str, context: Path) -> ToolSource:
    """--neuronctl-wheel PATH: neuronctl's wheel inside the build context, its sha256 taken now."""
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

    check_context_path(name, "--neuronctl-wheel")
    try:
        dist = parse_wheel_filename(name.rsplit("/", 1)[-1])[0]
    except InvalidWheelFilename:
        dist = None
    if dist is None or canonicalize_name(dist) != "neuronctl":
        raise InputError(f"--neuronctl-wheel: {name[:80]!r} is not a neuronctl wheel "
                         "(neuronctl-VERSION-TAGS.whl)")
    path = context / name
    if path.is_symlink():
        raise InputError(f"--neuronctl-wheel {name}: a symbolic link; give the file itself")
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_WHEEL_BYTES + 1)
    except OSError as exc:
        raise InputError(f"--neuronctl-wheel {name}: cannot read it in the build context "
                         f"({context}): {exc.strerror or exc}") from None
    if len(data) > MAX_WHEEL_BYTES:
        raise InputError(f"--neuronctl-wheel {name}: not a plain file under "
                         f"{MAX_WHEEL_BYTES >> 20} MiB")
    return ToolSource(wheel=name, sha256=hashlib.sha256(data).hexdigest(), note=f"given: {name}")


def spec_source(spec: str) -> ToolSource:
    """--neuronctl-spec SPEC: a requirement the user names (a version from their own index, a
    URL with its #sha256=): taken as given, but only one naming neuronctl, on one plain line."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        req = Requirement(spec)
    except InvalidRequirement:
        req = None
    if req is None or canonicalize_name(req.name) != "neuronctl" or not _SPEC.fullmatch(str(req)):
        raise InputError(f"--neuronctl-spec: {spec[:80]!r} is not a requirement for neuronctl "
                         "(neuronctl==V, neuronctl @ URL)")
    return ToolSource(spec=str(req), note=f"the requirement {req} (given)")


def check_context_path(name: str, flag: str) -> str:
    if not _LOCK.fullmatch(name) or ".." in name.split("/"):
        raise InputError(f"{flag}: {name[:80]!r}: a path inside the build context is needed "
                         "(relative, no '..', plain characters)")
    return name


def driver_range(release: Release) -> tuple[str, tuple[str, ...]]:
    """The host drivers this release's runtime works with: what the documented rules over this
    runtime need (whatever the chip), else the release's own driver line."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    runtime = Version(release.system["aws-neuronx-runtime-lib"])
    specs, ids = [], []
    for rule in release.rules:
        when, need = rule.when.get("runtime"), rule.need.get("driver")
        if rule.kind != "runtime" or not when or not need or runtime not in SpecifierSet(when) \
                or not set(rule.when) <= {"runtime", "chips"}:
            continue
        if "chips" in rule.when:  # a chip's own need: named, not folded into every host's range
            ids.append(f"{rule.id} ({'/'.join(rule.when['chips'])}: {need})")
        else:
            specs.append(need)
            ids.append(rule.id)
    if not specs:
        line = ".".join(release.system["aws-neuronx-dkms"].split(".")[:2])
        specs.append(f">={line}")
        ids.insert(0, "the release's driver line")
    # the rules' ranges are specifiers already (parsed at load); written in their normal form
    return normal_range(",".join(dict.fromkeys(specs))), tuple(_plain(i) for i in ids)


def render_dockerfile(release: Release, *, base: str, lock: str, repo: str | None,
                      fingerprint: str, tool: ToolSource) -> str:
    pins = _pins(release)
    base, lock = check_base(base), check_lock_name(lock)
    target = base_target(base)
    dnf = target.family == "dnf" if target else base.startswith(
        ("amazonlinux", "public.ecr.aws/amazonlinux"))
    repo = repo or (YUM_REPO if dnf else APT_REPO)
    rng, ids = driver_range(release)
    labels = {"release": release.version, "runtime": pins["aws-neuronx-runtime-lib"],
              "collectives": pins["aws-neuronx-collectives"], "tools": pins["aws-neuronx-tools"],
              "driver": pins["aws-neuronx-dkms"], "driver-range": rng,
              "driver-rules": "; ".join(ids), "devices": "/dev/neuron*",
              "k8s-resource": "aws.amazon.com/neuron", "lock": lock}
    head = [
        "# syntax=docker/dockerfile:1",
        f"# Neuron {release.version} user space, written by neuronctl {__version__} setup "
        "--dockerfile.",
        "# The driver is not in the image: it is the host's. Host requirements:",
        f"#   aws-neuronx-dkms {rng} loaded on the host (this release ships "
        f"{pins['aws-neuronx-dkms']}; from: {'; '.join(ids)})",
        "#   docker run --device=/dev/neuron0 [--device=/dev/neuron1 ...], or on Kubernetes",
        "#   resources.limits: aws.amazon.com/neuron: N (the Neuron device plugin)",
        f"# The repository key is trusted only with fingerprint {fingerprint}",
        f"#   ({SOURCES['key-fingerprint']})",
        f"FROM {base}",
        "LABEL " + " \\\n      ".join(f'com.neuronctl.{k}="{_plain(labels[k])}"' for k in LABELS),
        # Labels cannot be read from inside a running container: doctor's device.access reads
        # these (checks_container.RELEASE_VAR, RANGE_VAR), the same values as the labels.
        f'ENV NEURONCTL_IMAGE_RELEASE="{_plain(labels["release"])}" '
        f'NEURONCTL_IMAGE_DRIVER_RANGE="{_plain(labels["driver-range"])}"',
        f"ARG NEURON_REPO={repo}",
        f"ARG NEURON_KEY_FPR={fingerprint}",
        "SHELL [\"/bin/sh\", \"-eu\", \"-c\"]",
    ]
    run = _install_lines(dnf, list(USER_SPACE), pins)
    body = [
        "RUN " + " \\\n && ".join(run),
        "ENV PATH=/opt/aws/neuron/bin:$PATH",
        f"COPY {lock} /opt/neuronctl/pylock.toml",
        *_tool_lines(tool),
        f"ENV VIRTUAL_ENV={VENV} PATH={VENV}/bin:/opt/aws/neuron/bin:$PATH",
    ]
    return "\n".join(head + body) + "\n"


def _tool_lines(tool: ToolSource) -> list[str]:
    """neuronctl into its own venv, then the Python stack from the lock. A wheel is checked by
    its sha256 before pip reads it; nothing is installed by a bare name from an index."""
    run = ["python3 -m venv /opt/neuronctl/tool"]
    pip = "/opt/neuronctl/tool/bin/pip install --no-cache-dir "
    head: list[str] = []
    if tool.wheel and tool.sha256 and re.fullmatch(r"[0-9a-f]{64}", tool.sha256):
        inside = "/opt/neuronctl/" + tool.wheel.rsplit("/", 1)[-1]
        wheel = check_context_path(tool.wheel, "--neuronctl-wheel")
        head = [f"# neuronctl from the wheel {wheel} in the build context, sha256 {tool.sha256}",
                f"COPY {wheel} {inside}"]
        run = [f"printf '%s  %s\\n' {tool.sha256} {inside} | sha256sum -c -", *run,
               pip + inside]
    elif tool.spec and _SPEC.fullmatch(tool.spec):
        head = ["# neuronctl from the requirement given (--neuronctl-spec)"]
        run.append(pip + shlex.quote(tool.spec))
    else:
        raise InputError("the image needs neuronctl from a wheel (with its sha256) or a spec")
    run.append("/opt/neuronctl/tool/bin/neuronctl install --lock /opt/neuronctl/pylock.toml "
               f"--venv {VENV} --device neuron --no-check --yes")
    return [*head, "RUN " + " \\\n && ".join(run)]


def _install_lines(dnf: bool, names: list[str], pins: dict[str, str]) -> list[str]:
    """The one RUN chain: tools, the key (checked by fingerprint before it is trusted), the
    repository, the user-space packages at their pins, the package caches dropped."""
    check_key = ('got=$(gpg --batch --with-colons --show-keys /tmp/neuron.pub | awk -F: '
                 f"'{KEY_AWK}') && "
                 '{ [ "$got" = "$NEURON_KEY_FPR" ] || { echo "neuron key fingerprint $got is not '
                 '$NEURON_KEY_FPR" >&2; exit 1; }; }')
    user_space = [f"{p}-{pins[p]}" if dnf else f"{p}={pins[p]}*" for p in names]
    fetch = f'curl -fsSL "$NEURON_REPO/{KEY_FILE}" -o /tmp/neuron.pub'
    if dnf:
        run = ["dnf install -y --allowerasing curl gnupg2 python3 python3-pip", fetch, check_key,
               "rpm --import /tmp/neuron.pub",
               "printf '%s\\n' '[neuron]' 'name=Neuron YUM Repository' \"baseurl=$NEURON_REPO\" "
               "'enabled=1' 'gpgcheck=1' > /etc/yum.repos.d/neuron.repo",
               "dnf install -y " + " ".join(shlex.quote(u) for u in user_space),
               "dnf clean all", "rm -f /tmp/neuron.pub"]
    else:
        run = ["apt-get update",
               "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
               "ca-certificates curl gnupg python3 python3-venv",
               fetch, check_key, "install -m 0755 -d /etc/apt/keyrings",
               "gpg --batch --dearmor -o /etc/apt/keyrings/neuron.gpg /tmp/neuron.pub",
               '. /etc/os-release && echo "deb [signed-by=/etc/apt/keyrings/neuron.gpg] '
               '$NEURON_REPO ${VERSION_CODENAME} main" > /etc/apt/sources.list.d/neuron.list',
               "apt-get update",
               "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
               + " ".join(shlex.quote(u) for u in user_space),
               "rm -rf /var/lib/apt/lists/* /tmp/neuron.pub"]
    return run
