"""Build small but real wheels (dist-info, RECORD, metadata) and install them into real venvs."""

from __future__ import annotations

import base64
import glob
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path


def build_wheel(outdir: Path, name: str, version: str, *, requires: tuple[str, ...] = (),
                files: dict[str, str] | None = None, summary: str = "",
                tag: str = "py3-none-any", requires_python: str | None = None,
                blob_size: int = 0, extras: dict[str, tuple[str, ...]] | None = None) -> Path:
    """`blob_size` adds that many random bytes, stored uncompressed (a large compiler wheel)."""
    dist = name.replace("-", "_")
    outdir.mkdir(parents=True, exist_ok=True)
    wheel = outdir / f"{dist}-{version}-{tag}.whl"
    info = f"{dist}-{version}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
            f"Summary: {summary or name + ' (test build)'}"]
    if requires_python:
        meta.append(f"Requires-Python: {requires_python}")
    meta += [f"Requires-Dist: {r}" for r in requires]
    for extra, reqs in (extras or {}).items():
        meta.append(f"Provides-Extra: {extra}")
        meta += [f'Requires-Dist: {r}; extra == "{extra}"' for r in reqs]
    contents = dict(files or {f"{dist}/__init__.py": f'__version__ = "{version}"\n'})
    contents[f"{info}/METADATA"] = "\n".join(meta) + "\n\n"
    contents[f"{info}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: neuronctl-tests\n"
                                 f"Root-Is-Purelib: true\nTag: {tag}\n")
    records = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, text in contents.items():
            data = text.encode()
            zf.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append(f"{path},sha256={digest},{len(data)}")
        if blob_size:
            blob = os.urandom(blob_size)
            zf.writestr(f"{dist}/_blob.bin", blob, compress_type=zipfile.ZIP_STORED)
            digest = base64.urlsafe_b64encode(hashlib.sha256(blob).digest()).rstrip(b"=").decode()
            records.append(f"{dist}/_blob.bin,sha256={digest},{blob_size}")
        records.append(f"{info}/RECORD,,")
        zf.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    return wheel


def find_python(minor: str) -> str:
    """A real interpreter of that version: pyenv's, since the bare shims fail unselected. Found
    by path, never by pyenv on PATH, and in the real user's home: the autouse isolation points
    HOME at a temporary folder, so "~" is not where the Pythons are."""
    import pwd

    roots = [os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv"),
             os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".pyenv"), "/root/.pyenv"]
    candidates = [c for root in dict.fromkeys(roots)
                  for c in sorted(glob.glob(f"{root}/versions/{minor}.*/bin/python{minor}"))]
    candidates += [f"/usr/bin/python{minor}", f"/usr/local/bin/python{minor}"]
    for c in candidates:
        if os.path.exists(c):
            return c
    raise RuntimeError(f"no Python {minor} interpreter on this machine")


def make_venv(path: Path, python: str | None = None, *, with_pip: bool = False) -> Path:
    flags = [] if with_pip else ["--without-pip"]
    subprocess.run([python or sys.executable, "-m", "venv", *flags, str(path)], check=True,
                   capture_output=True)
    return path / "bin" / "python"


def pip_install(venv_python: Path, wheels: list[Path]) -> None:
    """Install with the real pip (ours, aimed at the venv), offline and without dependencies;
    with the real uv where our pip cannot run under the venv's Python (a stock Debian python3's
    venv bundles pip 23.0.1, whose pkg_resources breaks on Python 3.12: `--python` re-runs pip
    under the target)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    if _pip_runs_under(venv_python):
        argv = [sys.executable, "-m", "pip", "--python", str(venv_python), "install", "-q",
                "--no-index", "--no-deps", "--no-cache-dir"]
    else:
        env.update(UV_NO_CONFIG="1", UV_PYTHON_DOWNLOADS="never")
        argv = [str(Path(sys.executable).parent / "uv"), "pip", "install", "-q", "--python",
                str(venv_python), "--no-index", "--no-deps", "--no-cache"]
    subprocess.run([*argv, *map(str, wheels)], check=True, capture_output=True, env=env)


def _pip_runs_under(venv_python: Path) -> bool:
    """Whether this environment's pip runs under `venv_python` (pip supports Python 3.12 from
    23.2 on)."""
    from importlib.metadata import version

    from packaging.version import Version

    cfg = Path(venv_python).parent.parent / "pyvenv.cfg"
    text = cfg.read_text() if cfg.is_file() else ""
    found = [line.split("=", 1)[1].strip() for line in text.splitlines()
             if line.split("=", 1)[0].strip() in ("version", "version_info")]
    minor = tuple(int(x) for x in found[0].split(".")[:2]) if found else sys.version_info[:2]
    return minor < (3, 12) or Version(version("pip")) >= Version("23.2")


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3.*/site-packages"))
