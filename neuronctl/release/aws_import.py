"""Convert AWS's `n2-manifest.json` (aws-neuron-sdk, src/helperscripts) to neuronctl's format.

Pure: takes the decoded JSON, returns a Manifest; all file handling lives in the caller.
The n2 format names no torch version (legacy torch-neuronx versions embed it). Its one date is
`manifest_date`, when the manifest for `manifest_version` (its newest release) was published: that
release gets it, the others have no date (shown as unknown).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable

from msgspec.structs import replace
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from neuronctl.chips import CHIP_IDS, normalize_instance_family
from neuronctl.errors import InputError
from neuronctl.jsonfields import Fields
from neuronctl.release.manifest import reject_duplicates
from neuronctl.release.model import SYSTEM_PACKAGES, Artifact, Framework, Manifest, Release, ReleaseFlavour
from neuronctl.release.source_checks import check_url
from neuronctl.torch_neuronx import classify

# The Python packages of the PyTorch-on-Neuron stack that a release pins.
PYTHON_PACKAGES: tuple[str, ...] = (
    "torch-neuronx",
    "neuronx-cc",
    "nki",
    "libneuronxla",
    "torch-xla",
    "transformers-neuronx",
    "neuronx-distributed",
    "neuronx-distributed-inference",
    "neuronx-distributed-training",
    "nrtpy",
)


def _sort_versions(values: Iterable[str]) -> tuple[str, ...]:
    unique = set(values)
    return tuple(sorted(unique, key=Version, reverse=True))


def _sort_python(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(values), key=Version))


def _chips(instances: list[str]) -> tuple[str, ...]:
    found = {normalize_instance_family(i) for i in instances}
    return tuple(c for c in CHIP_IDS if c in found)


def _read_artifacts(rel: Fields) -> list[Artifact]:
    artifacts = []
    for pkg in rel.objects("packages"):
        name = str(canonicalize_name(pkg.req_text("name")))
        version = pkg.req_text("version")
        instances = pkg.texts("supported_instances")
        pythons = pkg.texts("supported_python_versions")
        if name not in PYTHON_PACKAGES and name not in SYSTEM_PACKAGES:
            continue
        try:
            Version(version)
        except InvalidVersion:
            raise pkg.fail("version", f"{version!r} is not a PEP 440 version") from None
        for i, py in enumerate(pythons):
            try:
                Version(py)
            except InvalidVersion:
                raise pkg.fail(f"supported_python_versions[{i}]",
                               f"{py!r} is not a Python version") from None
        artifacts.append(Artifact(name, version, _chips(instances), _sort_python(pythons)))
    return artifacts


def _union(artifacts: Iterable[Artifact], attr: str) -> set[str]:
    out: set[str] = set()
    for a in artifacts:
        out.update(getattr(a, attr))
    return out


def convert_release(rel: Fields) -> Release:
    version = rel.req_text("neuron_version")
    try:
        Version(version)
    except InvalidVersion:
        raise rel.fail("neuron_version", f"{version!r} is not a version") from None
    artifacts = _read_artifacts(rel)
    frameworks: list[Framework] = []
    for a in artifacts:
        if a.name != "torch-neuronx":
            continue
        info = classify(a.version)
        if info.flavour == "xla" and info.torch:
            frameworks.append(Framework("xla", info.torch, a.version, a.chips, a.python))
        elif info.flavour == "native" and info.torch:
            frameworks.append(Framework("native", f"{info.torch}.0", a.version, a.chips, a.python))
    frameworks.sort(key=lambda f: (f.flavour == "native", Version(f.torch)), reverse=True)
    flavour: ReleaseFlavour
    if any(f.flavour == "native" for f in frameworks):
        flavour = "native"
    elif frameworks:
        flavour = "xla"
    else:
        flavour = "none"
    main = [f for f in frameworks if f.flavour == flavour]
    if main:
        chips = set().union(*(f.chips for f in main))
        python = set().union(*(f.python for f in main))
    else:
        compiler = [a for a in artifacts if a.name == "neuronx-cc"]
        chips, python = _union(compiler, "chips"), _union(compiler, "python")
    packages: dict[str, list[str]] = defaultdict(list)
    for a in artifacts:
        if a.name in PYTHON_PACKAGES:
            packages[a.name].append(a.version)
    system: dict[str, str] = {}
    for name in SYSTEM_PACKAGES:
        candidates = [a for a in artifacts if a.name == name]
        # Releases list an inf1-only build beside the current one; prefer the build for the
        # release's own chips.
        best = next((a for a in candidates if set(a.chips) & chips), None) or next(
            iter(candidates), None)
        if best:
            system[name] = best.version
    return Release(
        version=version,
        flavour=flavour,
        torch=tuple(f.torch for f in main),
        python=_sort_python(python),
        chips=tuple(c for c in CHIP_IDS if c in chips),
        packages={k: _sort_versions(v) for k, v in sorted(packages.items(),
                                                          key=lambda kv: PYTHON_PACKAGES.index(kv[0]))},
        system=system,
        status="ga",
        frameworks=tuple(frameworks),
        artifacts=tuple(a for a in artifacts if a.name in PYTHON_PACKAGES),
    )


def convert_n2(data: object, source: str) -> Manifest:
    top = Fields(data, source)
    if "schema" in top.data and "releases" in top.data:
        raise InputError(f"{source}: already in neuronctl's manifest format; use it with "
                         "--manifest directly")
    for i, repo in enumerate(top.objects("repos_n2", required=False)):
        url = repo.text("repo_url", required=False)
        if url is not None:  # never used to fetch, but a URL field: refused like every other
            check_url(url, f"{source}: repos_n2[{i}].repo_url")
    releases = [convert_release(r) for r in top.objects("neuron_releases")]
    if not releases:
        raise top.fail("neuron_releases", "no releases")
    reject_duplicates(releases, top, "neuron_releases[{}].neuron_version")
    meta = {"format": "aws-n2-manifest"}
    for key in ("manifest_version", "manifest_date"):
        value = top.text(key, required=False)
        if value:
            meta[key] = value
    if "manifest_date" in meta and "manifest_version" in meta:
        date = _iso_date(top, meta["manifest_date"])
        releases = [replace(r, date=date) if _same_version(r.version, meta["manifest_version"])
                    else r for r in releases]
    return Manifest(tuple(releases), source, origin="imported", generated_from=meta)


def _same_version(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return False


def _iso_date(top: Fields, text: str) -> str:
    """AWS writes MM/DD/YYYY; ISO dates are accepted too. Anything else is bad input."""
    for layout in ("%m/%d/%Y", "%Y-%m-%d"):
        try:
            return dt.datetime.strptime(text.strip()[:10], layout).date().isoformat()
        except ValueError:
            continue
    raise top.fail("manifest_date", f"{text[:40]!r} is not a date (MM/DD/YYYY)")
