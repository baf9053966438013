"""Every value of the bundled release data carries its source (URL, date read); values no
source gives are held as not published, never copied from a neighbouring release."""

from __future__ import annotations

import json
import re

import pytest
from packaging.version import Version
from support.bundled_releases import COMPILED, DEFAULT, NEWEST, RAW, VERSIONS
from support.paths import SHARED

from neuronctl.errors import InputError
from neuronctl.release.manifest import load_bundled_manifest, parse_manifest
from neuronctl.release.provenance import value_entries

FACTS = SHARED / "RELEASE-FACTS.md"


def test_every_bundled_value_has_a_source_or_is_not_published():
    m = load_bundled_manifest()
    reads = sorted(source.read for source in m.sources.values())
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", m.compiled) and m.compiled == reads[-1]  # the newest read
    missing = []
    for release in m.releases:
        for e in value_entries(release, m.sources):
            if e.source is None and e.value != "not published":
                missing.append(f"{release.version} {e.key}")
            if e.source is not None:
                assert e.source.url.startswith("https://") and e.source.read <= m.compiled
    assert not missing, missing


def test_a_value_without_a_source_fails_the_walk():
    """The walk above can fail: drop the source of one value and it is reported."""
    data = load_bundled_manifest().to_json()
    del data["releases"][0]["sources"]["date"]
    m = parse_manifest(data, "m.json")
    date = next(e for e in value_entries(m.releases[0], m.sources) if e.key == "date")
    assert date.source is None and date.value == RAW["releases"][0]["date"]


def test_unsourced_2_33_values_are_absent_not_copied():
    r = load_bundled_manifest().get("2.33.0")
    xla = r.framework_for_torch("2.9")
    assert xla is not None and xla.chips == () and xla.python == ()
    unpublished = set(r.unpublished)
    assert {"frameworks.2.9.0.2.15.32035.chips", "frameworks.2.9.0.2.15.32035.python"} <= unpublished
    for name in ("neuronx-cc", "nki", "libneuronxla", "torch-xla"):
        for a in r.artifacts:
            if a.name == name:
                assert f"artifacts.{name}=={a.version}.python" in unpublished, name
                assert a.python == ()


def test_every_date_2_18_to_2_34_is_the_one_section_4_chooses():
    m = load_bundled_manifest()
    facts = FACTS.read_text()
    section = facts[facts.index("## 4. Release dates"):facts.index("## 5.")]
    chosen = dict(re.findall(r"^\| (2\.\d+\.\d+) \| (\d\d/\d\d/\d{4}) \|", section, re.M))
    assert len(chosen) >= 30
    for version, mdy in chosen.items():
        mm, dd, yyyy = mdy.split("/")
        release = m.find(version)
        assert release is not None, version
        assert release.date == f"{yyyy}-{mm}-{dd}", version
    assert all(r.date for r in m.releases)


def test_new_releases_from_the_reference():
    m = load_bundled_manifest()
    r1 = m.get("2.33.1")
    assert dict(r1.system) == {"aws-neuronx-dkms": "2.31.8.0", "aws-neuronx-runtime-lib": "2.35.33.0",
                               "aws-neuronx-collectives": "2.35.49.0",
                               "aws-neuronx-tools": "2.33.38.0"}
    assert r1.packages["libneuronxla"] == ("3.0.12293.0",) and r1.packages["nrtpy"] == ("2.35.33",)
    assert r1.packages["torch-neuronx"] == m.get("2.33.0").packages["torch-neuronx"]
    r2 = m.get("2.22.1")
    assert r2.system["aws-neuronx-dkms"] == "2.20.74.0" and r2.date == "2025-05-12"
    new = m.get("2.34.0")
    assert new.packages["torch-neuronx"] == ("2.14.3.1",) and new.torch == ("2.14.0",)
    assert dict(new.constraints) == {"neuronx-cc": "==2.*", "nki": "", "libneuronxla": "==3.*"}
    assert not new.system and not new.complete
    assert set(new.unpublished_pins()) >= {"neuronx-cc", "nki", "aws-neuronx-dkms"}


def test_default_is_the_newest_fully_published_release():
    m = load_bundled_manifest()
    assert m.latest.version == NEWEST == max(VERSIONS, key=Version)
    assert m.default.version == DEFAULT and m.default.complete
    assert all(not r.complete for r in m.releases if Version(r.version) > Version(DEFAULT))
    assert m.latest_with_flavour("native").version == DEFAULT


def test_releases_shows_dates_status_default_and_data(cli):
    r = cli("releases")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    # Off a terminal each release is one line (the line form), its two-line status joined.
    row = next(line for line in lines if line.startswith(f"{DEFAULT}: "))
    assert "status beta, default" in row
    row = next(line for line in lines if line.startswith("2.34.0: "))
    assert "neuronx-cc not published" in row and "status beta, partial" in row
    assert (f"default release: {DEFAULT} (--release latest), the newest whose whole stack is "
            "published") in r.out
    assert NEWEST == DEFAULT or f"{NEWEST} is not (" in r.out
    assert "release data: bundled" in r.out and f"compiled {COMPILED}" in r.out
    doc = json.loads(cli("releases", "--json").out)
    assert doc["default"]["version"] == DEFAULT and doc["data"]["compiled"] == COMPILED


def test_show_sources_prints_each_value_with_its_source(cli):
    r = cli("releases", "show", "2.34.0", "--sources")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    date = next(line for line in lines if line.startswith("date = "))
    assert "2026-11-30" in date and "release-notes/2.34.0.html (read 2026-12-01)" in date
    dkms = next(line for line in lines if line.startswith("system.aws-neuronx-dkms"))
    assert "not published" in dkms
    cc = next(line for line in lines if line.startswith("unpublished.neuronx-cc"))
    assert "neuronx-cc==2.*" in cc and "update-manual" in cc
    doc = json.loads(cli("releases", "show", "2.33.0", "--sources", "--json").out)
    values = {v["key"]: v for v in doc["values"]}
    assert values["frameworks.2.9.0.2.15.32035.chips"]["source"] is None
    assert values["system.aws-neuronx-dkms"]["source"]["url"].endswith("releasecontent.html")


def test_partly_published_release_says_so(cli):
    r = cli("releases", "show", "2.34.0")
    assert r.code == 0 and "note: not published: neuronx-cc, nki" in r.out
    assert f"the default release is {DEFAULT}" in r.out


@pytest.mark.parametrize("url", [
    "https://example.com/a b", "https://example.com/a\nb", "javascript:alert(1)",
    "ftp://example.com/x", "", "https://example.com/\x1b[2J", "data:text/html,x"])
def test_a_source_url_with_whitespace_or_another_scheme_is_refused(url):
    data = load_bundled_manifest().to_json()
    data["sources"]["n2"]["url"] = url
    with pytest.raises(InputError, match=r"sources\.n2\.url"):
        parse_manifest(data, "m.json")


def test_unknown_source_id_and_bad_constraint_are_refused():
    data = load_bundled_manifest().to_json()
    data["releases"][0]["sources"]["date"] = "nowhere"
    with pytest.raises(InputError, match=r"releases\[0\]\.sources\.date: unknown source"):
        parse_manifest(data, "m.json")
    data = load_bundled_manifest().to_json()
    data["releases"][0]["unpublished"]["nki"] = "==2.*\n--index-url x"
    with pytest.raises(InputError, match=r"unpublished\.nki: expected one line of printable text"):
        parse_manifest(data, "m.json")
    data["releases"][0]["unpublished"]["nki"] = "==2.* --index-url x"
    with pytest.raises(InputError, match=r"unpublished\.nki: .* is not a version constraint"):
        parse_manifest(data, "m.json")


def test_show_sources_lists_the_rules_of_the_release_with_theirs(cli):
    out = cli("releases", "show", "2.33.1", "--sources").out
    rule = next(line for line in out.splitlines()
                if line.startswith("rule os.torchneuron-wheels-ubuntu-26.04"))
    assert "Ubuntu 26.04 only" in rule and "quickstart-torch-neuron.html (read 2026-12-01)" in rule
    assert "rule support.xla-inference-trn2-trn3-ended-2.34" not in out  # 2.34's, not 2.33.1's
    doc = json.loads(cli("releases", "show", "2.34.0", "--sources", "--json").out)
    ids = {r["id"] for r in doc["rules"]}
    assert "support.xla-inference-trn2-trn3-ended-2.34" in ids
    assert all("(read 2026-12-01)" in r["source"] for r in doc["rules"])
