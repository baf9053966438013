"""Real HTTP servers on 127.0.0.1 for the tests: never any other address."""

from __future__ import annotations

import http.server
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class QuietHandler(http.server.BaseHTTPRequestHandler):
    def reply(self, body: str, content_type: str = "text/plain") -> None:
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (openssl, one day): a client trusts it through
    REQUESTS_CA_BUNDLE, as a user trusts a private CA, so https is tested without the internet."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    if not cert.is_file():
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


POLL_S = 0.02
"""How often a test server's loop looks for shutdown()."""


@contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler],
            tls: tuple[Path, Path] | None = None) -> Iterator[str]:
    """A server on 127.0.0.1; `tls` (self_signed's files): https."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        server.socket = context.wrap_socket(server.socket, server_side=True)
    # shutdown() waits for the loop's next poll: at the default 0.5 s, a test with the three
    # indexes of a universe spent 1.5-2.5 s in teardown (223 s of the suite's worker time).
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True).start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    return closed_ports(1)[0]


def closed_ports(count: int) -> list[int]:
    """`count` distinct loopback ports nothing listens on: bound all at once (so the kernel
    hands out no port twice, as separate calls may), then closed."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()
