"""`releases update`'s rollback check, pure: the release data it would store must never pin, in a
release, a system package, the compiler (neuronx-cc) or torch-neuronx older than an earlier
release pins it. A fetched manifest that does is refused whole, as TUF refuses a rollback: a
"2.35.0" carrying 2.18.0's driver would otherwise become the default release, and `setup` would
downgrade every host to it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from msgspec import Struct
from packaging.version import InvalidVersion, Version

from neuronctl.errors import InputError
from neuronctl.release.model import Manifest, Release

COMPILER = "neuronx-cc"
TORCH_NEURONX = "torch-neuronx"


class Rollback(Struct, frozen=True):
    """`release` pins `package` at `version`, older than `earlier`'s `earlier_version`."""

    release: str
    package: str
    version: str
    earlier: str
    earlier_version: str

    def describe(self) -> str:
        return (f"release {self.release} pins {self.package} {self.version}, older than "
                f"{self.earlier_version} in the earlier release {self.earlier}")


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:  # a value the loader let through, not one this check can order
        return None


def pins(release: Release) -> Iterator[tuple[str, str]]:
    """(package, version) for what the check compares; torch-neuronx per PyTorch line (its
    first two parts are torch's: 2.13.x and 2.14.x are different lines, not a downgrade)."""
    yield from release.system.items()
    for version in release.packages.get(COMPILER, ()):
        yield COMPILER, version
    for fw in release.frameworks:
        line = ".".join(fw.torch_neuronx.split(".")[:2])
        yield f"{TORCH_NEURONX} {line}", fw.torch_neuronx


def _newest(release: Release) -> dict[str, tuple[Version, str]]:
    out: dict[str, tuple[Version, str]] = {}
    for package, text in pins(release):
        parsed = _version(text)
        if parsed is not None and (package not in out or parsed > out[package][0]):
            out[package] = (parsed, text)
    return out


def _oldest(release: Release) -> dict[str, tuple[Version, str]]:
    out: dict[str, tuple[Version, str]] = {}
    for package, text in pins(release):
        parsed = _version(text)
        if parsed is not None and (package not in out or parsed < out[package][0]):
            out[package] = (parsed, text)
    return out


def rollbacks(manifest: Manifest, touched: Iterable[str]) -> list[Rollback]:
    """Each pin of a release older than the newest earlier release's pin of that package, where
    either of the two releases is in `touched` (added or changed by this update: the data in
    use is not judged again)."""
    changed = set(touched)
    found = []
    newest: dict[str, tuple[Version, str, str]] = {}  # package -> version, text, release
    for release in sorted(manifest.releases, key=lambda r: r.key):
        for package, (version, text) in _oldest(release).items():
            top = newest.get(package)
            if top is not None and version < top[0] and (release.version in changed
                                                          or top[2] in changed):
                found.append(Rollback(release.version, package.split(" ")[0], text, top[2],
                                      top[1]))
        for package, (version, text) in _newest(release).items():
            if package not in newest or version > newest[package][0]:
                newest[package] = (version, text, release.version)
    return found


def unorderable(manifest: Manifest, touched: Iterable[str]) -> list[tuple[str, str, str]]:
    """(release, package, version) for each pin of an added or changed release that this check
    cannot order (not a PEP 440 version, such as 2.18.0.0-dkms): it could hide a rollback, so
    it is refused too (fail closed), never skipped."""
    changed = set(touched)
    return [(r.version, package.split(" ")[0], text) for r in manifest.releases
            if r.version in changed for package, text in pins(r) if _version(text) is None]


def refuse_rollbacks(manifest: Manifest, touched: Iterable[str], source: str) -> None:
    """InputError (exit 2, nothing stored) naming the first rollback and how many there are,
    or the first pin the check cannot order."""
    odd = unorderable(manifest, touched)
    if odd:
        release, package, text = odd[0]
        raise InputError(f"{source}: refused: release {release} pins {package} {text!r}, not a "
                         "version the rollback check can order; nothing was changed",
                         hint="release data pins versions such as 2.31.8.0; check where this "
                              "release data came from")
    found = rollbacks(manifest, touched)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise InputError(f"{source}: refused, a rollback: {found[0].describe()}{more}; "
                         "nothing was changed",
                         hint="a release never pins older packages than an earlier one; check "
                              "where this release data came from")


__all__ = ["Rollback", "pins", "refuse_rollbacks", "rollbacks", "unorderable"]
