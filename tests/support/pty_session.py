"""Run a command on a real pseudo-terminal of a given width and read what it drew (the one pty
reader of the tests)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class OnPty:
    """How a command on a pty ended: its exit code, what the terminal showed, its stdout when
    that was a pipe (stdout_tty False)."""

    code: int
    shown: str
    piped: str


def on_pty(argv: list[str], env: dict[str, str], *, width: int = 80, timeout: float = 120,
           stdout_tty: bool = True) -> OnPty:
    """`argv` with stderr (and stdout, unless `stdout_tty` is False: then a pipe) on a pty
    `width` columns wide, stdin from /dev/null; both read as it runs, so neither can fill."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    env = {**env, "TERM": "xterm-256color"}
    out = follower if stdout_tty else subprocess.PIPE
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=follower,
                            env=env, close_fds=True)
    os.close(follower)
    got: dict[int, list[bytes]] = {leader: []}
    if proc.stdout is not None:
        got[proc.stdout.fileno()] = []
    open_fds = set(got)
    deadline = time.monotonic() + timeout
    while open_fds and time.monotonic() < deadline:
        ready, _, _ = select.select(list(open_fds), [], [], 0.5)
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: every writer closed the terminal
                data = b""
            if data:
                got[fd].append(data)
            else:
                open_fds.discard(fd)
        if not ready and proc.poll() is not None:
            break
    code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    os.close(leader)
    piped = b"".join(got[proc.stdout.fileno()]) if proc.stdout is not None else b""
    if proc.stdout is not None:
        proc.stdout.close()
    return OnPty(code, b"".join(got[leader]).decode("utf-8", "replace"), piped.decode("utf-8", "replace"))


def run_in_pty(argv: list[str], width: int, env: dict[str, str], *, timeout: float = 120,
               stdout_tty: bool = True) -> str:
    """What `argv` wrote on a pty `width` columns wide, both streams, as text (stdout_tty False:
    stdout is a pipe, its text follows the terminal's)."""
    ran = on_pty(argv, env, width=width, timeout=timeout, stdout_tty=stdout_tty)
    return ran.shown + ran.piped


def env_without_columns() -> dict[str, str]:
    """This environment less COLUMNS, so a terminal's own size decides the width."""
    return {k: v for k, v in os.environ.items() if k != "COLUMNS"}
