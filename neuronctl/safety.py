"""Untrusted text (from an index page, a lock, a manifest, a config, a probed interpreter) is
checked here before it can name a file or be trusted as a digest.

Every path neuronctl builds from such text goes through `safe_filename` (one path component,
a conservative alphabet) and `contained` (resolved, then checked to stay inside its root), and
every hash through `checked_hash` (a known algorithm, exactly the right number of hex digits).
"""

from __future__ import annotations

import re
from pathlib import Path

from neuronctl.errors import InputError

HEX_LENGTHS: dict[str, int] = {
    "md5": 32, "sha1": 40, "sha224": 56, "sha256": 64, "sha384": 96, "sha512": 128,
    "sha3_224": 56, "sha3_256": 64, "sha3_384": 96, "sha3_512": 128,
    "blake2b": 128, "blake2s": 64,
}
"""hashlib algorithm -> hex digest length: the names PEP 503/691/751 hashes may use."""

_HEX = re.compile(r"[0-9a-f]+")
_FILENAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
MAX_FILENAME = 255


def checked_hash(algorithm: str, value: object, where: str) -> str:
    """The digest in lowercase hex; InputError naming `where` unless the algorithm is known and the
    value is exactly that algorithm's length of hex digits (so it can never act as a path)."""
    algo = str(algorithm).lower()
    length = HEX_LENGTHS.get(algo)
    if length is None:
        raise InputError(f"{where}: unknown hash algorithm {str(algorithm)[:40]!r}")
    if not isinstance(value, str):
        raise InputError(f"{where}: {algo} hash is not a string")
    digest = value.lower()
    if len(digest) != length or not _HEX.fullmatch(digest):
        raise InputError(f"{where}: {algo} hash {value[:80]!r} is not {length} hex digits")
    return digest


def checked_hashes(hashes: object, where: str) -> dict[str, str]:
    """A hashes mapping with every entry checked (algorithms neuronctl does not know are an error:
    a hash it cannot verify is no guarantee)."""
    if not isinstance(hashes, dict):
        raise InputError(f"{where}: hashes must be a table of algorithm = hex digest")
    return {str(k).lower(): checked_hash(str(k), v, where) for k, v in hashes.items()}


def safe_filename(name: object, where: str) -> str:
    """`name` when it is one plain path component (a wheel or sdist file name): letters, digits,
    '.', '_', '+', '-', not starting with a dot, at most 255 characters; else InputError."""
    if not isinstance(name, str) or len(name) > MAX_FILENAME or not _FILENAME.fullmatch(name):
        shown = repr(name)[:80] if isinstance(name, str) else type(name).__name__
        raise InputError(f"{where}: {shown} is not a safe file name")
    return name


def contained(root: Path, *parts: str) -> Path:
    """root / parts, resolved, and refused (InputError) unless it stays inside root."""
    base = root.resolve()
    path = base.joinpath(*parts).resolve()
    if path != base and not path.is_relative_to(base):
        raise InputError(f"{'/'.join(parts)[:120]!r} would leave {root}")
    return path
