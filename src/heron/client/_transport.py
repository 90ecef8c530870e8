"""The ``httpx`` transports of the two clients, and aborting a blocking request (what
``httpx`` does not do for us: ARCHITECTURE.md, the client's transports)."""

from __future__ import annotations

import select
import socket
import ssl
import threading
from collections.abc import Iterable

import httpcore

from ._httpx import httpx

__all__ = ["LIMITS", "SocketBackend", "async_transport", "is_https", "sync_transport"]

LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=20, keepalive_expiry=5.0)
"""No cap on open connections: every event stream holds one for as long as it lasts,
so a cap would make the next request wait for a stream to end. Idle connections are
dropped well before the daemon's own 30 s keep-alive timeout closes them."""

SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


class _UnixStream(httpcore.NetworkStream):
    """A connected Unix socket, with httpcore's exception mapping."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            self._sock.settimeout(timeout)
            return self._sock.recv(max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(str(exc) or "read timed out") from exc
        except OSError as exc:
            raise httpcore.ReadError(str(exc)) from exc

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        try:
            self._sock.settimeout(timeout)
            self._sock.sendall(buffer)
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(str(exc) or "write timed out") from exc
        except OSError as exc:
            raise httpcore.WriteError(str(exc)) from exc

    def close(self) -> None:
        self._sock.close()

    def get_extra_info(self, info: str) -> object:
        if info == "socket":
            return self._sock
        if info == "is_readable":
            return _is_readable(self._sock)
        return None


def _is_readable(sock: socket.socket) -> bool:
    """Whether an idle connection has data or EOF waiting (then it cannot be reused).

    ``poll``, not ``select``: select refuses descriptors past 1023, which a busy
    process's connections easily are.
    """
    if sock.fileno() < 0:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


class _TrackedStream(httpcore.NetworkStream):
    """A stream that tells its backend which request worker is using it."""

    def __init__(self, stream: httpcore.NetworkStream, backend: SocketBackend) -> None:
        self._stream = stream
        self._backend = backend

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self._backend.using(self)
        return self._stream.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._backend.using(self)
        self._stream.write(buffer, timeout)

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        secure = self._stream.start_tls(ssl_context, server_hostname, timeout)
        return _TrackedStream(secure, self._backend)

    def get_extra_info(self, info: str) -> object:
        return self._stream.get_extra_info(info)

    def shutdown(self) -> None:
        """Shut the socket down under whoever is blocked on it (they get an error)."""
        sock = self._stream.get_extra_info("socket")
        if isinstance(sock, socket.socket):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed or never connected: nothing is blocked on it


class SocketBackend(httpcore.NetworkBackend):
    """httpcore's blocking network backend, with Unix connects that never leak a
    socket and request workers that can be aborted from another thread."""

    def __init__(self) -> None:
        self._tcp = httpcore.SyncBackend()
        self._lock = threading.Lock()
        self._workers: dict[int, object] = {}
        """Request key of each worker thread."""
        self._aborted: set[object] = set()
        self._active: dict[int, _TrackedStream] = {}

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self._tcp.connect_tcp(host, port, timeout, local_address, socket_options)
        return self._track(stream)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.NetworkStream:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            for option in socket_options or ():
                sock.setsockopt(*option)
            sock.settimeout(timeout)
            sock.connect(path)
        except TimeoutError as exc:
            sock.close()
            raise httpcore.ConnectTimeout(str(exc) or "connect timed out") from exc
        except OSError as exc:
            sock.close()
            raise httpcore.ConnectError(str(exc)) from exc
        except BaseException:
            sock.close()
            raise
        return self._track(_UnixStream(sock))

    def sleep(self, seconds: float) -> None:
        self._tcp.sleep(seconds)

    def _track(self, stream: httpcore.NetworkStream) -> httpcore.NetworkStream:
        tracked = _TrackedStream(stream, self)
        try:
            self.using(tracked)
        except BaseException:
            stream.close()
            raise
        return tracked

    def worker(self, key: object) -> None:
        """Register the calling thread as the worker of request ``key``, which
        :meth:`abort` may stop (already, if it was aborted before the worker started)."""
        ident = threading.get_ident()
        with self._lock:
            self._workers[ident] = key
            if key in self._aborted:
                raise httpcore.ConnectError("the request was cancelled before it started")

    def release(self, key: object) -> None:
        """Request ``key``'s worker is done: forget it."""
        with self._lock:
            self._workers.pop(threading.get_ident(), None)
            self._aborted.discard(key)
            self._active.pop(threading.get_ident(), None)

    def using(self, stream: _TrackedStream) -> None:
        """Record that the calling thread works on ``stream``; an error if it was aborted."""
        ident = threading.get_ident()
        if ident not in self._workers:  # the common case, without the lock: not a worker
            return
        with self._lock:
            if self._workers.get(ident) in self._aborted:
                raise httpcore.ReadError("the request was cancelled")
            self._active[ident] = stream

    def abort(self, key: object) -> None:
        """Stop request ``key``: its socket is shut down, its worker's next I/O fails
        (or its first, if it has not started yet)."""
        with self._lock:
            self._aborted.add(key)
            idents = [ident for ident, k in self._workers.items() if k is key]
            streams = [self._active.pop(ident) for ident in idents if ident in self._active]
        for stream in streams:
            stream.shutdown()


def sync_transport(
    backend: SocketBackend, *, uds: str | None, https: bool = False
) -> httpx.HTTPTransport:
    """The blocking client's transport: httpx's own, on :class:`SocketBackend`."""
    # httpx takes no network backend, so its pool is replaced below by an equal one that
    # has ours; verify=False only spares building the CA bundle (~25 ms) of the pool
    # thrown away.
    transport = httpx.HTTPTransport(limits=LIMITS, verify=False)
    transport._pool = httpcore.ConnectionPool(
        ssl_context=_tls(https),
        max_connections=LIMITS.max_connections,
        max_keepalive_connections=LIMITS.max_keepalive_connections,
        keepalive_expiry=LIMITS.keepalive_expiry,
        uds=uds,
        network_backend=backend,
    )
    return transport


def async_transport(*, uds: str | None, https: bool = False) -> httpx.AsyncHTTPTransport:
    """The ``asyncio`` client's transport (anyio closes a failed Unix connect itself)."""
    return httpx.AsyncHTTPTransport(uds=uds, limits=LIMITS, verify=_tls(https))


def is_https(base_url: str) -> bool:
    """Whether ``base_url`` is an ``https`` URL (the scheme in any case)."""
    return base_url[:6].lower() == "https:"


def _tls(https: bool) -> ssl.SSLContext:
    """The TLS context of a client: httpx's default (the CA bundle, ``SSL_CERT_FILE``)
    for an ``https`` daemon; otherwise one that verifies and trusts no CA, never used
    on a Unix socket or plain ``http`` and cheap to build (loading the CA bundle is
    ~25 ms of the cold start of a command)."""
    if https:
        return httpx.create_ssl_context()
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
