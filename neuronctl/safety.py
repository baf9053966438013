"""Untrusted text (from an index page, a lock, a manifest, a config, a probed interpreter) is
checked here before it can name a file or be trusted as a digest.

Every path neuronctl builds from such text goes through `safe_filename` (one path component,
a conservative alphabet) and `contained` (resolved, then checked to stay inside its root), and
every hash through `checked_hash` (a known algorithm, exactly the right number of hex digits).
Every file a user or a config names (a lock, a manifest, a config) is opened by `open_regular`:
a regular file or nothing.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path
from typing import BinaryIO

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
    try:
        base = root.resolve()
        path = base.joinpath(*parts).resolve()
    except (OSError, ValueError, RuntimeError) as exc:  # a NUL, a name too long, a link loop
        raise InputError(f"{'/'.join(parts)[:120]!r}: not a path here ({type(exc).__name__})") from None
    if path != base and not path.is_relative_to(base):
        raise InputError(f"{'/'.join(parts)[:120]!r} would leave {root}")
    return path


NAME_MAX = 255
PATH_MAX = 4096
"""Linux's limits on a file name and a path, in bytes (the OS refuses longer with ENAMETOOLONG)."""


def expand_user(path: str | os.PathLike[str], where: str) -> Path:
    """`path` with a leading `~` or `~user` expanded: the one way a path the user or a file gives
    is expanded. A user with no home (`~nouser`) or a NUL, which no path holds, is bad input
    naming `where` (pathlib raises RuntimeError and ValueError on them)."""
    text = os.fspath(path)
    if "\0" in text:
        raise InputError(f"{where}: {ascii(text)[:120]} holds a NUL character, which no path has")
    if len(text.encode(errors="surrogateescape")) > PATH_MAX or any(
            len(part.encode(errors="surrogateescape")) > NAME_MAX for part in text.split("/")):
        raise InputError(f"{where}: {text[:60]!r}...: longer than a path ({PATH_MAX} bytes) or a "
                         f"file name ({NAME_MAX} bytes) can be")
    try:
        return Path(text).expanduser()
    except RuntimeError:
        user = text[1:].split("/", 1)[0]
        raise InputError(f"{where}: {text[:120]!r}: there is no user {user!r} whose home '~{user}' "
                         "could be") from None


URL_SCHEMES = ("http", "https", "file")
MAX_URL = 8192


def _shown(url: str) -> str:
    """A refused URL as a message shows it: redacted whole, then cut (cut first, a password past
    the cut would lose the '@' that marks it as one and be shown)."""
    from neuronctl.redact import redact

    return ascii(redact(url))[:120]


def checked_url(url: object, where: str, schemes: tuple[str, ...] = URL_SCHEMES) -> str:
    """`url` when it is one plain http(s) or file: URL (or `schemes`); else InputError naming
    `where`. A URL goes into an engine's input (a requirements line, a lock) and into messages:
    whitespace or a control character in it could start a new line or option there (`\\n-r
    ~/.netrc`), or move the cursor of the terminal showing it, so any such character is refused,
    never stripped (urllib drops tabs and newlines silently, so the check runs on the raw text)."""
    if not isinstance(url, str):
        raise InputError(f"{where}: the URL is not a string")
    if len(url) > MAX_URL:
        raise InputError(f"{where}: a URL of {len(url):,} characters (at most {MAX_URL:,})")
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        raise InputError(f"{where}: the URL {_shown(url)} holds whitespace or control characters")
    scheme, colon, _ = url.partition(":")
    if not colon or scheme.lower() not in schemes:
        raise InputError(f"{where}: the URL {_shown(url)} is not {'/'.join(schemes)}")
    return url


class NotRegularFile(OSError):
    """A named file that is not a regular file (a FIFO, /dev/stdin, a device, a socket): read,
    it could block forever or never end. An OSError, so that every reader's "cannot read"
    message names it; its text is the reason alone."""

    def __str__(self) -> str:
        return str(self.strerror)


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a plain file")


def open_regular(path: Path | str) -> BinaryIO:
    """`path` opened for reading in binary, only where it is (after its links) a regular file:
    anything else is refused before it is opened (opening a device can act on it) and, should it
    be swapped in between, after (O_NONBLOCK: opening a FIFO cannot wait for a writer), as a
    NotRegularFile. A directory is an IsADirectoryError, a link loop the OSError stat gives, a NUL
    (which os.stat raises ValueError on, past its callers' OSError) an OSError too."""
    if "\0" in os.fspath(path):
        raise OSError(errno.EINVAL, "a path holding a NUL character", ascii(os.fspath(path))[:120])
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(errno.EINVAL, f"{_kind(st.st_mode)}, not a regular file", str(path))
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"{_kind(mode)}, not a regular file", str(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def is_file_here(path: Path, where: str) -> bool:
    """Path.is_file() for a path an environment variable builds (XDG_CONFIG_HOME, XDG_DATA_HOME):
    a name too long or a NUL is bad input naming `where`, not an internal error."""
    try:
        return path.is_file()
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "a NUL character"
        raise InputError(f"{where}: {str(path)[:120]!r}: not a path here ({reason})") from None


def read_regular(path: Path, limit: int, where: str) -> bytes:
    """A regular file's bytes (open_regular), at most `limit` (a whole number of MiB), or
    InputError naming `where` ("--table t.json"): unreadable, or larger than the limit."""
    try:
        with open_regular(path) as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise InputError(f"{where}: cannot read it: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise InputError(f"{where}: larger than {limit // 2**20} MiB")
    return raw
