"""neuronctl's own wheel, for `setup --dockerfile`: an image installs the neuronctl that wrote its
Dockerfile, copied into the build context and checked by sha256, never a name from an index
(no project of that name is ours there; whoever registered it would get code into every image).

Where the files come from depends on how this neuronctl is installed; both are read from the
files that are running, nothing is fetched and no build backend runs:

- from a wheel (pip, uv, pipx): the installed files its RECORD lists, each checked against the
  RECORD's sha256 (a file changed since the install is refused, not packed), with the installed
  dist-info (METADATA, entry_points.txt) and a fresh RECORD;
- from a checkout (an editable install: direct_url.json says `editable`): the packages
  pyproject.toml's `[tool.setuptools]` declares (`packages`, `package-dir`, `package-data`), the
  files setuptools would put in the wheel, with the editable install's METADATA and entry points
  (its version must be the checkout's: a stale install is refused, reinstall the checkout).

The zip is reproducible (sorted names, fixed times and modes): the same files give the same
sha256, so a Dockerfile regenerated from an unchanged install does not change.
"""

from __future__ import annotations

import base64
import csv
import fnmatch
import hashlib
import io
import json
import os
import re
import zipfile
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

from msgspec import Struct

import neuronctl
from neuronctl._version import __version__
from neuronctl.atomic import write_bytes_atomic
from neuronctl.errors import InputError
from neuronctl.tomlfile import read_toml

DIST = "neuronctl"
TAG = "py3-none-any"
_KEEP_INFO = ("METADATA", "entry_points.txt", "top_level.txt")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_HINT = ("build one from the checkout (`python -m build --wheel`) and pass "
         "--neuronctl-wheel PATH, or pass --neuronctl-spec SPEC")


class SelfWheel(Struct, frozen=True):
    """The wheel written, its sha256 (hex) and where its files came from."""

    path: Path
    sha256: str
    source: str


def wheel_name() -> str:
    return f"{DIST}-{__version__}-{TAG}.whl"


def build_self_wheel(out_dir: Path) -> SelfWheel:
    """Write neuronctl's own wheel into `out_dir` (atomically) from the files running now."""
    dist, checkout = _running_distribution()
    if checkout is not None:
        files, source = _checkout_files(checkout), f"the checkout {checkout}"
    else:
        files, source = _installed_files(dist), f"the installed files of {DIST} {dist.version}"
    info = f"{DIST}-{__version__}.dist-info"
    for name in _KEEP_INFO:
        text = dist.read_text(name)
        if text is not None:
            files[f"{info}/{name}"] = text.encode()
    files[f"{info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: neuronctl {__version__}\n"
                              f"Root-Is-Purelib: true\nTag: {TAG}\n").encode()
    data = _zip(files, info)
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        # A link would carry the wheel (and the replace of a file of its name) out of the
        # build context, wherever the working directory's owner points it.
        raise InputError(f"{out_dir}: a link or not a folder; the wheel is written only into a "
                         "real folder in the build context")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / wheel_name()
    write_bytes_atomic(path, data)
    return SelfWheel(path, hashlib.sha256(data).hexdigest(), source)


def _running_distribution() -> tuple[metadata.Distribution, Path | None]:
    """The installed distribution whose files are the neuronctl running (and its checkout, for
    an editable install): another one on the path (a stale copy, a checkout's egg-info) is
    passed over, and none matching is refused rather than packed."""
    running = Path(neuronctl.__file__).resolve()
    for dist in metadata.distributions(name=DIST):
        if dist.version != __version__ or dist.read_text("RECORD") is None:
            continue
        checkout = _editable_checkout(dist)
        if checkout is not None and (checkout / "neuronctl" / "__init__.py").resolve() == running:
            return dist, checkout
        init = next((f for f in dist.files or [] if str(f) == f"{DIST}/__init__.py"), None)
        if init is not None and Path(str(dist.locate_file(init))).resolve() == running:
            return dist, None
    raise InputError(f"no installed {DIST} {__version__} metadata describes the code running "
                     f"({running.parent}): {_HINT}")


def _editable_checkout(dist: metadata.Distribution) -> Path | None:
    raw = dist.read_text("direct_url.json")
    if not raw:
        return None
    try:
        direct = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(direct, dict) or not (direct.get("dir_info") or {}).get("editable"):
        return None
    url = urlparse(str(direct.get("url", "")))
    return Path(unquote(url.path)) if url.scheme == "file" else None


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _packable(rel: str) -> bool:
    return rel.startswith(f"{DIST}/") and "__pycache__" not in rel and not rel.endswith(".pyc")


def _installed_files(dist: metadata.Distribution) -> dict[str, bytes]:
    """The package's files as installed, each checked against the RECORD's sha256."""
    files: dict[str, bytes] = {}
    for entry in dist.files or []:
        rel = str(entry)
        if not _packable(rel) or ".." in rel.split("/"):
            continue
        data = Path(str(dist.locate_file(entry))).read_bytes()
        want = entry.hash
        if want is None or want.mode != "sha256" or _b64(hashlib.sha256(data).digest()) != want.value:
            raise InputError(f"{rel}: the installed file does not match its RECORD (changed "
                             f"since the install): reinstall neuronctl, or {_HINT}")
        files[rel] = data
    if f"{DIST}/__init__.py" not in files:
        raise InputError(f"the installed {DIST} lists no package files in its RECORD: {_HINT}")
    return files


def _checkout_files(checkout: Path) -> dict[str, bytes]:
    """What setuptools puts in the wheel, from pyproject.toml's [tool.setuptools] tables."""
    tool = read_toml(checkout / "pyproject.toml", "pyproject.toml").get("tool", {})
    table = tool.get("setuptools", {}) if isinstance(tool, dict) else {}
    packages, dirs = table.get("packages"), table.get("package-dir", {})
    data_globs = table.get("package-data", {})
    if not isinstance(packages, list) or not isinstance(dirs, dict) or not isinstance(data_globs, dict):
        raise InputError(f"{checkout}/pyproject.toml: no [tool.setuptools] packages list: {_HINT}")
    files: dict[str, bytes] = {}
    for package in packages:
        if not isinstance(package, str) or not re.fullmatch(r"neuronctl(\.[a-z_]+)*", package):
            raise InputError(f"{checkout}/pyproject.toml: package {package!r} is not neuronctl's")
        folder = _package_folder(checkout, package, dirs)
        globs = ["*.py", *data_globs.get(package, [])]
        for name in sorted(os.listdir(folder)):
            path = folder / name
            if path.is_file() and not path.is_symlink() and any(fnmatch.fnmatch(name, g) for g in globs):
                files["/".join(package.split(".")) + "/" + name] = path.read_bytes()
    return files


def _package_folder(checkout: Path, package: str, dirs: dict[str, object]) -> Path:
    """A package's folder by package-dir's longest mapped prefix (setuptools' own rule)."""
    parts = package.split(".")
    for cut in range(len(parts), 0, -1):
        mapped = dirs.get(".".join(parts[:cut]))
        if isinstance(mapped, str):
            base = (checkout / mapped).resolve()
            folder = base.joinpath(*parts[cut:])
            if not base.is_relative_to(checkout.resolve()) or not folder.is_dir():
                break
            return folder
    raise InputError(f"{checkout}/pyproject.toml: no folder for package {package}")


def _zip(files: dict[str, bytes], info: str) -> bytes:
    """A reproducible wheel: package files sorted, then the dist-info, RECORD last."""
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        names = sorted(files, key=lambda n: (n.startswith(info + "/"), n))
        for name in names:
            zf.writestr(_entry(name), files[name])
            writer.writerow([name, f"sha256={_b64(hashlib.sha256(files[name]).digest())}",
                             len(files[name])])
        writer.writerow([f"{info}/RECORD", "", ""])
        zf.writestr(_entry(f"{info}/RECORD"), record.getvalue())
    return buffer.getvalue()


def _entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, _ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info
