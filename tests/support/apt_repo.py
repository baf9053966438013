"""A real, signed apt repository built by the tests: fake Neuron .debs made with dpkg-deb,
Packages and Release indexes written here (apt-ftparchive is not needed), the Release signed with
a throwaway GPG key in its own GNUPGHOME, served on 127.0.0.1. `AptSandbox` is an isolated apt
configuration (APT_CONFIG) over a fixture root: its own sources, status file, lists and cache,
nothing of this machine's apt. `fake_apt_get` is the stand-in for apt-get the setup script runs
under the tests: `apt-get -s` resolves every pin for real against the repository, then the
resolved .debs are installed into the fixture root with `dpkg --root` (no maintainer scripts)."""

from __future__ import annotations

import atexit
import gzip
import hashlib
import http.server
import os
import subprocess
import tempfile
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from support.loopback import serving

KEY_FILE = "GPG-PUB-KEY-AMAZON-AWS-NEURON.PUB"


@dataclass(frozen=True)
class FakeDeb:
    name: str
    version: str
    """The Debian version, revision included where the real package has one."""
    files: Mapping[str, str] = field(default_factory=dict)
    depends: str = ""


def build_deb(work: Path, deb: FakeDeb) -> Path:
    tree = work / f"{deb.name}_{deb.version}"
    (tree / "DEBIAN").mkdir(parents=True)
    control = (f"Package: {deb.name}\nVersion: {deb.version}\nArchitecture: all\n"
               "Maintainer: neuronctl tests <tests@example.invalid>\n"
               + (f"Depends: {deb.depends}\n" if deb.depends else "")
               + f"Description: fake {deb.name} for neuronctl's setup tests\n")
    (tree / "DEBIAN" / "control").write_text(control)
    for path, text in {f"opt/neuronctl-tests/{deb.name}.version": deb.version, **deb.files}.items():
        target = tree / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    out = work / f"{deb.name}_{deb.version}_all.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(tree), str(out)],
                   check=True, capture_output=True)
    return out


def short_home(home: Path) -> Path:
    """`home` through a short link in /tmp: gpg puts its agent's sockets in the home folder, and
    a socket path over 107 bytes (a deep pytest tmp_path, more so under pytest-xdist) fails
    key generation with exit 2. Each home handed out is remembered, for stop_agents."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    if len(str(home)) >= 60 and home not in _SHORT:
        link = Path(tempfile.mkdtemp(prefix="g", dir="/tmp")) / "h"
        link.symlink_to(home)
        _SHORT[home] = link
    short = _SHORT.get(home, home)
    _HOMES.add(short)
    return short


_SHORT: dict[Path, Path] = {}
_HOMES: set[Path] = set()


def stop_agents() -> None:
    """Stop the gpg-agent that gpg started for each home short_home handed out: gpg starts one
    per home to make or use a key, and it outlives the test (and pytest) otherwise. Run at exit
    of every process that used one (each pytest-xdist worker too)."""
    for home in sorted(_HOMES):
        subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "gpg-agent"],
                       capture_output=True, timeout=30, check=False)
    _HOMES.clear()


atexit.register(stop_agents)


def gpg_key(home: Path, name: str = "Test Neuron Repo <repo@example.invalid>") -> str:
    """A throwaway signing key in `home` (its own GNUPGHOME); its fingerprint."""
    home = short_home(home)
    gpg = ["gpg", "--homedir", str(home), "--batch", "--pinentry-mode", "loopback",
           "--passphrase", ""]
    subprocess.run([*gpg, "--quick-gen-key", name, "ed25519", "sign", "never"], check=True,
                   capture_output=True)
    out = subprocess.run([*gpg, "--with-colons", "--list-keys"], check=True, capture_output=True,
                         text=True).stdout
    return next(line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:"))


def _gpg(home: Path) -> list[str]:
    return ["gpg", "--homedir", str(short_home(home)), "--batch", "--yes", "--pinentry-mode",
            "loopback", "--passphrase", ""]


@dataclass
class AptRepo:
    """A signed repository in `root`: dists/<suite>/main/binary-amd64/Packages, pool/, the key."""

    root: Path
    suite: str
    fingerprint: str
    debs: list[Path]


def build_repo(work: Path, suite: str, debs: Sequence[FakeDeb], *, gnupg: Path | None = None,
               published_key_home: Path | None = None) -> AptRepo:
    """The repository, signed by the key in `gnupg` (made when None). `published_key_home`: the
    key the repository publishes as GPG-PUB-KEY-AMAZON-AWS-NEURON.PUB, when it is another one
    (a repository whose published key is not the one that signs it)."""
    root = work / "repo"
    pool = root / "pool" / "main"
    pool.mkdir(parents=True)
    gnupg = gnupg or work / "gnupg"
    fingerprint = gpg_key(gnupg) if not (gnupg / "pubring.kbx").exists() else _fpr(gnupg)
    built = [build_deb(work / "build", d) for d in debs]
    stanzas = []
    for deb, path in zip(debs, built, strict=True):
        data = path.read_bytes()
        final = pool / path.name
        final.write_bytes(data)
        control = subprocess.run(["dpkg-deb", "-f", str(final)], check=True, capture_output=True,
                                 text=True).stdout.strip()
        stanzas.append(f"{control}\nFilename: pool/main/{path.name}\nSize: {len(data)}\n"
                       f"MD5sum: {hashlib.md5(data).hexdigest()}\n"
                       f"SHA256: {hashlib.sha256(data).hexdigest()}\n")
        del deb
    dist = root / "dists" / suite
    index = dist / "main" / "binary-amd64"
    index.mkdir(parents=True)
    packages = "\n".join(stanzas).encode()
    (index / "Packages").write_bytes(packages)
    (index / "Packages.gz").write_bytes(gzip.compress(packages, mtime=0))
    lines = []
    for rel in ("main/binary-amd64/Packages", "main/binary-amd64/Packages.gz"):
        data = (dist / rel).read_bytes()
        lines.append(f" {hashlib.sha256(data).hexdigest()} {len(data)} {rel}")
    release = textwrap.dedent(f"""\
        Origin: neuronctl-tests
        Label: neuronctl-tests
        Suite: {suite}
        Codename: {suite}
        Date: Tue, 01 Dec 2026 00:00:00 UTC
        Architectures: amd64 all
        Components: main
        SHA256:
        """) + "\n".join(lines) + "\n"
    (dist / "Release").write_text(release)
    subprocess.run([*_gpg(gnupg), "--clearsign", "-o", str(dist / "InRelease"), str(dist / "Release")],
                   check=True, capture_output=True)
    subprocess.run([*_gpg(gnupg), "-abs", "-o", str(dist / "Release.gpg"), str(dist / "Release")],
                   check=True, capture_output=True)
    publish = published_key_home or gnupg
    key = subprocess.run([*_gpg(publish), "--armor", "--export"], check=True,
                         capture_output=True).stdout
    (root / KEY_FILE).write_bytes(key)
    return AptRepo(root, suite, fingerprint, built)


def _fpr(home: Path) -> str:
    out = subprocess.run(["gpg", "--homedir", str(home), "--batch", "--with-colons", "--list-keys"],
                         check=True, capture_output=True, text=True).stdout
    return next(line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:"))


class _Files(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serve(root: Path) -> Iterator[str]:
    """The repository over HTTP on 127.0.0.1."""
    handler = partial(_Files, directory=str(root))
    with serving(handler) as url:  # type: ignore[arg-type]
        yield url


@dataclass(frozen=True)
class AptSandbox:
    """apt isolated from this machine: every directory apt reads or writes is under `work` or
    the fixture `root` (sources.list.d, keyrings and the dpkg status come from the root)."""

    root: Path
    work: Path
    config: Path

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith("APT_")}
        return {**base, "APT_CONFIG": str(self.config), "LC_ALL": "C", **(extra or {})}

    def apt_get(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["apt-get", *args], check=False, env=self.env(), capture_output=True, text=True,
                              timeout=120)


def apt_sandbox(root: Path, work: Path) -> AptSandbox:
    for d in ("etc/apt/sources.list.d", "etc/apt/keyrings", "etc/apt/trusted.gpg.d",
              "etc/apt/preferences.d", "etc/apt/apt.conf.d", "var/lib/dpkg/info",
              "var/lib/dpkg/updates", "var/lib/dpkg/triggers"):
        (root / d).mkdir(parents=True, exist_ok=True)
    status = root / "var/lib/dpkg/status"
    if not status.exists():
        status.write_text("")
    for d in ("state/lists/partial", "cache/archives/partial", "log"):
        (work / d).mkdir(parents=True, exist_ok=True)
    etc = root / "etc/apt"
    conf = work / "apt.conf"
    conf.write_text(textwrap.dedent(f"""\
        Dir::Etc::main "{work}/none.conf";
        Dir::Etc::parts "{etc}/apt.conf.d";
        Dir::Etc::sourcelist "{etc}/sources.list";
        Dir::Etc::sourceparts "{etc}/sources.list.d";
        Dir::Etc::trusted "{etc}/trusted.gpg";
        Dir::Etc::trustedparts "{etc}/trusted.gpg.d";
        Dir::Etc::preferences "{etc}/preferences";
        Dir::Etc::preferencesparts "{etc}/preferences.d";
        Dir::State "{work}/state";
        Dir::State::Lists "{work}/state/lists";
        Dir::State::status "{status}";
        Dir::Cache "{work}/cache";
        Dir::Log "{work}/log";
        APT::Architecture "amd64";
        APT::Architectures {{ "amd64"; }};
        APT::Sandbox::User "root";
        Debug::NoLocking "true";
        Acquire::Languages "none";
        Acquire::http::Proxy "DIRECT";
        """))
    return AptSandbox(root, work, conf)


FAKE_APT_GET = """#!/bin/sh
# apt-get as the setup tests run it: `update` for real (into the sandbox's lists), `install`
# resolved for real with -s (a pin that does not resolve fails here), then the resolved .debs
# installed into the fixture root with dpkg --root; `remove` through dpkg --root too.
set -eu
cmd=$1; shift
case "$cmd" in
  update) exec apt-get update ;;
  install)
    apt-get -s install "$@" > "$FAKE_APT_LOG.sim" 2>&1 || { cat "$FAKE_APT_LOG.sim" >&2; exit 100; }
    cat "$FAKE_APT_LOG.sim" >> "$FAKE_APT_LOG"
    grep '^Inst ' "$FAKE_APT_LOG.sim" | while read -r _ name rest; do
      version=$(printf '%s\\n' "$rest" | sed -e 's/^\\[[^]]*\\] //' -e 's/^(\\([^ ]*\\) .*/\\1/')
      deb="$FAKE_APT_POOL/${name}_${version}_all.deb"
      dpkg --root="$NEURONCTL_SETUP_ROOT" --force-not-root --force-bad-path -i "$deb" >> "$FAKE_APT_LOG" 2>&1
    done ;;
  remove)
    for arg in "$@"; do
      case "$arg" in -*) ;; *) dpkg --root="$NEURONCTL_SETUP_ROOT" --force-not-root --force-bad-path -r "$arg" >> "$FAKE_APT_LOG" 2>&1 ;; esac
    done ;;
  *) echo "fake apt-get: $cmd not supported" >&2; exit 100 ;;
esac
"""

FAKE_MODPROBE = """#!/bin/sh
# modprobe as the setup tests run it: loading `neuron` makes the installed dkms version the
# loaded driver's (what a real reload does), unloading removes it.
set -eu
if [ "$1" = "-r" ]; then rm -f "$NEURONCTL_SETUP_ROOT/sys/module/neuron/version"; exit 0; fi
v=$(dpkg-query --root="$NEURONCTL_SETUP_ROOT" -W -f='${Version}' aws-neuronx-dkms)
mkdir -p "$NEURONCTL_SETUP_ROOT/sys/module/neuron"
printf '%s\\n' "${v%%-*}" > "$NEURONCTL_SETUP_ROOT/sys/module/neuron/version"
"""


def write_tool(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path
