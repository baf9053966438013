"""Issue 35, item 4: offline, every index at once. `lock --offline` and `install --offline` with
an empty cache name every index the resolution would read in one error (not one a try), and a dry
run first says what the bundled release data decides (release, Python range, pins)."""

from __future__ import annotations

import re

from support.wheels import find_python


def test_lock_offline_names_every_index_it_lacks_at_once(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = cli("lock", "--offline")
    assert r.code == 1
    error = [line for line in r.err.splitlines() if line.startswith("neuronctl: error:")]
    assert len(error) == 1, r.err
    for index, packages in (("pytorch-cpu", "torch"), ("neuron", "torch-neuronx, neuronx-cc, nki")):
        assert f"{packages} on index '{index}' (http://127.0.0.1:9/simple" in error[0], error[0]
    assert "the resolution also reads index 'pypi'" in error[0]
    assert "hint: run it once online to fill the cache" in r.err
    assert not (tmp_path / "pylock.toml").exists()


def test_a_local_index_needs_no_cache(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mirror").mkdir()
    r = cli("lock", "--offline", "--index", f"neuron={(tmp_path / 'mirror').as_uri()}")
    assert r.code == 1
    error = next(line for line in r.err.splitlines() if line.startswith("neuronctl: error:"))
    assert "torch on index 'pytorch-cpu'" in error and "on index 'neuron'" not in error


def test_an_offline_dry_run_shows_what_the_bundled_data_decides_first(cli, tmp_path):
    r = cli("install", "--release", "2.33.1", "--venv", str(tmp_path / "v"),
            "--venv-python", find_python("3.12"), "--dry-run", "--offline")
    assert r.code == 1
    decided = next(line for line in (r.out + r.err).splitlines() if "release data decides" in line)
    assert re.search(r"Neuron 2\.33\.1 \(Python 3\.12-3\.14\): torch==2\.14\.0, "
                     r"torch-neuronx==2\.14\.3\.0, neuronx-cc==2\.28\.7631\.0, nki==0\.7\.0", decided)
    partial = cli("install", "--release", "2.34.0", "--venv", str(tmp_path / "v"),
                  "--venv-python", find_python("3.12"), "--dry-run", "--offline")
    assert "from the index, within AWS's recipe: neuronx-cc==2.*" in partial.out + partial.err


def test_releases_update_that_cannot_fetch_names_the_host_the_failure_and_the_way_round(cli):
    from support.loopback import closed_port

    r = cli("releases", "update", "--from", f"https://127.0.0.1:{closed_port()}/m.json")
    assert r.code == 1
    assert "cannot fetch from 127.0.0.1: connection refused (refused); nothing was changed" in r.err
    assert "releases update --from FILE" in r.err and "ConnectionError" not in r.err
