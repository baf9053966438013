"""`device.access`, inside a container: the devices passed in against those the runtime will be
asked for (NEURON_RT_VISIBLE_CORES), and the image's Neuron release against the host's driver.

Inside a container the image's labels (`com.neuronctl.*`, written by `neuronctl setup
--dockerfile`, ops/setup/dockerfile.py) are image metadata, not visible to a process in it. So
the image is read from what a process does see:
- environment variables named after those labels, NEURONCTL_IMAGE_RELEASE and
  NEURONCTL_IMAGE_DRIVER_RANGE (`ENV` lines in the Dockerfile, values as in the labels);
- else the runtime library installed in the image (its dpkg/rpm aws-neuronx-runtime-lib, as
  hardware detection reads it), matched to the release that ships it.
The host driver is /sys/module/neuron/version, which a container sees. The range the image's
runtime needs comes from the documented driver/runtime rules (releases.json `rules`, through
setup's driver_range: the same reading the Dockerfile's labels were written from). A DLC's tag
is not read: no source here says how a DLC exposes it inside the container.
"""

from __future__ import annotations

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from neuronctl.ops.doctor.facts import Facts
from neuronctl.ops.doctor.fixes import public
from neuronctl.ops.doctor.runner import CheckOutcome
from neuronctl.release.model import Release
from neuronctl.release.rules import normal_range

RELEASE_VAR = "NEURONCTL_IMAGE_RELEASE"
RANGE_VAR = "NEURONCTL_IMAGE_DRIVER_RANGE"


def _image_release(f: Facts) -> tuple[Release | None, str]:
    """The image's Neuron release and how it was known."""
    named = "".join(c if c.isprintable() else "?" for c in f.environ.get(RELEASE_VAR, ""))[:40]
    if named:
        release = f.manifest.find(named.strip())
        return release, f"{RELEASE_VAR}={named}" + ("" if release else " (not a known release)")
    runtime = f.hardware.runtime_version
    if runtime:
        for release in f.manifest.releases:
            if public(release.system.get("aws-neuronx-runtime-lib", "")) == public(runtime):
                return release, f"the image's runtime library {runtime} (Neuron {release.version})"
    return None, "no image release known"


def _driver_range(f: Facts, release: Release | None) -> tuple[str | None, str]:
    """The range the image says (its ENV), in normal form; one that is not a PEP 440 range
    (an `===` that takes any text, a quote, a shell word) is not used: the rules' range is."""
    given = f.environ.get(RANGE_VAR, "")
    if given.strip():
        try:
            return normal_range(given[:400]), RANGE_VAR
        except ValueError:
            pass
    if release is None or "aws-neuronx-runtime-lib" not in release.system:
        return None, ""
    from neuronctl.ops.setup.dockerfile import driver_range

    rng, ids = driver_range(release)
    return rng, "; ".join(ids)


def check_container_image(f: Facts) -> CheckOutcome | None:
    """None outside a container (device.access says all there is)."""
    from neuronctl.probes.system_facts import container_evidence

    evidence, _kubernetes = container_evidence(f.sysroot)
    if not evidence:
        return None
    problems: list[str] = []
    details: list[str] = []
    fixes: list[str] = []
    hw = f.hardware
    passed = len(hw.dev_nodes)
    release, how = _image_release(f)
    details.append(f"image: {how}")
    rng, why = _driver_range(f, release)
    if f.environ.get(RANGE_VAR, "").strip() and why != RANGE_VAR:
        details.append(f"{RANGE_VAR} is not a version range: not used")
    driver = hw.driver_version
    if rng and driver:
        details.append(f"host driver {driver}; the image's runtime needs {rng} ({why})")
        try:
            ok = Version(driver) in SpecifierSet(rng)
        except (InvalidVersion, InvalidSpecifier):
            ok = True
            details.append(f"driver range {rng[:80]!r} or driver {driver[:40]!r} not readable")
        if not ok:
            problems.append(f"the image is Neuron {release.version if release else '?'} (runtime "
                            f"needs host driver {rng}) but the host driver is {driver}: "
                            "nrt_init() fails")
            fixes.append(f"on the host: upgrade aws-neuronx-dkms to {rng} and reload the module "
                         "(sudo rmmod neuron && sudo modprobe neuron), or use an image of the "
                         "host's release")
    visible = f.environ.get("NEURON_RT_VISIBLE_CORES")
    per_device = _cores_per_device(f)
    if visible and passed and per_device:
        from neuronctl.ops.doctor.checks_cores import parse_visible_cores

        cores = parse_visible_cores(visible).cores
        needed = sorted({c // per_device for c in cores})
        beyond = [d for d in needed if d >= passed]
        details.append(f"{passed} device(s) passed in, {per_device} core(s) each; "
                       f"NEURON_RT_VISIBLE_CORES needs device(s) {', '.join(map(str, needed))}")
        if beyond:
            problems.append(f"NEURON_RT_VISIBLE_CORES={visible[:40]} needs "
                            f"{max(beyond) + 1} device(s) but {passed} were passed in")
            fixes.append("pass the devices in (docker run --device=/dev/neuron0 ... one per "
                         "device) or lower NEURON_RT_VISIBLE_CORES to the cores passed "
                         f"(0-{passed * per_device - 1})")
    if problems:
        return CheckOutcome("fail", "; ".join(problems), "; ".join(fixes), tuple(details), "fix")
    return CheckOutcome("pass", "container: the image's runtime fits the host driver"
                   if rng and driver else "container: image release or host driver unknown",
                   None, tuple(details))


def _cores_per_device(f: Facts) -> int | None:
    hw = f.hardware
    if not hw.sysfs_devices or hw.physical_cores is None:
        return None
    from neuronctl.chips import get_chip

    lnc_env = f.environ.get("NEURON_LOGICAL_NC_CONFIG", "").strip()
    lnc = int(lnc_env) if lnc_env in ("1", "2") else hw.logical_nc_config or \
        (2 if hw.chip == "trn2" else None)
    total = get_chip(hw.chip).logical_cores(hw.physical_cores, lnc) if hw.chip else \
        hw.physical_cores
    return total // len(hw.sysfs_devices) if total else None
