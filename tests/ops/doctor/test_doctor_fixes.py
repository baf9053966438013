"""Every fix the doctor prints is a command that works when pasted: collected from every check in
every fixture scenario (stacks x hosts, a custom manifest, a drifted lock), each `neuronctl`
fix is run (installs as --dry-run, against loopback indexes) and must parse and succeed; the
other fixes are plain shell commands, and one report never suggests two different installs."""

import json
import re
import shlex

import pytest
from support.sysroots import build_cpu_host, build_host
from support.universe import LINUX, running
from support.wheels import build_wheel

from neuronctl.ops.doctor.fixes import neuronctl_program

SHELL_PROGRAMS = {"sudo", "cat", "unset", "uv"}


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    root = tmp_path_factory.mktemp("hosts")
    return {
        "trn2": build_host(root / "trn2", "trn2"),
        "trn1": build_host(root / "trn1", "trn1"),
        "cpu": build_cpu_host(root / "cpu"),
        "old-driver": build_host(root / "old", "trn2", driver="2.29.0.0", runtime="2.35.30.0"),
        "no-reload": build_host(root / "nr", "trn2", driver="2.30.2.0", dkms_pkg="2.31.7.0",
                                runtime="2.34.10.0"),
        "no-driver": build_host(root / "nodrv", "trn2", driver=None, sysfs=False, dev_nodes=False,
                                runtime=None),
        "container": build_host(root / "box", "trn2", sysfs=False, pci=False, dmi=False, runtime=None,
                                neuron_ls=False),
    }


@pytest.fixture(scope="module")
def legacy_wheels(tmp_path_factory, wheels):
    """The test universe plus the legacy XLA line for Python 3.11, which fixes on trn1 install."""
    out = tmp_path_factory.mktemp("legacy")
    tags = {minor: f"cp3{minor}-cp3{minor}-{LINUX}" for minor in (11, 12)}
    extra = {
        "html": [(build_wheel(out, "torch", "2.9.0+cpu", requires=("filelock",), tag=tag), {})
                 for tag in tags.values()],
        "neuron": [
            (build_wheel(out, "torch-neuronx", "2.9.0.2.15.32035", tag=tags[11],
                         requires=("torch==2.9.0", "torch-xla==2.9.0", "libneuronxla")), {}),
            (build_wheel(out, "neuronx-cc", "2.28.7631.0", tag=tags[11]), {}),
            (build_wheel(out, "libneuronxla", "3.0.10135.0"), {}),
            # The release pins one nki for all its lines; the shared universe's is 3.12+ only, and
            # the manifest's XLA line includes 3.11.
            (build_wheel(out, "nki", "0.7.0", tag=tags[11]), {}),
            *((build_wheel(out, "torch-xla", "2.9.0", tag=tag), {}) for tag in tags.values()),
        ],
    }
    return {kind: entries + extra.get(kind, []) for kind, entries in wheels.items()}


def collect(cli, *args):
    r = cli(*args, "--json", "--no-device-probe")
    assert r.code in (0, 1), r.err
    return json.loads(r.out)["checks"]


def steps(fix: str) -> list[list[str]]:
    out, current = [], []
    for word in shlex.split(fix):
        if word == "&&":
            out.append(current)
            current = []
        else:
            current.append(word)
    return [*out, current]


def run_fix(cli, uni, words: list[str]):
    program = neuronctl_program()
    assert words[:len(program)] == program, words
    args = words[len(program):]
    command = next(a for a in args if not a.startswith("-") and a not in re.findall(r"--manifest (\S+)", " ".join(args)))
    extra = {"install": ["--dry-run", *uni.index_flags()], "lock": uni.index_flags()}.get(command, [])
    return cli(*args, *extra)


def scenarios(stacks, hosts, tmp_path):
    manifest = tmp_path / "neuron.json"
    from neuronctl.release.manifest import load_bundled_manifest

    manifest.write_text(json.dumps(load_bundled_manifest().to_json()))
    for stack in ("native", "legacy", "placeholder", "clash", "cuda", "empty"):
        for host in hosts:
            yield f"{stack}@{host}", ["doctor", "--python", str(stacks[stack]), "--sysroot",
                                      str(hosts[host])], hosts[host]
    for stack in ("native", "legacy"):  # a release without PyTorch pins (backend none)
        yield f"{stack}@2.32.0", ["doctor", "--release", "2.32.0", "--python", str(stacks[stack]),
                                  "--sysroot", str(hosts["trn2"])], hosts["trn2"]
    for stack in ("legacy", "native", "empty"):
        yield f"{stack}+manifest", ["--manifest", str(manifest), "doctor", "--python",
                                    str(stacks[stack]), "--sysroot", str(hosts["trn2"])], hosts["trn2"]


def test_every_fix_in_every_scenario_works_when_pasted(cli, stacks, hosts, legacy_wheels, tmp_path,
                                                       monkeypatch):
    seen: dict[str, set[str]] = {}
    failures = []
    with running(legacy_wheels) as uni:
        lock = tmp_path / "pylock.toml"
        assert cli("lock", *uni.index_flags(), "--python", "3.12", "-o", str(lock)).code == 0
        with_lock = [(f"{stack}+lock", ["doctor", "--python", str(stacks[stack]), "--sysroot",
                                        str(hosts["trn2"]), "--lock", str(lock)], hosts["trn2"])
                     for stack in ("native", "clash", "legacy")]
        for name, args, sysroot in [*scenarios(stacks, hosts, tmp_path), *with_lock]:
            monkeypatch.setenv("NEURONCTL_SYSROOT", str(sysroot))
            checks = collect(cli, *args)
            installs = set()
            for check in checks:
                assert "()" not in check["message"], (name, check)
                if not check["fix"]:
                    continue
                assert "(" not in check["fix"] and " then " not in check["fix"], (name, check)
                for words in steps(check["fix"]):
                    ours = words[:len(neuronctl_program())] == neuronctl_program()
                    if ours and "--manifest" in args:
                        assert words[len(neuronctl_program()):][:2] == ["--manifest", args[1]]
                    if ours:
                        if "install" in words:
                            installs.add(shlex.join(words))
                        key = shlex.join(words)
                        if key in seen:
                            continue
                        r = run_fix(cli, uni, words)
                        seen[key] = {name}
                        if r.code != 0:
                            failures.append((name, check["id"], key, r.err.strip()[-400:]))
                    else:
                        prog = words[0]
                        assert prog in SHELL_PROGRAMS or prog == str(stacks[name.split("@")[0].split("+")[0]]), \
                            (name, check["id"], words)
                        if prog == "sudo":
                            assert words[1:4] in (["apt-get", "install", "-y"], ["rmmod", "neuron"],
                                                  ["modprobe", "neuron"]), words
            # One story per report: every install fix is the same command.
            assert len(installs) <= 1, (name, installs)
    assert not failures, "\n".join(map(str, failures))


def test_python_311_venv_gets_a_new_venv_not_a_python_that_cannot_hold_it(cli, stacks, hosts):
    checks = {c["id"]: c for c in collect(cli, "doctor", "--python", str(stacks["empty"]),
                                          "--sysroot", str(hosts["cpu"]))}
    for cid in ("python.version", "packages.torch-neuronx"):
        fix = checks[cid]["fix"]
        assert "--venv .venv-neuron --venv-python 3.12" in fix, fix
        assert "--python" not in fix.replace("--venv-python", "")


def test_legacy_env_on_trn1_gets_one_consistent_line(cli, stacks, hosts):
    checks = {c["id"]: c for c in collect(cli, "doctor", "--python", str(stacks["legacy"]),
                                          "--sysroot", str(hosts["trn1"]))}
    fix = checks["packages.coherence"]["fix"]
    assert "--torch 2.9" in fix and "--python " + str(stacks["legacy"]) in fix


def test_bare_pip_is_never_suggested(cli, stacks, hosts):
    for stack in ("placeholder", "clash", "cuda", "legacy"):
        for c in collect(cli, "doctor", "--python", str(stacks[stack]), "--sysroot", str(hosts["trn2"])):
            for words in steps(c["fix"] or "true"):
                assert words[0] != "pip", (stack, c)
