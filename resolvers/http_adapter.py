"""requests' transport for neuronctl: connections that report the socket each request uses to
that request's Guard (http_deadline), so a deadline or a stop can cut a blocked read off."""

from __future__ import annotations

from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from neuronctl.resolvers.http_deadline import current_guard


def _attach(conn: HTTPConnection) -> None:
    guard = current_guard()
    if guard is not None and conn.sock is not None:
        conn.neuronctl_guard = guard  # type: ignore[attr-defined]
        guard.attach(conn.sock)


def _release(conn: object) -> None:
    guard = getattr(conn, "neuronctl_guard", None)
    if guard is not None:
        guard.detach(getattr(conn, "sock", None))
        conn.neuronctl_guard = None  # type: ignore[attr-defined]


class _WatchedHTTPConnection(HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _attach(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _attach(self)  # a kept-alive connection: connect() is not called again
        super().request(*args, **kwargs)


class _WatchedHTTPSConnection(HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _attach(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _attach(self)
        super().request(*args, **kwargs)


class _Pool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection

    def _put_conn(self, conn: Any) -> None:
        _release(conn)
        super()._put_conn(conn)


class _TLSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection

    def _put_conn(self, conn: Any) -> None:
        _release(conn)
        super()._put_conn(conn)


class GuardedAdapter(HTTPAdapter):
    """requests' adapter on pools whose connections report their sockets to the current guard."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _Pool, "https": _TLSPool}

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = {"http": _Pool, "https": _TLSPool}
        return manager
