"""`neuronctl bundle`, second pass as an attacker: a ./neuronctl/ package in the working
directory must not run in place of neuronctl (the bundle stored the impostor's output as
collected), and --redact-hostnames must stay linear whatever the captured /etc/hostname holds
(a 400 KB one held the GIL for minutes, past every item's limit)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.archives import members
from support.sysroots import captured

from neuronctl.ops.bundle import BundleRequest, Scrubber, make_bundle
from neuronctl.ops.bundle_items import ITEMS
from neuronctl.probes.sysroot import SysRoot

pytestmark = pytest.mark.hostile  # the hostile campaign (was tests/test_hostile2_bundle.py)

IMPOSTOR_MAIN = """\
import json, os, sys
open(os.environ["IMPOSTOR_MARKER"], "a").write("ran " + " ".join(sys.argv[1:]) + "\\n")
print(json.dumps({"env": {"python": "IMPOSTOR"}, "checks": [{"id": "IMPOSTOR"}]}))
"""


def test_a_neuronctl_package_in_the_working_directory_does_not_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "repo"
    (work / "neuronctl").mkdir(parents=True)
    (work / "neuronctl" / "__init__.py").write_text("")
    (work / "neuronctl" / "__main__.py").write_text(IMPOSTOR_MAIN)
    (work / "neuronctl" / "cli").mkdir()  # the boot path's own import, planted too
    (work / "neuronctl" / "cli" / "__init__.py").write_text("")
    (work / "neuronctl" / "cli" / "main.py").write_text(
        IMPOSTOR_MAIN + "def main():\n    raise SystemExit(0)\n")
    marker = tmp_path / "impostor-ran"
    monkeypatch.chdir(work)
    items = tuple(i for i in ITEMS if i.name in ("env.json", "doctor.json"))
    outcome = make_bundle(BundleRequest(
        output=tmp_path / "b.tar.gz", python=sys.executable, sysroot=SysRoot(captured(tmp_path)),
        config=work / "pyproject.toml", items=items,
        environ={**os.environ, "IMPOSTOR_MARKER": str(marker)}))
    files = members(outcome.path)
    assert not marker.exists(), marker.read_text()
    assert "IMPOSTOR" not in "".join(files.values())
    status = {r.file: r.status for r in outcome.items}
    assert status["env.json"] == "collected", outcome.items
    assert json.loads(files["env.json"])["env"]["python"]["executable"]
    # the index names the command as a user would run it, not the boot code
    assert all((r.source or "").startswith("neuronctl ") for r in outcome.items if r.source)


_TIMED = """\
import json, sys, time
from pathlib import Path
from neuronctl.ops.bundle import BundleRequest, make_bundle
from neuronctl.ops.bundle_items import ITEMS
from neuronctl.probes.sysroot import SysRoot
root, out = Path(sys.argv[1]), Path(sys.argv[2])
items = tuple(i for i in ITEMS if i.name == "kernel-log.txt")
times = {}
for redact in (False, True):
    start = time.monotonic()
    make_bundle(BundleRequest(output=out, python=sys.executable, sysroot=SysRoot(root),
                              redact_hostnames=redact, config=root / "none.toml", items=items))
    times[str(redact)] = time.monotonic() - start
print(json.dumps(times))
"""


@pytest.mark.parametrize("shape", ["spaced", "dotted"])
def test_a_400_kb_hostname_is_redacted_in_linear_time(tmp_path: Path, shape: str) -> None:
    root = captured(tmp_path)
    n = 200_000
    unit = "a " if shape == "spaced" else "a."
    name = (unit * n)[:-1]  # 400 KB: "a a a ... a" or "a.a. ... a"
    (root / "etc").mkdir()
    (root / "etc" / "hostname").write_text(name + "\n")
    (root / "var" / "log").mkdir(parents=True)
    # Text that starts the name again at every position and breaks it near the end: each start
    # compared up to the rest of the name, 400,000 times.
    (root / "var" / "log" / "kern.log").write_text(
        "kernel: neuron: " + unit * (n - 2) + "b " + unit * n + "\n")
    try:
        done = subprocess.run([sys.executable, "-c", _TIMED, str(root), str(tmp_path / "b.tgz")],
                              capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("--redact-hostnames took over 120 s on a 400 KB hostname")
    assert done.returncode == 0, done.stderr
    times = json.loads(done.stdout)
    assert times["True"] < 10 * times["False"] + 5, times


def test_host_names_of_every_shape_are_still_masked() -> None:
    scrub = Scrubber(["trn2-node-17.cluster.internal", "trn2-node-17", "weird name!", "x" * 300])
    text = ("on trn2-node-17.cluster.internal, TRN2-NODE-17.other.domain, weird name! and "
            + "x" * 300 + " but not trn2-node-170")
    out = scrub(text)
    assert "trn2-node-17." not in out.lower() and "weird name!" not in out
    assert out.count("<host>") == 3 and "trn2-node-170" in out  # the 300-x blob is dropped


def test_a_tree_tool_linked_out_of_the_tree_is_not_run(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURONCTL_SYSROOT_TOOLS", "1")  # the tree's own tools may run; not this
    root = captured(tmp_path)
    marker = tmp_path / "host-tool-ran"
    host_tool = tmp_path / "host" / "tool"
    host_tool.parent.mkdir()
    host_tool.write_text(f"#!/bin/sh\ntouch {marker}\necho '[]'\n")
    host_tool.chmod(0o755)
    (root / "opt/aws/neuron/bin").mkdir(parents=True)
    os.symlink(host_tool, root / "opt/aws/neuron/bin/neuron-ls")
    items = tuple(i for i in ITEMS if i.name.startswith("neuron-ls"))
    outcome = make_bundle(BundleRequest(output=tmp_path / "b.tar.gz", python=sys.executable,
                                        sysroot=SysRoot(root), config=tmp_path / "none.toml",
                                        items=items))
    assert not marker.exists()
    assert all(r.status == "unavailable" for r in outcome.items), outcome.items
