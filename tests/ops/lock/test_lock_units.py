"""The pure pieces of `neuronctl lock`, without HTTP: wheel candidate selection, merging several
targets' resolutions into one lock, building and validating it, reading it back, the --check
comparison, and resolution over an in-memory index."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from packaging.pylock import Pylock
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from neuronctl.errors import InputError, OperationFailed
from neuronctl.ops.lock.check import lock_differences
from neuronctl.resolvers.candidates import select_files
from neuronctl.resolvers.core_metadata import CoreMetadata
from neuronctl.resolvers.finder import Finder
from neuronctl.resolvers.lock_record import (
    LockInputs,
    RecordedLock,
    build_pylock,
    merge,
    read_recorded,
    render_pylock,
    render_requirements,
)
from neuronctl.resolvers.pylock import load_pylock, packages_for
from neuronctl.resolvers.resolve import Pin, Req, Resolution, resolve
from neuronctl.resolvers.simple_index import DistFile
from neuronctl.resolvers.targets import PlatformTarget
from neuronctl.routing import IndexRouting

PY312 = PlatformTarget("3.12", "manylinux_2_28_x86_64")
PY313 = PlatformTarget("3.13", "manylinux_2_28_x86_64")
INDEX = "https://index.example/simple"


def wheel(name: str, version: str, tag: str = "py3-none-any", **fields) -> DistFile:
    filename = f"{name.replace('-', '_')}-{version}-{tag}.whl"
    digest = hashlib.sha256(filename.encode()).hexdigest()
    return DistFile(filename, f"https://files.example/{filename}", hashes={"sha256": digest}, **fields)


def hash_of(dist: DistFile) -> str:
    return dist.hashes["sha256"]


# Wheel candidate selection


def test_select_files_keeps_fitting_wheels_best_tag_first_newest_version_first():
    files = [
        wheel("lib", "1.0", "cp312-cp312-manylinux_2_17_x86_64"),
        wheel("lib", "1.0", "cp312-cp312-manylinux_2_28_x86_64"),
        wheel("lib", "1.0", "py3-none-any"),
        wheel("lib", "2.0", "py3-none-any"),
        wheel("lib", "2.0", "cp313-cp313-manylinux_2_28_x86_64"),  # another Python
        wheel("lib", "2.0", "cp312-cp312-manylinux_2_34_x86_64"),  # a newer glibc than the target
        wheel("lib", "2.0", "cp312-cp312-manylinux_2_28_aarch64"),  # another machine
        wheel("other", "9.0"),  # another project's file: none of this selection's business
    ]
    versions, rejected = select_files("lib", files, PY312)
    assert [str(v.version) for v in versions] == ["2.0", "1.0"]
    assert [w.filename.split("-", 2)[2] for w in versions[1].wheels] == [
        "cp312-cp312-manylinux_2_28_x86_64.whl", "cp312-cp312-manylinux_2_17_x86_64.whl",
        "py3-none-any.whl"]
    assert sorted(r.filename for r in rejected) == sorted(f.filename for f in files[4:7])
    assert {r.reason for r in rejected} == {f"no tag fits {PY312.label}"}


def test_select_files_turns_away_yanked_requires_python_sdists_and_unusable_files_with_reasons():
    files = [
        wheel("lib", "3.0", yanked=True),
        wheel("lib", "2.9", yanked="broken \x1b[31mbuild"),
        wheel("lib", "2.5", requires_python=">=3.13"),
        wheel("lib", "2.4", requires_python="not a specifier"),
        DistFile("lib-2.3.tar.gz", "https://files.example/lib-2.3.tar.gz"),
        DistFile("lib-2.2-py3-none-any.whl", "", unusable="sha256 is not 64 hex digits"),
        DistFile("other-1.0-py3-none-any.whl", "", unusable="not a safe file name"),
        DistFile("lib-2.1-not-a-wheel-name-at-all.whl", "https://files.example/x.whl"),
        wheel("lib", "1.0", requires_python=">=3.8"),
    ]
    versions, rejected = select_files("lib", files, PY312)
    assert [str(v.version) for v in versions] == ["1.0"]
    reasons = {r.filename.split("-")[1] if r.version else r.filename: r.reason for r in rejected}
    assert reasons == {
        "3.0": "yanked",
        "2.9": "yanked (broken ?[31mbuild)",
        "2.5": "requires-python >=3.13",
        "2.4": "requires-python not a specifier",
        "2.3.tar.gz": "source distribution (locks pin wheels only)",
        "2.2": "unusable: sha256 is not 64 hex digits",
        "lib-2.1-not-a-wheel-name-at-all.whl": "not a valid wheel file name",
    }
    # The same files for Python 3.13: the requires-python one now fits.
    assert "2.5" in [str(v.version) for v in select_files("lib", files, PY313)[0]]


# Merging several targets' resolutions, building, validating and reading back the lock


def pin(name: str, version: str, *wheels: DistFile, index: str = "pypi") -> Pin:
    return Pin(canonicalize_name(name), Version(version), wheels or (wheel(name, version),), index, INDEX)


def two_target_resolutions() -> list[Resolution]:
    torch12 = wheel("torch", "2.14.0", "cp312-cp312-manylinux_2_28_x86_64")
    torch13 = wheel("torch", "2.14.0", "cp313-cp313-manylinux_2_28_x86_64")
    return [
        Resolution(PY312, {"torch": pin("torch", "2.14.0", torch12, index="pytorch-cpu"),
                           "typing-extensions": pin("typing-extensions", "4.12.2"),
                           "only-old": pin("only-old", "1.0")}),
        Resolution(PY313, {"torch": pin("torch", "2.14.0", torch13, index="pytorch-cpu"),
                           "typing-extensions": pin("typing-extensions", "5.0.0")}),
    ]


def inputs(targets=(PY312, PY313), **changes) -> LockInputs:
    fields = dict(release="2.33.0", flavour="native", torch="2.14", torch_neuronx="2.14.3.0",
                  latest=False, requirements=("typing-extensions",), targets=tuple(targets),
                  pins={"torch": "2.14.0", "torch-neuronx": "2.14.3.0"},
                  indexes={"pypi": INDEX})
    fields.update(changes)
    return LockInputs(**fields)


def test_merge_groups_targets_and_marks_what_is_not_everywhere():
    packages = merge(two_target_resolutions())
    by = {(p.name, str(p.version)): p for p in packages}
    assert sorted(by) == [("only-old", "1.0"), ("torch", "2.14.0"), ("typing-extensions", "4.12.2"),
                          ("typing-extensions", "5.0.0")]
    torch = by[("torch", "2.14.0")]
    assert torch.marker is None and torch.targets == (PY312, PY313)  # in every target: no marker
    assert [w.filename for w in torch.wheels] == sorted(w.filename for w in torch.wheels)
    assert torch.best[PY312].filename.startswith("torch-2.14.0-cp312")
    assert torch.best[PY313].filename.startswith("torch-2.14.0-cp313")
    assert torch.index_name == "pytorch-cpu"
    assert by[("typing-extensions", "4.12.2")].marker == PY312.marker
    assert by[("typing-extensions", "5.0.0")].marker == PY313.marker
    assert by[("only-old", "1.0")].targets == (PY312,)


def test_build_pylock_is_valid_pep751_and_each_environment_selects_its_own_wheels(tmp_path):
    doc = build_pylock(merge(two_target_resolutions()), inputs(), hash_of)
    text = render_pylock(doc)
    Pylock.from_dict(doc)  # packaging's own validation
    path = tmp_path / "pylock.toml"
    path.write_text(text)
    lock = load_pylock(path)
    assert [str(m) for m in lock.environments] == [PY312.marker, PY313.marker]
    assert lock.tool["neuronctl"]["with"] == ["typing-extensions"]
    assert lock.tool["neuronctl"]["routes"] == {"only-old": "pypi", "torch": "pytorch-cpu",
                                                "typing-extensions": "pypi"}
    for target, typing_version in ((PY312, "4.12.2"), (PY313, "5.0.0")):
        chosen = {str(p.name): (str(p.version), w.name)
                  for p, w in lock.select(environment=target.markers, tags=list(target.tags))}
        assert chosen["typing-extensions"][0] == typing_version
        assert f"cp3{target.minor[1]}" in chosen["torch"][1]
        assert {str(p.name) for p in packages_for(lock, target.markers)} == set(chosen)


def test_render_pylock_refuses_an_invalid_lock():
    doc = build_pylock(merge(two_target_resolutions()), inputs(), hash_of)
    doc["packages"][0]["wheels"][0]["hashes"] = "not a table"
    with pytest.raises(InputError, match="refusing to write an invalid lock"):
        render_pylock(doc)


def test_requirements_export_records_its_inputs_and_reads_back(tmp_path):
    text = render_requirements(merge(two_target_resolutions()), inputs(), hash_of)
    lines = text.splitlines()
    assert lines[1].startswith("# neuronctl-lock: {") and "--no-index" in lines
    assert any(line.startswith("typing-extensions @ ") and 'python_version == "3.13"' in line
               for line in lines)
    path = tmp_path / "requirements.txt"
    path.write_text(text)
    recorded = read_recorded(path, "requirements")
    assert recorded.tool == inputs().to_tool()
    assert recorded.versions["typing-extensions"] == {"4.12.2", "5.0.0"}
    assert recorded.versions["torch"] == {"2.14.0"}
    assert lock_differences(recorded, inputs()) == [  # these hand-made resolutions hold no torch-neuronx
        "torch-neuronx: the manifest pins 2.14.3.0, the lock has nothing"]


@pytest.mark.parametrize("mark, error", [
    ("", "no '# neuronctl-lock:' line"),
    ("# neuronctl-lock: {not json", "not valid JSON"),
    ("# neuronctl-lock: [1, 2]", "not a JSON object"),
])
def test_a_requirements_lock_without_a_readable_record_is_bad_input(tmp_path, mark, error):
    path = tmp_path / "requirements.txt"
    path.write_text(f"# header\n{mark}\nnki @ https://x/nki-0.7.0-py3-none-any.whl\n")
    with pytest.raises(InputError, match=error):
        read_recorded(path, "requirements")
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(InputError, match="not UTF-8"):
        read_recorded(path, "requirements")


# The --check comparison


def recorded(tool: dict, versions: dict | None = None) -> RecordedLock:
    held = versions if versions is not None else {"torch": {"2.14.0"}, "torch-neuronx": {"2.14.3.0"}}
    return RecordedLock(Path("pylock.toml"), tool, {k: frozenset(v) for k, v in held.items()})


def test_check_finds_nothing_when_the_lock_matches_and_each_change_when_not():
    tool = inputs().to_tool()
    assert lock_differences(recorded(tool), inputs()) == []
    # Requirements are a set: their order is no change.
    assert lock_differences(recorded({**tool, "with": ["typing-extensions"]}),
                            inputs(requirements=("typing-extensions",))) == []
    assert lock_differences(recorded(tool), inputs(targets=(PY312,))) == [
        f"targets: lock has {tool['targets']!r}, requested {[PY312.to_json()]!r}"]
    changed = lock_differences(recorded(tool), inputs(torch_neuronx="2.14.4.0",
                                                      pins={"torch": "2.14.0",
                                                            "torch-neuronx": "2.14.4.0"}))
    assert changed == ["torch-neuronx: lock has '2.14.3.0', requested '2.14.4.0'"]  # once, not per table
    extra = lock_differences(recorded(tool), inputs(indexes={"pypi": INDEX, "mirror": "http://u:pw@m/s"}))
    assert extra == ["indexes: mirror: lock has nothing, requested http://m/s"]  # no credentials


def test_check_compares_the_manifest_pins_with_the_locked_versions():
    tool = inputs().to_tool()
    stale = lock_differences(recorded(tool, {"torch": {"2.13.0+cpu"}, "torch-neuronx": {"2.14.3.0"}}),
                             inputs())
    assert stale == ["torch: the manifest pins 2.14.0, the lock has 2.13.0+cpu"]
    # A local version label is the same public version (torch 2.14.0+cpu is torch 2.14.0).
    assert lock_differences(recorded(tool, {"torch": {"2.14.0+cpu"}, "torch-neuronx": {"2.14.3.0"}}),
                            inputs()) == []
    # --latest: newer builds are the point, so pins are not compared.
    latest = inputs(latest=True)
    assert lock_differences(recorded(latest.to_tool(), {}), latest) == []


def test_check_reads_an_untrusted_record_without_crashing():
    assert lock_differences(recorded({"schema": 2}), inputs()) == [
        "[tool.neuronctl] schema 2; this neuronctl writes 1"]
    tool = {**inputs().to_tool(), "with": 5, "indexes": "http://x", "pins": [1, 2],
            "targets": {"a": 1}}
    problems = lock_differences(recorded(tool), inputs())
    assert any(p.startswith("with: lock has 5") for p in problems)
    assert any(p.startswith("indexes: pypi: lock has nothing") for p in problems)
    assert any(p.startswith("targets: lock has {'a': 1}") for p in problems)


# Resolution over an in-memory index


class MemoryIndex:
    """An IndexClient and a MetadataFetcher over dicts: project -> files, filename -> metadata."""

    def __init__(self, projects: dict[str, list[tuple[DistFile, CoreMetadata]]]) -> None:
        self.files = {name: [f for f, _ in entries] for name, entries in projects.items()}
        self.metadata = {f.filename: md for entries in projects.values() for f, md in entries}
        self.asked: list[str] = []

    def project_files(self, index_url: str, project: str) -> list[DistFile] | None:
        self.asked.append(project)
        return self.files.get(project)

    def fetch(self, dist: DistFile, project: str, *, download: bool = True) -> tuple[CoreMetadata, str]:
        return self.metadata[dist.filename], "memory"


def dist(name: str, version: str, *requires: str, requires_python: str | None = None):
    md = CoreMetadata(canonicalize_name(name), version, tuple(Requirement(r) for r in requires),
                      SpecifierSet(requires_python) if requires_python else None)
    return wheel(name, version), md


def resolve_in_memory(projects, roots: list[str], target: PlatformTarget = PY312) -> Resolution:
    memory = MemoryIndex(projects)
    routing = IndexRouting({"pypi": INDEX})
    with Finder(memory, routing, memory) as finder:  # type: ignore[arg-type]
        return resolve(finder, target, [Req.parse(r, "--with") for r in roots],
                       version_filter=lambda name, version: None)


def test_resolution_takes_the_newest_that_fits_with_the_whole_closure():
    projects = {"app": [dist("app", "1.0", "lib>=1", "extra-only; extra == 'x'",
                             "win-only; sys_platform == 'win32'")],
                "lib": [dist("lib", "1.5"), dist("lib", "2.0", "leaf"), dist("lib", "3.0rc1")],
                "leaf": [dist("leaf", "0.1")]}
    result = resolve_in_memory(projects, ["app"])
    assert {n: str(p.version) for n, p in result.pins.items()} == {"app": "1.0", "leaf": "0.1",
                                                                   "lib": "2.0"}
    assert result.pins["lib"].index == "pypi" and result.pins["lib"].index_url == INDEX


def test_resolution_backtracks_past_a_requires_python_only_its_metadata_states():
    projects = {"app": [dist("app", "1.0", "lib")],
                "lib": [dist("lib", "1.5"), dist("lib", "2.0", requires_python=">=3.13")]}
    assert str(resolve_in_memory(projects, ["app"]).pins["lib"].version) == "1.5"
    assert str(resolve_in_memory(projects, ["app"], PY313).pins["lib"].version) == "2.0"


def test_a_conflict_names_each_requirement_who_asked_the_versions_and_the_index():
    projects = {"app": [dist("app", "1.0", "lib<1")],
                "lib": [dist("lib", "1.5"), dist("lib", "2.0", requires_python=">=3.13")]}
    with pytest.raises(OperationFailed) as caught:
        resolve_in_memory(projects, ["app", "lib>=1"])
    message = caught.value.message
    assert message.startswith(f"cannot resolve for {PY312.label}: ")
    assert "lib<1 (from app 1.0)" in message and "lib>=1 (from --with)" in message
    assert f"versions that fit {PY312.label} on index pypi ({INDEX}): 2.0, 1.5" in message
