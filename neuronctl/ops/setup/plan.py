"""The planner, pure: a release, an OS target and the target's facts in, ordered steps out. Each
step has an id, a title, why it is there, the shell commands that do it and a shell check that
says it is already done (run before the commands, so a re-run skips what is done). The plan is
refused (InputError, exit 2) where a documented rule forbids the combination, unless
--allow-unsupported."""

from __future__ import annotations

import re
from collections.abc import Mapping

from neuronctl.errors import InputError
from neuronctl.ops.setup import steps as build
from neuronctl.ops.setup.model import SetupPlan, SetupRequest
from neuronctl.ops.setup.repos import APT_REPO, SOURCES, YUM_REPO
from neuronctl.redact import redact
from neuronctl.release.model import Release
from neuronctl.release.provenance import value_entries
from neuronctl.release.rules import Situation, enforce

SYSTEM_PACKAGES = ("aws-neuronx-dkms", "aws-neuronx-runtime-lib", "aws-neuronx-collectives",
                   "aws-neuronx-tools")
USER_SPACE = SYSTEM_PACKAGES[1:]
OCI_HOOK = "aws-neuronx-oci-hook"
FINGERPRINT = re.compile(r"[0-9A-F]{40}")
_VENV = re.compile(r"/[A-Za-z0-9._+-][A-Za-z0-9._+/-]{0,254}")
_URL = re.compile(r"(https?|file)://[A-Za-z0-9._~:/?#\[\]@!&()*+,;=%-]{1,400}")


def check_repo_url(url: str, where: str) -> str:
    """A repository URL that goes into a shell script and an apt line: http(s) or file, plain
    characters only (no quote, dollar, backquote, backslash or space), bounded."""
    if not _URL.fullmatch(url):
        raise InputError(f"{where}: {redact(url)[:80]!r} is not a plain http(s):// or file:// URL",
                         hint="a mirror's URL without spaces, quotes, $ or backslashes")
    if "@" in url.split("/")[2]:  # the plan is shown and written out: no credentials in it
        raise InputError(f"{where}: the URL carries credentials; they would be in the plan, "
                         "the script and apt's lists",
                         hint="put them in /etc/apt/auth.conf.d/ (apt) or the .repo file's "
                              "username/password (dnf)")
    return url.rstrip("/")


def check_venv(path: str) -> str:
    """--venv goes into the script: an absolute path of plain characters."""
    if not _VENV.fullmatch(path) or ".." in path.split("/"):
        raise InputError(f"--venv: {path[:80]!r}: an absolute path of plain characters is needed")
    return path


def check_fingerprint(value: str, where: str) -> str:
    fpr = value.replace(" ", "").upper()
    if not FINGERPRINT.fullmatch(fpr):
        raise InputError(f"{where}: {value[:60]!r} is not a 40-digit OpenPGP fingerprint")
    return fpr


def _pins(release: Release) -> dict[str, str]:
    missing = [p for p in SYSTEM_PACKAGES if not release.system.get(p)]
    if missing:
        raise InputError(f"Neuron {release.version} has no published version of "
                         f"{', '.join(missing)} in the release data: nothing to pin",
                         hint="plan a release whose system packages are published, e.g. "
                              "--release 2.33.1 (`neuronctl releases` lists them)")
    return {p: release.system[p] for p in SYSTEM_PACKAGES}


def _refuse(req: SetupRequest, pins: dict[str, str]) -> list[str]:
    """The documented rules over what this plan would install (exit 2 unless allowed)."""
    framework = req.release.default_framework() if req.with_python else None
    chip = req.chip or req.facts.chip
    situation = Situation(req.release.version, flavour=framework.flavour if framework else None,
                          chip=chip, os=req.target.rule_os, driver=pins["aws-neuronx-dkms"],
                          runtime=pins["aws-neuronx-runtime-lib"],
                          torch=".".join(framework.torch.split(".")[:2]) if framework else None)
    notes = enforce(req.release.rules, [situation], allow=req.allow_unsupported,
                    what=f"setup of Neuron {req.release.version} on {req.target.id}"
                         + (f" ({chip})" if chip else ""))
    if req.facts.in_container:
        if not req.allow_unsupported:
            raise InputError("this root is a container: the driver belongs to the host",
                             hint="plan the host (setup on it, or --sysroot), build images with "
                                  "`neuronctl setup --dockerfile`, or --allow-unsupported")
        notes.append("allowed (--allow-unsupported): planning inside a container")
    return notes


def make_plan(req: SetupRequest) -> SetupPlan:
    """The plan, or InputError before anything runs."""
    pins = _pins(req.release)
    notes = _refuse(req, pins)
    family = req.target.family
    repo = check_repo_url(req.repo, "--repo") if req.repo else (APT_REPO if family == "apt" else YUM_REPO)
    fpr = check_fingerprint(req.key_fingerprint, "--key-fingerprint")
    if req.with_python:
        check_venv(req.venv)
    packages = dict(pins)
    if req.facts.container_host:
        packages[OCI_HOOK] = ""
        notes.append(f"{OCI_HOOK}: a container runtime is on this host; the bundled data pins no "
                     "version of it for this release, so the repository's newest is installed")
    f = req.facts
    if f.known and not (req.target.codename or f.codename) and family == "apt":
        raise InputError(f"{req.target.id}: no VERSION_CODENAME in os-release: the apt suite is "
                         "not known")
    variables = build.variables(req, repo, fpr)
    steps = build.steps(req, packages, notes)
    return SetupPlan(req.release.version, req.target, repo, fpr, packages, tuple(steps),
                     variables, f, tuple(notes), origins=origins(req, packages))


def origins(req: SetupRequest, packages: Mapping[str, str]) -> dict[str, str]:
    """Where each value of the plan came from: the repository, the key, the apt suite and each
    pin (the release data and the value's public source), for the text, JSON and script."""
    family = req.target.family
    out = {"repository": req.repo_from if req.repo else f"default: AWS's {family} repository "
                                                          f"({SOURCES['repos']})",
           "key_fingerprint": req.key_from if req.key_from != "default"
           else f"default: AWS's key ({SOURCES['key-fingerprint']})"}
    if family == "apt":
        out["suite"] = ("this host's os-release VERSION_CODENAME"
                        if req.facts.known and req.facts.codename
                        else f"neuronctl's OS table ({req.target.id} is "
                             f"{req.target.codename or 'not known'})")
    cited = {e.key: e for e in value_entries(req.release, req.value_sources)}
    for name, version in packages.items():
        entry = cited.get(f"system.{name}")
        if not version:
            out[f"packages.{name}"] = "not pinned: the repository's newest"
        elif entry is not None and entry.source is not None:
            out[f"packages.{name}"] = f"{req.release_data}: {entry.source.cite()}"
        else:
            out[f"packages.{name}"] = f"{req.release_data}: no public source recorded"
    return out
