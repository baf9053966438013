"""`neuronctl lock` end to end against real loopback indexes (PyPI-, PyTorch- and Neuron-like)."""

import hashlib
import json
from pathlib import Path

from support.locks import versions
from support.universe import running

from neuronctl.resolvers.pylock import load_pylock
from neuronctl.resolvers.targets import PlatformTarget
from neuronctl.tomlfile import read_toml


def file_hashes(wheels) -> dict[str, str]:
    return {w.name: hashlib.sha256(w.read_bytes()).hexdigest()
            for entries in wheels.values() for w, _ in entries}


def test_lock_pins_the_release_each_package_from_its_own_index(cli, uni, wheels):
    r = cli("lock", *uni.index_flags(), "--python", "3.12")
    assert r.code == 0, r.err
    lock = load_pylock(Path("pylock.toml"))
    assert versions(lock) == {
        "filelock": ["3.16.1"],  # 3.17.0 is yanked
        "neuronx-cc": ["2.28.7631.0"], "nki": ["0.7.0"], "numpy": ["2.1.0"],
        "torch": ["2.14.0+cpu"], "torch-neuronx": ["2.14.3.0"],
        "typing-extensions": ["4.12.2"],  # 5.0.0 requires Python >= 3.13
    }
    index_of = {str(p.name): p.index for p in lock.packages}
    assert index_of["torch"] == uni.urls["pytorch-cpu"]
    assert index_of["torch-neuronx"] == index_of["nki"] == index_of["neuronx-cc"] == uni.urls["neuron"]
    assert index_of["filelock"] == uni.urls["pypi"]
    # Every wheel's recorded hash is the real file's; only the target's wheels are listed.
    real = file_hashes(wheels)
    sizes = {w.name: w.stat().st_size for entries in wheels.values() for w, _ in entries}
    for p in lock.packages:
        for w in p.wheels:
            assert w.hashes["sha256"] == real[w.name]
            assert w.size == sizes[w.name]  # HTML indexes omit it; the range reply told us
            assert "cp313" not in w.name
    # The PyPI traps were never even looked up: routing sends those names elsewhere.
    asked = {path for _, path, _ in uni.pypi.hits}
    assert not asked & {"/simple/torch-neuronx/", "/simple/nki/", "/simple/neuronx-cc/", "/simple/torch/"}
    # Metadata: sidecars on the PyPI-like index, range requests on the Neuron one, no whole wheel.
    assert any(path.endswith(".whl.metadata") for _, path, _ in uni.pypi.hits)
    neuron_files = [(path, rng) for _, path, rng in uni.neuron.hits if path.startswith("/files/")]
    assert neuron_files and all(rng for _, rng in neuron_files)
    toml = read_toml(Path("pylock.toml"), "lock")
    tool = toml["tool"]["neuronctl"]
    assert tool["release"] == "2.33.1" and tool["pins"]["torch-neuronx"] == "2.14.3.0"
    assert tool["routes"]["torch"] == "pytorch-cpu" and tool["routes"]["nki"] == "neuron"
    assert toml["lock-version"] == "1.0" and toml["created-by"] == "neuronctl"


def test_lock_is_byte_stable_and_pylock_named(cli, uni):
    assert cli("lock", *uni.index_flags(), "--python", "3.12").code == 0
    first = Path("pylock.toml").read_bytes()
    assert cli("lock", *uni.index_flags(), "--python", "3.12").code == 0
    assert Path("pylock.toml").read_bytes() == first
    r = cli("lock", *uni.index_flags(), "-o", "locked.toml")
    assert r.code == 2 and "pylock.toml or pylock.NAME.toml" in r.err
    assert not Path("locked.toml").exists()


def test_several_targets_share_one_lock_with_markers(cli, uni):
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--python", "3.13",
            "--with", "transformers[torch]")
    assert r.code == 0, r.err
    lock = load_pylock(Path("pylock.toml"))
    assert len(lock.environments) == 2
    assert sorted(versions(lock)["typing-extensions"]) == ["4.12.2", "5.0.0"]
    for python, te in (("3.12", "4.12.2"), ("3.13", "5.0.0")):
        target = PlatformTarget(python, "manylinux_2_28_x86_64")
        chosen = {str(p.name): (str(p.version), w.name) for p, w in
                  lock.select(environment=target.markers, tags=list(target.tags))}
        assert chosen["typing-extensions"][0] == te
        assert chosen["accelerate"][0] == "1.0.0"  # the extra's dependency
        assert f"cp3{python[-2:]}" in chosen["torch"][1] and f"cp3{python[-2:]}" in chosen["numpy"][1]


def test_latest_takes_newest_native_build_within_the_release_lines(cli, uni):
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--latest")
    assert r.code == 0, r.err
    got = versions(load_pylock(Path("pylock.toml")))
    assert got["torch-neuronx"] == ["2.14.4.0"]  # not 99.0.0 (PyPI), not the legacy 2.9 line
    assert got["torch"] == ["2.14.0+cpu"]  # 2.15 is outside the release's torch line


def test_version_filter_refuses_legacy_and_placeholders():
    from packaging.version import Version

    from neuronctl.release.manifest import load_bundled_manifest
    from neuronctl.resolvers.stack_plan import plan_stack
    from neuronctl.resolvers.stack_roots import version_filter

    refuse = version_filter(plan_stack(load_bundled_manifest().get("2.33.0"), "2.14", False))
    assert "xla" in refuse("torch-neuronx", Version("2.9.0.2.15.32035"))
    assert "placeholder" in refuse("torch-neuronx", Version("1.0"))
    assert "placeholder" in refuse("neuronx-cc", Version("1.0.post1"))
    assert refuse("torch-neuronx", Version("2.14.3.0")) is None
    legacy = version_filter(plan_stack(load_bundled_manifest().get("2.33.0"), "2.9", False))
    assert "native" in legacy("torch-neuronx", Version("2.14.3.0"))


def test_conflict_names_requirements_versions_and_index(cli, uni):
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--with", "typing-extensions<4.10")
    assert r.code == 1
    assert "typing-extensions<4.10 (from --with)" in r.err
    assert "typing-extensions>=4.10 (from torch 2.14.0+cpu)" in r.err
    assert f"index pypi ({uni.urls['pypi']}): 4.12.2, 4.9.0" in r.err
    assert "requires-python >=3.13" in r.err  # why 5.0.0 did not fit
    assert not Path("pylock.toml").exists()


def test_routed_index_without_the_package_is_an_error_not_a_fallback(cli, uni):
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--route", "typing-extensions=neuron")
    assert r.code == 2
    assert "'typing-extensions' is routed to index 'neuron'" in r.err and "never falls back" in r.err
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--with", "no-such-package")
    assert r.code == 2 and "'no-such-package' is routed to index 'pypi'" in r.err
    assert not Path("pylock.toml").exists()
    r = cli("lock", *uni.index_flags(), "--route", "torch=nowhere")
    assert r.code == 2 and "unknown index 'nowhere'" in r.err


def test_index_overrides_from_environment_and_config(cli, uni, monkeypatch):
    for name in ("PYPI", "NEURON"):
        monkeypatch.delenv(f"NEURONCTL_INDEX_{name}")  # config, not the test-wide default
    monkeypatch.setenv("NEURONCTL_INDEX_PYTORCH_CPU", uni.urls["pytorch-cpu"])
    Path("pyproject.toml").write_text(
        '[tool.neuronctl]\nrelease = "2.33.0"\ntorch = "2.13"\npython = ["3.13"]\n'
        f'indexes = {{ pypi = "{uni.urls["pypi"]}", neuron = "{uni.urls["neuron"]}" }}\n')
    r = cli("lock", "--json")
    assert r.code == 0, r.err
    summary = json.loads(r.out)
    assert summary["schema"] == 1 and summary["targets"] == [{"python": "3.13",
                                                              "platform": "manylinux_2_28_x86_64"}]
    got = {p["name"]: p["version"] for p in summary["packages"]}
    assert got["torch"] == "2.13.0+cpu" and got["torch-neuronx"] == "2.13.3.0"
    assert got["typing-extensions"] == "5.0.0"


def test_credentials_work_but_are_never_written_or_printed(cli, uni):
    secret = uni.urls["pypi"].replace("http://", "http://alice:s3cret@")
    r = cli("lock", *uni.index_flags(), f"--index=pypi={secret}", "--python", "3.12", "--json")
    assert r.code == 0, r.err
    text = Path("pylock.toml").read_text()
    assert "s3cret" not in text and "alice" not in text and "s3cret" not in r.out + r.err
    assert uni.urls["pypi"] in text
    dead = "http://alice:s3cret@127.0.0.1:9/simple"
    r = cli("lock", *uni.index_flags(), f"--index=pypi={dead}", "--python", "3.12", "--timeout", "1")
    assert r.code == 1 and "127.0.0.1:9" in r.err and "s3cret" not in r.err


def test_requirements_export(cli, uni):
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--python", "3.13", "-o", "requirements.txt")
    assert r.code == 0, r.err
    text = Path("requirements.txt").read_text()
    assert "--no-index" in text.splitlines()
    assert "nki @ " in text and "--hash=sha256:" in text
    assert 'typing-extensions @ ' in text and 'python_version == "3.13"' in text
    assert cli("lock", *uni.index_flags(), "--python", "3.12", "--python", "3.13", "-o",
               "requirements.txt", "--check").code == 0


def test_check_reports_drift(cli, uni, tmp_path):
    assert cli("lock", *uni.index_flags(), "--python", "3.12").code == 0
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--check")
    assert r.code == 0 and "up to date" in r.out
    r = cli("lock", *uni.index_flags(), "--python", "3.13", "--check")
    assert r.code == 1 and "targets" in r.err
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--torch", "2.13", "--check")
    assert r.code == 1 and "torch-neuronx" in r.err
    # A manifest that now pins another nki: the lock no longer matches the release.
    from neuronctl.release.manifest import load_bundled_manifest

    data = load_bundled_manifest().to_json()
    rel = next(x for x in data["releases"] if x["version"] == "2.33.1")
    rel["packages"]["nki"] = ["0.7.1"]
    Path("m.json").write_text(json.dumps(data))
    r = cli("--manifest", "m.json", "lock", *uni.index_flags(), "--python", "3.12", "--check")
    assert r.code == 1 and "nki" in r.err
    assert cli("lock", "--check", "-o", "pylock.other.toml").code == 1


def test_http_cache_revalidates_and_offline_uses_it(cli, wheels):
    with running(wheels) as uni:
        flags = uni.index_flags()
        assert cli("lock", *flags, "--python", "3.12").code == 0
        first = uni.bytes_sent()
        uni.pypi.reset_counts(), uni.torch.reset_counts(), uni.neuron.reset_counts()
        r = cli("lock", *flags, "--python", "3.12", "--json")
        assert r.code == 0
        net = json.loads(r.out)["network"]
        assert net["revalidated"] >= 7 and uni.bytes_sent() < first / 5
    before = Path("pylock.toml").read_bytes()
    # The servers are gone: --offline still locks from the cache, and writes the same lock.
    r = cli("lock", *flags, "--python", "3.12", "--offline")
    assert r.code == 0, r.err
    assert Path("pylock.toml").read_bytes() == before
    r = cli("lock", *flags, "--python", "3.13", "--offline")
    assert r.code == 1 and "--offline" in r.err


def test_file_index_for_air_gapped_mirrors(cli, uni, wheels, tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    for w, _ in wheels["neuron"]:
        (mirror / w.name).write_bytes(w.read_bytes())
    r = cli("lock", *uni.index_flags(), f"--index=neuron={mirror.as_uri()}", "--python", "3.12")
    assert r.code == 0, r.err
    lock = load_pylock(Path("pylock.toml"))
    nki = next(p for p in lock.packages if p.name == "nki")
    assert nki.wheels[0].url.startswith("file://")
    assert not uni.neuron.hits


# Faults: each is retried, or is a clear error that leaves no (partial) lock behind.

def _keep_old_lock():
    Path("pylock.toml").write_text("old\n")


def test_503_then_success_and_one_timeout_are_retried(cli, uni):
    uni.neuron.fail_first["/simple/nki/"] = 2
    uni.pypi.stall["/simple/filelock/"] = (3.0, 1)
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "--timeout", "1")
    assert r.code == 0, r.err
    assert [p for _, p, _ in uni.neuron.hits].count("/simple/nki/") == 3
    assert [p for _, p, _ in uni.pypi.hits].count("/simple/filelock/") == 2


def test_truncated_json_page_is_an_input_error(cli, uni):
    _keep_old_lock()
    uni.pypi.corrupt_page["filelock"] = '{"meta": {"api-version": "1.1"}, "files": [{"filen'
    r = cli("lock", *uni.index_flags(), "--python", "3.12")
    assert r.code == 2 and "invalid JSON" in r.err and "/simple/filelock/" in r.err
    assert "Traceback" not in r.err
    assert Path("pylock.toml").read_text() == "old\n"


def test_bad_sidecar_hash_is_refused(cli, uni):
    _keep_old_lock()
    uni.pypi.corrupt_sidecar = True
    r = cli("lock", *uni.index_flags(), "--python", "3.12")
    assert r.code == 2 and "sidecar sha256 does not match" in r.err
    assert Path("pylock.toml").read_text() == "old\n"


def test_server_without_ranges_falls_back_to_a_reported_download(cli, wheels):
    with running(wheels, neuron_ranges=False) as uni:
        r = cli("lock", *uni.index_flags(), "--python", "3.12")
        assert r.code == 0, r.err
        assert "downloaded whole neuronx_cc-2.28.7631.0" in r.err and "range requests" in r.err
        real = file_hashes(wheels)
        for p in load_pylock(Path("pylock.toml")).packages:
            assert all(w.hashes["sha256"] == real[w.name] for w in p.wheels)


def test_wrong_hash_on_full_download_is_refused(cli, wheels):
    with running(wheels, neuron_ranges=False) as uni:
        for e in uni.neuron.projects["neuronx-cc"]:
            e.wrong_hash = True
        _keep_old_lock()
        r = cli("lock", *uni.index_flags(), "--python", "3.12")
        assert r.code == 2 and "sha256 mismatch" in r.err and "neuronx_cc" in r.err
        assert Path("pylock.toml").read_text() == "old\n"
        from neuronctl.cache_dir import user_cache_dir

        cached = [p.name for p in (user_cache_dir() / "wheels").rglob("*") if p.is_file()]
        assert not [n for n in cached if "neuronx_cc" in n]  # nothing unverified, no partial file


def test_bad_flags_are_one_line_errors(cli):
    for args, text in ((["--python-version", "three"], "--python-version 'three'"),
                       (["--platform", "win_amd64"], "Linux platform tag"),
                       (["--release", "9.9.9"], "unknown Neuron release"),
                       (["--torch", "1.0"], "offers torch"),
                       (["--python", "3.11"], "supports Python 3.12"),
                       (["--with", "bad req !"], "--with 'bad req !'"),
                       (["--with", "torch-neuronx"], "part of the Neuron stack"),
                       (["--index", "pypi"], "expected NAME=VALUE"),
                       (["--index", "pypi=ftp://x"], "not an http(s)://"),
                       (["--release", "2.32.0"], "ships no PyTorch framework")):
        r = cli("lock", *args)
        assert r.code == 2, (args, r.err)
        assert text in r.err and len(r.err.strip().splitlines()) <= 2, r.err
    assert not Path("pylock.toml").exists()


def test_a_bad_config_python_is_named_as_the_config_python(cli):
    Path("pyproject.toml").write_text('[tool.neuronctl]\npython = ["three"]\n')
    r = cli("lock")
    said = f"config python ({Path('pyproject.toml').resolve()}) 'three'"
    assert r.code == 2 and said in r.err and "--python-version" not in r.err, r.err

def test_lock_to_stdout(cli, uni):
    r = cli("lock", *uni.index_flags(), "--python", "3.12", "-o", "-")
    assert r.code == 0, r.err
    assert r.out.startswith('lock-version = "1.0"\n') and "[tool.neuronctl]" in r.out
    assert "locked 7 packages" in r.err and not Path("pylock.toml").exists()


def test_garbled_html_page_is_a_clear_failure(cli, uni):
    _keep_old_lock()
    uni.torch.corrupt_page["torch"] = "<html><body><a href='/files/torch-2.14.0%2Bcpu-cp3"
    r = cli("lock", *uni.index_flags(), "--python", "3.12")
    assert r.code == 1 and "Traceback" not in r.err
    assert "torch==2.14.0 (from Neuron release 2.33.1)" in r.err
    assert f"index pytorch-cpu ({uni.urls['pytorch-cpu']}): none that fit" in r.err
    assert Path("pylock.toml").read_text() == "old\n"


def test_pages_are_fetched_concurrently(cli, uni):
    # Each Neuron page takes a moment to answer: a sequential client would never overlap them.
    for project in ("torch-neuronx", "neuronx-cc", "nki"):
        uni.neuron.stall[f"/simple/{project}/"] = (0.3, 1)
    assert cli("lock", *uni.index_flags(), "--python", "3.12").code == 0
    assert uni.neuron.max_in_flight >= 3


def test_target_tags_follow_pip_for_linux_hosts():
    from packaging.tags import parse_tag

    t = PlatformTarget("3.12", "manylinux_2_28_x86_64")

    def rank(tag):
        return t.wheel_rank(parse_tag(tag))

    assert rank("cp312-cp312-manylinux_2_28_x86_64") < rank("cp312-cp312-manylinux_2_17_x86_64")
    assert rank("cp312-cp312-manylinux2014_x86_64") is not None
    assert rank("cp312-cp312-manylinux_2_17_x86_64") < rank("cp312-cp312-linux_x86_64")
    assert rank("cp312-abi3-manylinux_2_28_x86_64") is not None and rank("py3-none-any") is not None
    assert rank("cp312-cp312-manylinux_2_34_x86_64") is None  # newer glibc than the target
    assert rank("cp313-cp313-manylinux_2_28_x86_64") is None
    assert rank("cp312-cp312-manylinux_2_28_aarch64") is None
