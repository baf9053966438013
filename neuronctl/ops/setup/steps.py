"""The steps of a setup plan, in order: the repository key (its fingerprint checked before it is
trusted), the repository, kernel headers, removal of the other generation, the pinned packages,
the hold, the driver reload, the Python stack, the level-1 doctor. Pure: the commands are text
over the script's variables and helpers (script.py), nothing runs here."""

from __future__ import annotations

import shlex

from neuronctl.ops.setup.model import SetupRequest, Step
from neuronctl.ops.setup.repos import KEY_FILE
from neuronctl.probes.system_packages import OLD_GENERATION

q = shlex.quote


def variables(req: SetupRequest, repo: str, fpr: str) -> dict[str, str]:
    """Each script variable and its default as shell text (every one can be set from the
    environment: a mirror, a test's fixture root)."""
    apt = req.target.family == "apt"
    kernel = req.facts.kernel if req.facts.known and req.facts.kernel else None
    out = {"SETUP_ROOT": "", "NEURON_REPO": q(repo), "NEURON_KEY_FPR": q(fpr),
           "KERNEL": q(kernel) if kernel else "$(uname -r)"}
    if apt:
        out["NEURON_SUITE"] = q(req.facts.codename or req.target.codename or "")
        out["KEYRING"] = '"$SETUP_ROOT/etc/apt/keyrings/neuron.gpg"'
        out["REPO_FILE"] = '"$SETUP_ROOT/etc/apt/sources.list.d/neuron.list"'
        out["APT_GET"] = "apt-get"
    else:
        out["KEYRING"] = '"$SETUP_ROOT/etc/pki/rpm-gpg/RPM-GPG-KEY-AMAZON-AWS-NEURON"'
        out["REPO_FILE"] = '"$SETUP_ROOT/etc/yum.repos.d/neuron.repo"'
        out["DNF"] = "dnf"
    out["MODPROBE"] = "modprobe"
    # By absolute path, never looked up: the steps run as root (from /, see script.preamble)
    out["NEURONCTL"] = q(req.neuronctl)
    out["NEURONCTL_PYTHON"] = q(req.python)
    if req.with_python:
        out["VENV"] = q(req.venv)
    return out


def _key(req: SetupRequest) -> Step:
    apt = req.target.family == "apt"
    store = ('gpg --batch --yes --dearmor -o "$KEYRING.new" "$KEYRING.download"' if apt
             else 'cp "$KEYRING.download" "$KEYRING.new"')
    commands = [
        'mkdir -p "$(dirname "$KEYRING")"',
        f'curl -fsSL "$NEURON_REPO/{KEY_FILE}" -o "$KEYRING.download"',
        'got=$(key_fprs "$KEYRING.download" | tr "\\n" " ")',
        'if [ "$got" != "$NEURON_KEY_FPR " ]; then rm -f "$KEYRING.download"; echo "neuronctl '
        'setup: the key at $NEURON_REPO has fingerprint(s) ${got:-none}, not $NEURON_KEY_FPR: '
        'it is not trusted" >&2; exit 1; fi',
        store, 'mv "$KEYRING.new" "$KEYRING"', 'rm -f "$KEYRING.download"']
    if not apt:
        commands.append('rpm --root="${SETUP_ROOT:-/}" --import "$KEYRING"')
    return Step("repo-key", "Trust the Neuron repository's signing key",
                "packages are verified against it; it is trusted only if its fingerprint is "
                "the one AWS's key has (or --key-fingerprint), checked before it is stored",
                tuple(commands), "key_ok")


def _repo(req: SetupRequest) -> Step:
    if req.target.family == "apt":
        lines = ['"deb [signed-by=$KEYRING] $NEURON_REPO $NEURON_SUITE main"']
    else:
        lines = ['"[neuron]"', '"name=Neuron YUM Repository"', '"baseurl=$NEURON_REPO"',
                 '"enabled=1"', '"gpgcheck=1"', '"gpgkey=file://${KEYRING#"$SETUP_ROOT"}"',
                 '"metadata_expire=0"']
    text = "printf '%s\\n' " + " ".join(lines)
    write = f'{text} > "$REPO_FILE.new"'
    check = f'[ "$(cat "$REPO_FILE" 2>/dev/null)" = "$({text})" ]'
    where = "this Ubuntu's suite" if req.target.family == "apt" else "dnf's repository file"
    return Step("repo", "Add the Neuron package repository",
                f"the release's packages come from it ({where})",
                ('mkdir -p "$(dirname "$REPO_FILE")"', write, 'mv "$REPO_FILE.new" "$REPO_FILE"'),
                check)


def _headers(req: SetupRequest) -> Step:
    f = req.facts
    install: tuple[str, ...]
    if req.target.family == "apt":
        install = ("refresh", '"$APT_GET" install -y "linux-headers-$KERNEL"')
    else:
        install = ('"$DNF" install -y "kernel-devel-$KERNEL" "kernel-headers-$KERNEL"',)
    return Step("kernel-headers", "Kernel headers for the running kernel"
                + (f" ({f.kernel})" if f.kernel else ""),
                "DKMS builds the driver (aws-neuronx-dkms) against them; without them the "
                "install leaves no driver for this kernel",
                install, 'headers_present',
                satisfied=f.headers if f.known else None)


def _other_generation(req: SetupRequest) -> Step | None:
    f = req.facts
    present = [p for p in OLD_GENERATION if p in f.packages]
    if f.known and not present:
        return None
    names = " ".join(present or OLD_GENERATION)
    return Step("other-generation", "Remove the first-generation aws-neuron-* packages",
                "aws-neuron-dkms/-tools/-runtime beside aws-neuronx-* break the stack (an old "
                "libnrt or a second driver); installed: " + (", ".join(present) or "not known"),
                (f"remove_installed {names}",), f"none_installed {names}",
                satisfied=False if present else None)


def _pins_text(req: SetupRequest, packages: dict[str, str]) -> str:
    if req.target.family == "apt":
        return " ".join(q(f"{p}={v}*") if v else p for p, v in packages.items())
    return " ".join(q(f"{p}-{v}") if v else p for p, v in packages.items())


def _versions_text(packages: dict[str, str]) -> str:
    return " ".join(f"{p} {q(v) if v else '-'}" for p, v in packages.items())


def _packages(req: SetupRequest, packages: dict[str, str]) -> Step:
    f = req.facts
    pins = _pins_text(req, packages)
    if req.target.family == "apt":
        commands = ("refresh", '"$APT_GET" install -y --allow-downgrades '
                               f"--allow-change-held-packages {pins}")
    else:
        commands = (f'"$DNF" versionlock delete {" ".join(packages)} 2>/dev/null || true',
                    f'"$DNF" install -y --allowerasing {pins}')
    others = {p: v for p, v in f.packages.items() if p.startswith("aws-neuronx-")
              and p in packages and packages[p] and v != packages[p]}
    why = ("the driver and the user space of this release, pinned together so the documented "
           "driver/runtime rules hold")
    if others:
        why += "; replaces " + ", ".join(f"{p} {v}" for p, v in sorted(others.items()))
    done = all(f.packages.get(p) == v for p, v in packages.items() if v)
    return Step("packages", f"Install Neuron {req.release.version}'s system packages", why,
                commands, f"all_versions {_versions_text(packages)}",
                satisfied=done if f.known else None)


def _hold(req: SetupRequest, packages: dict[str, str]) -> Step:
    f = req.facts
    names = " ".join(packages)
    commands: tuple[str, ...]
    if req.target.family == "apt":
        commands = (f"printf '%s hold\\n' {names} | "
                    'dpkg --root="${SETUP_ROOT:-/}" --set-selections',)
        check = f"all_held {names}"
    else:
        commands = ("\"$DNF\" install -y 'dnf-command(versionlock)'",
                    f'"$DNF" versionlock add {_pins_text(req, packages)}')
        check = f"all_held {_versions_text(packages)}"
    return Step("hold", "Hold the set so unattended upgrades cannot break it",
                "an upgrade of one package alone (a new runtime on an old driver) is the "
                "mismatch users hit; apt-mark hold / dnf versionlock keeps them together",
                commands, check,
                satisfied=(all(p in f.held for p in packages)
                           if f.known and req.target.family == "apt" else None))


def _reload(req: SetupRequest, driver: str) -> Step | None:
    f = req.facts
    if f.known and not f.devices and not f.loaded_driver:
        return None
    satisfied = f.loaded_driver == driver if f.known else None
    blocked = "; ".join(f.holders) if f.holders and not satisfied else None
    return Step("driver-reload", f"Load driver {driver}",
                "a new driver takes effect once the old module is unloaded; refused while "
                "processes hold /dev/neuron* (they would lose their NeuronCores)",
                ('pids=$(neuron_holders | tr "\\n" " ")',
                 'if [ -n "$pids" ]; then echo "neuronctl setup: processes $pids hold '
                 '/dev/neuron*: stop them, then re-run" >&2; exit 1; fi',
                 'if [ -e "$SETUP_ROOT/sys/module/neuron" ]; then "$MODPROBE" -r neuron; fi',
                 '"$MODPROBE" neuron'),
                f'[ "$(loaded_driver)" = {q(driver)} ]', satisfied=satisfied, blocked=blocked)


def _python(req: SetupRequest) -> Step:
    fw = req.release.default_framework()
    version = fw.torch_neuronx if fw else ""
    probe = ("\"$VENV/bin/python\" -c 'import importlib.metadata as m; "
             "print(m.version(\"torch-neuronx\"))' 2>/dev/null")
    return Step("python-stack", f"Install the Python stack into {req.venv}",
                f"torch-neuronx {version} and its pinned stack through `neuronctl install`",
                (f'"$NEURONCTL" install --release {q(req.release.version)} --venv "$VENV" '
                 "--no-check --yes",),
                f'[ "$({probe})" = {q(version)} ]' if version else None)


def _doctor(req: SetupRequest) -> Step:
    # the interpreter named by absolute path: without it the doctor would take VIRTUAL_ENV or
    # ./.venv, whatever the directory setup was started in holds
    target = ' --python "$VENV/bin/python"' if req.with_python else ' --python "$NEURONCTL_PYTHON"'
    return Step("doctor", "Verify with neuronctl doctor --level 1",
                "the checks after the change: driver, runtime and their documented rules",
                (f'"$NEURONCTL" doctor --level 1 --release {q(req.release.version)}{target}',),
                None)


def steps(req: SetupRequest, packages: dict[str, str], notes: list[str]) -> list[Step]:
    out: list[Step | None] = [_key(req), _repo(req), _headers(req), _other_generation(req),
                              _packages(req, packages), _hold(req, packages),
                              _reload(req, packages["aws-neuronx-dkms"])]
    if out[-1] is None:
        notes.append("no Neuron device on this host: the driver is installed, not loaded")
    if req.with_python:
        out.append(_python(req))
    out.append(_doctor(req))
    return [s for s in out if s is not None]
