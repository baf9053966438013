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
"""

from __future__ import annotations

import re
import shlex

from neuronctl._version import __version__
from neuronctl.errors import InputError
from neuronctl.manifest import Release
from neuronctl.ops.setup.plan import USER_SPACE, _pins
from neuronctl.ops.setup.repos import APT_REPO, KEY_FILE, SOURCES, YUM_REPO

LABELS = ("release", "runtime", "collectives", "tools", "driver", "driver-range", "driver-rules",
          "devices", "k8s-resource", "lock")
_IMAGE = re.compile(r"[a-z0-9][a-z0-9._/:@-]{0,200}")
_LOCK = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,200}")
VENV = "/opt/neuronctl/venv"


_LABEL_CHARS = re.compile(r"[^A-Za-z0-9 ._:;,/()<>=*+-]")


def _plain(text: str) -> str:
    """A label value or comment from data (rule ids come from a manifest a user may update):
    one line, no quote, dollar or backslash Docker would read."""
    return _LABEL_CHARS.sub("?", text)


def check_base(image: str) -> str:
    if not _IMAGE.fullmatch(image):
        raise InputError(f"--base: {image[:80]!r} is not an image reference (name[:tag][@digest])")
    return image


def check_lock_name(name: str) -> str:
    if not _LOCK.fullmatch(name) or ".." in name.split("/"):
        raise InputError(f"--lock: {name[:80]!r}: a path inside the build context is needed "
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
    return ",".join(dict.fromkeys(specs)), tuple(_plain(i) for i in ids)


def render_dockerfile(release: Release, *, base: str, lock: str,
                      repo: str | None, fingerprint: str) -> str:
    pins = _pins(release)
    base, lock = check_base(base), check_lock_name(lock)
    dnf = base.startswith(("amazonlinux", "public.ecr.aws/amazonlinux"))
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
        "LABEL " + " \\\n      ".join(f'com.neuronctl.{k}="{labels[k]}"' for k in LABELS),
        # Labels cannot be read from inside a running container: doctor's device.access reads
        # these (checks_container.RELEASE_VAR, RANGE_VAR), the same values as the labels.
        f'ENV NEURONCTL_IMAGE_RELEASE="{labels["release"]}" '
        f'NEURONCTL_IMAGE_DRIVER_RANGE="{labels["driver-range"]}"',
        f"ARG NEURON_REPO={repo}",
        f"ARG NEURON_KEY_FPR={fingerprint}",
        "ARG NEURONCTL_SPEC=neuronctl==" + __version__,
        "SHELL [\"/bin/sh\", \"-eu\", \"-c\"]",
    ]
    run = _install_lines(dnf, list(USER_SPACE), pins)
    body = [
        "RUN " + " \\\n && ".join(run),
        "ENV PATH=/opt/aws/neuron/bin:$PATH",
        f"COPY {lock} /opt/neuronctl/pylock.toml",
        'RUN python3 -m venv /opt/neuronctl/tool \\\n && /opt/neuronctl/tool/bin/pip install '
        '--no-cache-dir "$NEURONCTL_SPEC" \\\n && /opt/neuronctl/tool/bin/neuronctl install '
        f"--lock /opt/neuronctl/pylock.toml --venv {VENV} --device neuron --no-check --yes",
        f"ENV VIRTUAL_ENV={VENV} PATH={VENV}/bin:/opt/aws/neuron/bin:$PATH",
    ]
    return "\n".join(head + body) + "\n"


def _install_lines(dnf: bool, names: list[str], pins: dict[str, str]) -> list[str]:
    """The one RUN chain: tools, the key (checked by fingerprint before it is trusted), the
    repository, the user-space packages at their pins, the package caches dropped."""
    check_key = ('got=$(gpg --batch --with-colons --show-keys /tmp/neuron.pub | awk -F: '
                 "'$1 == \"pub\" { p = 1; next } $1 == \"fpr\" && p { print $10; p = 0 }') && "
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
