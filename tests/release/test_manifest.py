import json
import re

import pytest
from packaging.version import Version
from support.bundled_releases import NEWEST
from support.paths import FACTS, N2_MANIFEST, REPO

from neuronctl.errors import InputError
from neuronctl.release.aws_import import convert_n2
from neuronctl.release.manifest import load_bundled_manifest, parse_manifest


@pytest.fixture(scope="module")
def n2():
    return json.loads(N2_MANIFEST.read_text())


@pytest.fixture(scope="module")
def imported(n2):
    return convert_n2(n2, str(N2_MANIFEST))


def test_importer_reads_every_release(n2, imported):
    names = [r["neuron_version"] for r in n2["neuron_releases"]]
    assert len(imported.releases) == len(names) == 51
    assert {r.version for r in imported.releases} == set(names)
    assert imported.generated_from["manifest_version"] == n2["manifest_version"]


def test_importer_spot_checks_against_facts(imported):
    facts = FACTS.read_text()
    r232 = imported.get("2.32.0")
    assert r232.flavour == "none" and r232.torch == ()
    assert r232.package_version("neuronx-cc") == "2.27.5334.0"
    assert r232.package_version("nki") == "0.6.0"
    assert r232.package_version("libneuronxla") == "3.0.5356.0"
    assert r232.system["aws-neuronx-dkms"] == "2.30.2.0"
    assert r232.system["aws-neuronx-runtime-lib"] == "2.34.10.0"
    assert r232.system["aws-neuronx-collectives"] == "2.34.10.0"
    assert r232.system["aws-neuronx-tools"] == "2.32.28.0"
    for value in ("2.27.5334.0", "3.0.5356.0", "2.30.2.0", "2.34.10.0", "2.32.28.0"):
        assert value in facts
    r231 = imported.get("2.31.0")
    assert r231.flavour == "xla"
    assert r231.packages["torch-neuronx"] == ("2.9.0.2.15.32035",)
    assert r231.torch == ("2.9.0",)
    assert r231.package_version("neuronx-cc") == "2.26.6360.0"
    assert r231.package_version("nki") == "0.5.0"
    assert r231.system["aws-neuronx-dkms"] == "2.29.0.0"
    assert r231.system["aws-neuronx-runtime-lib"] == "2.33.10.0"
    r226 = imported.get("2.26.0")
    assert set(r226.packages["torch-neuronx"]) == {
        "2.6.0.2.10.13553", "2.7.0.2.10.13553", "2.8.0.2.10.13553"}
    assert r226.torch == ("2.8.0", "2.7.0", "2.6.0")
    # trn1n in AWS's data is a trn1 instance, not a chip of its own
    for release in imported.releases:
        assert set(release.chips) <= {"inf1", "inf2", "trn1", "trn2", "trn3"}


def test_bundled_covers_2_18_to_the_newest_and_the_docs_say_so():
    bundled = load_bundled_manifest()
    versions = [r.version for r in bundled.releases]
    assert versions[0] == NEWEST and {"2.34.0", "2.33.1", "2.22.1"} <= set(versions)
    assert versions[-1] == "2.18.0"
    assert versions == sorted(versions, key=Version, reverse=True)
    for page in (REPO / "README.md", REPO / "docs" / "releases.md"):  # docs/maintaining.md's list
        stated = re.search(r"Neuron (2\.18\.0) to (\d+\.\d+\.\d+)", page.read_text())
        assert stated is not None and stated[2] == NEWEST, (
            f"{page.name} states the bundled range as 2.18.0 to {stated and stated[2]}: "
            f"write {NEWEST}")


def test_bundled_matches_aws_manifest_where_both_cover(imported):
    bundled = load_bundled_manifest()
    overlap = [r for r in bundled.releases if imported.find(r.version)]
    assert len(overlap) == 27  # 2.22.1 is not in AWS's master manifest (RELEASE-FACTS section 4)
    for mine in overlap:
        theirs = imported.get(mine.version)
        assert mine.flavour == theirs.flavour, mine.version
        assert mine.torch == theirs.torch, mine.version
        assert mine.python == theirs.python, mine.version
        assert mine.chips == theirs.chips, mine.version
        assert dict(mine.packages) == dict(theirs.packages), mine.version
        assert dict(mine.system) == dict(theirs.system), mine.version


def test_bundled_2_33_is_right():
    r = load_bundled_manifest().get("2.33.0")
    facts = FACTS.read_text()
    assert r.flavour == "native" and r.status == "beta"
    assert r.torch == ("2.14.0", "2.13.0")
    assert r.python == ("3.12", "3.13", "3.14")
    assert r.chips == ("trn2", "trn3")
    assert r.packages["torch-neuronx"] == ("2.14.3.0", "2.13.3.0", "2.9.0.2.15.32035")
    assert r.packages["neuronx-cc"] == ("2.28.7631.0",)
    assert r.packages["nki"] == ("0.7.0",)
    fw14 = r.framework_for_torch("2.14")
    assert fw14 and fw14.torch_neuronx == "2.14.3.0" and fw14.flavour == "native"
    assert r.framework_for_torch("2.13.0+cpu").torch_neuronx == "2.13.3.0"
    assert r.framework_for_torch("2.9").flavour == "xla"
    for name, version in r.system.items():
        assert re.search(rf"{name}.*\| {re.escape(version)}", facts), name


def test_manifest_roundtrip(imported):
    again = parse_manifest(json.loads(json.dumps(imported.to_json())), "roundtrip")
    assert again.to_json() == imported.to_json()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("releases"), r"releases: missing"),
        (lambda d: d.update(schema=7), r"schema: unsupported manifest schema 7"),
        (lambda d: d["releases"][0].update(backend="tpu"), r"releases\[0\]\.backend: expected one of"),
        (lambda d: d["releases"][1].update(torch="2.9.0"), r"releases\[1\]\.torch: expected a list"),
        (lambda d: d["releases"][2].update(chips=["trn9"]), r"releases\[2\]\.chips: unknown chip"),
        (lambda d: d["releases"][0]["packages"].update(nki=[7]), r"releases\[0\]\.packages\.nki\[0\]"),
        (lambda d: d["releases"][3].update(version="x.y"), r"releases\[3\]\.version: 'x.y' is not"),
        (lambda d: d["releases"].append(dict(d["releases"][0])), rf"duplicate release {NEWEST}"),
    ],
)
def test_bad_neuronctl_manifest(mutate, message):
    data = load_bundled_manifest().to_json()
    mutate(data)
    with pytest.raises(InputError, match=message):
        parse_manifest(data, "m.json")
