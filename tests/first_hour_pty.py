"""Run a command on a real pseudo-terminal of a given width and read what it drew."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import time


def run_in_pty(argv: list[str], width: int, env: dict[str, str], *, timeout: float = 120,
               stdout_tty: bool = True) -> str:
    """`argv` with stdout and stderr on a pty `width` columns wide (stdin from /dev/null); what
    it wrote, both streams, as text. stdout_tty False: stdout is a pipe, stderr the pty."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    env = {**env, "TERM": "xterm-256color"}
    out = follower if stdout_tty else subprocess.PIPE
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=follower,
                            env=env, close_fds=True)
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: every writer closed
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    piped = proc.stdout.read() if proc.stdout else b""
    proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    os.close(leader)
    return (b"".join(chunks) + piped).decode("utf-8", "replace")
