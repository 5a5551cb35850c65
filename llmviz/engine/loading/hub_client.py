"""The hub's HTTP client, each request's first bytes bounded in time.

huggingface_hub's own timeouts bound each socket read, so a hub (or a mirror, a proxy) that answers the probe's HEAD
at once and then sends a GET's body one byte a second keeps a download waiting forever: `llmviz generate --model
nobody/x` hung until killed. Here every request must receive its first FIRST_BYTES bytes (status line and headers
included: all of a small answer, such as the hub's JSON about a model) within FIRST_BYTES_S seconds of being sent;
after that the transfer goes on at whatever speed it has, so a large download that is slow but progressing is not
cut off, only one whose first bytes never come. Each request's bound starts again when it is sent (a network
stream's write), whichever pooled connection carries it; a connection, and a TLS handshake, get the same bound.

Installed as huggingface_hub's client (its public set_client_factory, with its own event hooks) the first time a
download needs the network: `install()`. A request through a proxy from the environment (HTTPS_PROXY) goes through
httpx's proxy transport, which this bound does not cover.
"""

from __future__ import annotations

import time

import httpcore2
import httpx2

FIRST_BYTES = 16 * 2**10  # at 1.6 kB/s no model downloads in a useful time; any working hub sends this in a second
FIRST_BYTES_S = 5.0  # a slow link's TCP and TLS handshakes and 16 KiB take ~2 s at 300 ms a round trip


class FirstBytesStream(httpcore2.NetworkStream):
    """A network stream whose reads, after each write (a request sent), must deliver `first` bytes within
    `seconds` in total: each read waits at most what is left of that time."""

    def __init__(self, inner: httpcore2.NetworkStream, seconds: float, first: int):
        self._inner, self._seconds, self._first = inner, seconds, first
        self._due, self._left = time.monotonic() + seconds, first  # a connection's own first bytes (TLS, HTTP)

    def _bounded(self, timeout: float | None) -> float | None:
        if self._left <= 0:
            return timeout
        remaining = self._due - time.monotonic()
        if remaining <= 0:
            raise httpcore2.ReadTimeout(f"the hub sent fewer than {self._first:,} bytes within {self._seconds:g} s")
        return remaining if timeout is None else min(timeout, remaining)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = self._inner.read(max_bytes, self._bounded(timeout))
        self._left -= len(data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout)
        self._due, self._left = time.monotonic() + self._seconds, self._first  # an answer's first bytes are due

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname: str | None = None, timeout: float | None = None):
        tls = self._inner.start_tls(ssl_context, server_hostname, self._bounded(timeout))
        return FirstBytesStream(tls, self._seconds, self._first)

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class FirstBytesBackend(httpcore2.NetworkBackend):
    """httpcore's own socket backend, its streams wrapped in FirstBytesStream and its connects bounded the same."""

    def __init__(self, seconds: float = FIRST_BYTES_S, first: int = FIRST_BYTES):
        self._inner, self.seconds, self.first = httpcore2.SyncBackend(), seconds, first

    def _cap(self, timeout: float | None) -> float:
        return self.seconds if timeout is None else min(timeout, self.seconds)

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options=None) -> httpcore2.NetworkStream:
        stream = self._inner.connect_tcp(host, port, self._cap(timeout), local_address, socket_options)
        return FirstBytesStream(stream, self.seconds, self.first)

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options=None):
        stream = self._inner.connect_unix_socket(path, self._cap(timeout), socket_options)
        return FirstBytesStream(stream, self.seconds, self.first)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class FirstBytesTransport(httpx2.HTTPTransport):
    """httpx's transport over a connection pool of FirstBytesBackend (httpx takes no backend of its own: its pool,
    `_pool`, is replaced by one built the same way with the backend)."""

    def __init__(self, seconds: float = FIRST_BYTES_S, first: int = FIRST_BYTES):
        super().__init__()
        self._pool = httpcore2.ConnectionPool(ssl_context=httpx2.create_ssl_context(),
                                              network_backend=FirstBytesBackend(seconds, first))


class FirstBytesClient(httpx2.Client):
    """The client huggingface_hub shares between its calls, told apart by its class (install() runs once)."""


def install() -> None:
    """Make huggingface_hub's shared client one whose requests' first bytes are bounded (FIRST_BYTES within
    FIRST_BYTES_S, read when it is made); its event hooks (offline mode, request ids) and redirects as the client it
    replaces had them. Nothing changes when it already is one."""
    from huggingface_hub import get_session, set_client_factory

    current = get_session()
    if isinstance(current, FirstBytesClient):
        return
    hooks, redirects, seconds, first = current.event_hooks, current.follow_redirects, FIRST_BYTES_S, FIRST_BYTES
    set_client_factory(lambda: FirstBytesClient(event_hooks=hooks, follow_redirects=redirects, timeout=None,
                                                transport=FirstBytesTransport(seconds, first)))
