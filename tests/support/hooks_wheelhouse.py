"""An offline wheelhouse of neuronctl's dependencies, so that the GitHub Action's and the
pre-commit hook's own installs (`pip install <checkout>`, with build isolation) run for real
with no index: PIP_NO_INDEX=1 and PIP_FIND_LINKS=<wheelhouse>, pip's own settings.

The wheels are repacked from the distributions installed in the test venv (their files as
installed, their dist-info with a fresh RECORD), which is what pip would have fetched: the same
names, versions and tags. Scripts are left out (pip writes them from entry_points.txt).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
import shutil
import subprocess
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
BUILD = ("setuptools",)  # neuronctl's build backend, for pip's isolated build
_DROP = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}


def _closure(roots: list[str]) -> list[metadata.Distribution]:
    seen: dict[str, metadata.Distribution] = {}
    todo = list(roots)
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        key = re.sub(r"[-_.]+", "-", req.name).lower()
        if key in seen:
            continue
        dist = metadata.distribution(req.name)
        seen[key] = dist
        todo += dist.requires or []
    return [seen[k] for k in sorted(seen)]


def _record_line(name: str, data: bytes) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, f"sha256={digest}", str(len(data))]


def repack(dist: metadata.Distribution, out: Path) -> Path:
    info = next(str(f).split("/", 1)[0] for f in dist.files or [] if ".dist-info/" in str(f))
    tag = next(line.split(":", 1)[1].strip() for line in (dist.read_text("WHEEL") or "Tag: py3-none-any")
               .splitlines() if line.startswith("Tag:"))
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    wheel = out / f"{name}-{dist.version}-{tag}.whl"
    rows = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for file in dist.files or []:
            rel = str(file)
            if rel.startswith("..") or "__pycache__" in rel or rel.endswith(".pyc") \
                    or (rel.startswith(info + "/") and rel.split("/", 1)[1] in _DROP):
                continue
            path = Path(str(dist.locate_file(file)))
            if not path.is_file():
                continue
            data = path.read_bytes()
            zf.writestr(rel, data)
            rows.append(_record_line(rel, data))
        record = io.StringIO()
        csv.writer(record, lineterminator="\n").writerows([*rows, [f"{info}/RECORD", "", ""]])
        zf.writestr(f"{info}/RECORD", record.getvalue())
    return wheel


def build_wheelhouse(out: Path) -> Path:
    """neuronctl's runtime dependencies and its build backend, as wheels in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    roots = [r for r in metadata.requires("neuronctl") or [] if "extra ==" not in r]
    for dist in _closure([*roots, *BUILD]):
        repack(dist, out)
    return out


def offline_pip_env(wheelhouse: Path) -> dict[str, str]:
    """pip's settings for an install from the wheelhouse alone."""
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse), "PIP_CONFIG_FILE": "/dev/null",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def checkout_copy(dest: Path) -> Path:
    """The repository as a runner or pre-commit checks it out: its files (tracked and new), no
    venv and no build output."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = REPO / rel
        if src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def write_project(work: Path, uni, monkeypatch) -> Path:
    """A project as a user keeps it: [tool.neuronctl] naming its indexes (the loopback ones;
    conftest's dead NEURONCTL_INDEX_* would override them, so they go)."""
    for name in ("PYPI", "PYTORCH_CPU", "NEURON"):
        monkeypatch.delenv(f"NEURONCTL_INDEX_{name}", raising=False)
    indexes = ", ".join(f'"{name}" = "{url}"' for name, url in sorted(uni.urls.items()))
    (work / "pyproject.toml").write_text(
        f'[project]\nname = "demo"\nversion = "0"\n\n[tool.neuronctl]\npython = "3.12"\n'
        f"indexes = {{ {indexes} }}\n")
    return work
