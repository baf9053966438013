import json

import pytest
from support.bundled_releases import DEFAULT, NEWEST, NEXT, VERSIONS
from support.paths import N2_MANIFEST


def test_releases_table(cli):
    r = cli("releases")
    assert r.code == 0, r.err
    lines = [line for line in r.out.splitlines() if "2." in line]
    assert lines[0].startswith(f"{NEWEST}: ") and "native" in lines[0]
    assert r.out.index("2.34.0") < r.out.index("2.33.1") < r.out.index("2.33.0") \
        < r.out.index("2.32.0") < r.out.index("2.18.0")
    assert [line.split(":")[0] for line in lines if line[:1].isdigit()] == list(VERSIONS)


def test_releases_json(cli):
    r = cli("releases", "--json")
    assert r.code == 0
    data = json.loads(r.out)
    assert data["schema"] == 1
    first = data["releases"][0]
    for key in ("version", "backend", "torch", "python", "chips", "packages", "system"):
        assert key in first
    assert first["version"] == NEWEST
    assert [x["version"] for x in data["releases"]][-1] == "2.18.0"


def test_releases_show(cli):
    r = cli("releases", "show", "2.33.0", "--json")
    assert r.code == 0
    rel = json.loads(r.out)["release"]
    assert rel["backend"] == "native"
    assert rel["packages"]["torch-neuronx"][:2] == ["2.14.3.0", "2.13.3.0"]
    text = cli("releases", "show", "2.32.0")
    assert text.code == 0 and "no torch-neuronx" in text.out and "2.27.5334.0" in text.out


@pytest.mark.parametrize("version", [NEXT, "9.9", "not-a-version"])
def test_releases_show_unknown_exits_2_with_nearest(cli, version):
    r = cli("releases", "show", version)
    assert r.code == 2
    assert "unknown Neuron release" in r.err and "nearest known:" in r.err
    assert "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_import_and_use_manifest(cli, tmp_path):
    out = tmp_path / "mine.json"
    r = cli("releases", "import", str(N2_MANIFEST), "-o", str(out))
    assert r.code == 0, r.err
    assert "wrote 51 releases" in r.out
    listed = cli("--manifest", str(out), "releases", "--json")
    versions = [x["version"] for x in json.loads(listed.out)["releases"]]
    assert versions[0] == "2.32.0" and versions[-1] == "2.3.0"
    per_command = cli("releases", "--manifest", str(out), "show", "2.5.0", "--json")
    assert per_command.code == 0
    assert json.loads(per_command.out)["release"]["torch"] == ["1.11.0"]
    # env var and config select it too
    (tmp_path / "cfg.toml").write_text(f'manifest = "{out}"\n')
    via_config = cli("--config", str(tmp_path / "cfg.toml"), "releases", "show", "2.3.0")
    assert via_config.code == 0


def test_import_json_summary_and_stdout(cli):
    r = cli("releases", "import", str(N2_MANIFEST), "--json")
    data = json.loads(r.out)
    assert data["schema"] == 1 and len(data["releases"]) == 51
    raw = cli("releases", "import", str(N2_MANIFEST), "-o", "-")
    assert json.loads(raw.out)["schema"] == 1


def _mutated(text, change):
    data = json.loads(text)
    change(data)
    return json.dumps(data)


def _write_n2(tmp_path, text):
    p = tmp_path / "n2.json"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    ("transform", "expect"),
    [
        (lambda t: t[: len(t) // 2], "invalid JSON at line"),
        (lambda t: "[]", "top level: expected an object"),
        (lambda t: t.replace('"neuron_releases"', '"releases_x"'), "neuron_releases: missing"),
        (lambda t: _mutated(t, lambda d: d["neuron_releases"][2].update(neuron_version=231)),
         "neuron_releases[2].neuron_version: expected a string"),
        (lambda t: _mutated(t, lambda d: d["neuron_releases"][0]["packages"][1].update(
            supported_instances="trn1")),
         "neuron_releases[0].packages[1].supported_instances: expected a list"),
        (lambda t: _mutated(t, lambda d: d["neuron_releases"][0]["packages"][4].pop("version")),
         "neuron_releases[0].packages[4].version: missing"),
        (lambda t: _mutated(t, lambda d: d["neuron_releases"].append(d["neuron_releases"][0])),
         "neuron_releases[51].neuron_version: duplicate release 2.32.0"),
        (lambda t: _mutated(t, lambda d: d.update(manifest_date="soon")),
         "manifest_date: 'soon' is not a date"),
    ],
)
def test_import_malformed_exits_2_naming_file_and_field(cli, tmp_path, transform, expect):
    src = _write_n2(tmp_path, transform(N2_MANIFEST.read_text()))
    out = tmp_path / "out.json"
    r = cli("releases", "import", str(src), "-o", str(out))
    assert r.code == 2, r.out
    assert str(src) in r.err and expect in r.err
    assert "Traceback" not in r.err
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [src]


def test_import_missing_file(cli, tmp_path):
    r = cli("releases", "import", str(tmp_path / "nope.json"))
    assert r.code == 2 and "no such file" in r.err


def test_bad_manifest_flag(cli, tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"schema": 1, "releases": [{"version": "2.1"}]}')
    r = cli("--manifest", str(p), "releases")
    assert r.code == 2
    assert f"{p}: releases[0].backend: missing" in r.err


def test_import_keeps_the_date_aws_gives_and_says_unknown_elsewhere(cli, tmp_path):
    """AWS's file dates only its newest release (manifest_date, MM/DD/YYYY, for manifest_version):
    that release keeps it through -o and --manifest; the others say unknown, never blank."""
    out = tmp_path / "mine.json"
    assert cli("releases", "import", str(N2_MANIFEST), "-o", str(out)).code == 0
    shown = cli("--manifest", str(out), "releases", "show", "2.32.0")
    assert "2.32.0 (2026-08-17)" in shown.out
    assert "(date unknown)" in cli("--manifest", str(out), "releases", "show", "2.31.1").out
    table = cli("--manifest", str(out), "releases").out
    row = next(line for line in table.splitlines() if "2.31.1" in line)
    assert "unknown" in row
    data = json.loads(cli("--manifest", str(out), "releases", "--json").out)["releases"]
    assert data[0]["date"] == "2026-08-17"


def test_import_without_output_says_nothing_was_written_and_how(cli, tmp_path):
    r = cli("releases", "import", str(N2_MANIFEST))
    assert r.code == 0
    assert "nothing was written" in r.err
    assert f"neuronctl releases import {N2_MANIFEST} -o " in r.err
    assert list(tmp_path.iterdir()) == []
    j = cli("releases", "import", str(N2_MANIFEST), "--json")
    assert json.loads(j.out)["output"] is None and "nothing was written" in j.err
    written = cli("releases", "import", str(N2_MANIFEST), "-o", str(tmp_path / "m.json"))
    assert "nothing was written" not in written.err


def test_manifest_text_is_printed_as_it_is(cli, tmp_path):
    """A manifest is data: rich markup or emoji codes in it print verbatim (a stray '[/]' was an
    'internal error')."""
    from neuronctl.release.manifest import load_bundled_manifest

    data = load_bundled_manifest().to_json()
    data["releases"][0]["notes"] = ["see [/] :cd: [red]x"]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data))
    r = cli("--manifest", str(path), "releases", "show", data["releases"][0]["version"])
    assert r.code == 0, r.err
    assert "note: see [/] :cd: [red]x" in r.out


def test_import_from_a_path_with_brackets(cli, tmp_path):
    src = tmp_path / "[bold]odd" / "n2.json"
    src.parent.mkdir()
    src.write_text(N2_MANIFEST.read_text())
    r = cli("releases", "import", str(src))
    assert r.code == 0, r.err
    assert "[bold]odd" in r.out


def test_import_is_an_operation_with_an_outcome(tmp_path):
    """ops.releases converts and writes without the CLI; its outcome is what the command renders."""

    from neuronctl.errors import InputError
    from neuronctl.ops.releases import import_aws_manifest
    from neuronctl.ops.reporter import CollectingReporter
    from neuronctl.release.manifest import parse_manifest

    reporter = CollectingReporter()
    out = tmp_path / "neuron.json"
    outcome = import_aws_manifest(N2_MANIFEST, out, reporter)
    assert outcome.written == out and out.read_text() == outcome.text
    assert parse_manifest(json.loads(outcome.text), "converted").releases == outcome.manifest.releases
    assert outcome.to_json()["output"] == str(out) and len(outcome.to_json()["releases"]) == 51
    assert reporter.messages("done") == [f"wrote 51 releases to {out}"]
    with pytest.raises(AttributeError, match="immutable"):
        outcome.written = None  # type: ignore[misc]
    unwritten = import_aws_manifest(N2_MANIFEST)
    assert unwritten.written is None and unwritten.text == outcome.text
    bad = _write_n2(tmp_path, "[]")
    with pytest.raises(InputError, match="top level: expected an object"):
        import_aws_manifest(bad, tmp_path / "never.json")
    assert not (tmp_path / "never.json").exists()


def test_release_words_latest_and_newest(cli):
    """`latest` is the default (newest fully published), `newest` the newest known; both are
    taken wherever --release is, and the JSON names the version they chose."""
    listing = json.loads(cli("releases", "--json").out)
    default, newest = listing["default"]["version"], listing["releases"][0]["version"]
    assert default == DEFAULT and newest == NEWEST
    assert f"{DEFAULT} (--release latest)" in listing["default"]["reason"]
    assert NEWEST == DEFAULT or f"--release {NEWEST} or --release newest" in listing["default"]["reason"]
    for word, version in (("latest", default), ("newest", newest)):
        shown = cli("releases", "show", word, "--json")
        assert shown.code == 0 and json.loads(shown.out)["release"]["version"] == version
    doctor = cli("doctor", "--level", "1", "--release", "newest", "--json")
    assert json.loads(doctor.out)["environment"]["release"]["version"] == NEWEST
    typo = cli("releases", "show", "lates")
    assert typo.code == 2 and "(or latest, newest)" in typo.err


def test_the_doctor_names_the_legacy_pin_of_a_native_release(cli, tmp_path):
    """2.33.1 pins the native 2.14/2.13 lines and the legacy XLA 2.9 build: the missing-package
    warning says which is which."""
    from support.wheels import make_venv

    python = make_venv(tmp_path / "venv")
    r = cli("doctor", "--level", "1", "--python", str(python), "--release", "2.33.1", "--json")
    check = next(c for c in json.loads(r.out)["checks"] if c["id"] == "packages.torch-neuronx")
    assert ("pins 2.14.3.0, 2.13.3.0, 2.9.0.2.15.32035 (legacy XLA build, for inference)"
            in check["message"])
