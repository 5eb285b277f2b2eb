# SPDX-License-Identifier: Apache-2.0
"""One keep-alive HTTP/1.1 connection, the little of HTTP that tenq's
protocol uses: a request sent in one write, an answer with a
Content-Length (or chunked, or to the end of the connection). The standard
library's http.client parses each answer's headers with the email package,
which cost about 60 µs of CPU a request here, more than the rest of a
request; this reads them with a split."""

from __future__ import annotations

import socket
import ssl
from typing import Dict, List, Mapping, Optional, Tuple

_MAX_LINE = 65536
_MAX_HEADERS = 100
# Bodies up to this size go in the same write as the head.
_JOIN_BODY = 65536
# Bytes asked of one recv (below malloc's mmap threshold: a larger buffer
# would be mapped and unmapped on every call).
_RECV = 65536


class RemoteDisconnected(ConnectionResetError):
    """The server closed the connection before any byte of an answer."""


class BadResponse(Exception):
    """An answer that is not HTTP/1.x as this client reads it."""


def encode_request(
    method: str, path: str, host: str, headers: Mapping[str, str], body: Optional[bytes]
) -> List[bytes]:
    """The request's bytes, in the writes to make: one, or the head and a
    large body apart."""
    lines = [f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n"]
    for name, value in headers.items():
        lines.append(f"{name}: {value}\r\n")
    if body is not None or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body) if body is not None else 0}\r\n")
    lines.append("\r\n")
    head = "".join(lines).encode("latin-1")
    if body and len(body) > _JOIN_BODY:
        return [head, body]
    return [head + body if body else head]


def host_header(host: str, port: int, tls: bool) -> str:
    hostport = f"[{host}]" if ":" in host else host
    return hostport if port == (443 if tls else 80) else f"{hostport}:{port}"


def parse_status(line: bytes) -> Tuple[bytes, int]:
    """The version and status of an answer's first line."""
    if not line:
        raise RemoteDisconnected("the server closed the connection without an answer")
    try:
        version, status_text = line.split(None, 2)[:2]
        status = int(status_text)
    except ValueError:
        raise BadResponse(f"bad status line {line[:80]!r}") from None
    if not version.startswith(b"HTTP/1.") or not 100 <= status <= 999:
        raise BadResponse(f"bad status line {line[:80]!r}")
    return version, status


def add_header(headers: Dict[str, str], h: bytes) -> None:
    """One header line into ``headers`` (names in lower case, repeats
    joined)."""
    if not h:
        raise BadResponse("the connection closed in the answer's headers")
    if len(headers) >= _MAX_HEADERS:
        raise BadResponse("too many headers")
    name, sep, value = h.decode("latin-1").partition(":")
    if not sep:
        raise BadResponse(f"bad header line {h[:80]!r}")
    key = name.strip().lower()
    value = value.strip()
    headers[key] = f"{headers[key]}, {value}" if key in headers else value


def body_kind(
    method: str, version: bytes, status: int, headers: Dict[str, str]
) -> Tuple[str, int, bool]:
    """How the body is to be read (``none``, ``chunked``, ``length`` with its
    length, ``rest``: to the end of the connection) and whether the server
    closes the connection after the answer."""
    conn = headers.get("connection", "").lower()
    will_close = "close" in conn or (version == b"HTTP/1.0" and "keep-alive" not in conn)
    if method == "HEAD" or status in (204, 304):
        return "none", 0, will_close
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return "chunked", 0, will_close
    length = headers.get("content-length")
    if length is None:
        return "rest", 0, True
    try:
        return "length", int(length), will_close
    except ValueError:
        raise BadResponse(f"bad Content-Length {length!r}") from None


def chunk_size(line: bytes) -> int:
    try:
        return int(line.split(b";", 1)[0].strip(), 16)
    except ValueError:
        raise BadResponse(f"bad chunk size {line[:80]!r}") from None


class Connection:
    """``connect``, then ``request`` and ``response`` in turn; ``close``
    when a request failed or the server said it closes."""

    def __init__(
        self, host: str, port: int, timeout: float, tls: Optional[ssl.SSLContext] = None
    ) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self.tls = tls
        self.sock: Optional[socket.socket] = None
        self._buf = b""
        self._host_header = host_header(host, port, tls is not None)

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self._buf = b""

    def close(self) -> None:
        sock, self.sock = self.sock, None
        self._buf = b""
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def request(
        self, method: str, path: str, body: Optional[bytes], headers: Mapping[str, str]
    ) -> None:
        """Sends the request whole (OSError when it could not)."""
        sock = self.sock
        if sock is None:
            raise ConnectionError("not connected")
        for data in encode_request(method, path, self._host_header, headers, body):
            sock.sendall(data)

    def response(self, method: str) -> Tuple[int, Dict[str, str], bytes, bool]:
        """The answer: status, headers (names in lower case), body, and
        whether the server closes the connection after it."""
        version, status = parse_status(self._line())
        headers: Dict[str, str] = {}
        while True:
            h = self._line()
            if h in (b"\r\n", b"\n"):
                break
            add_header(headers, h)
        if 100 <= status < 200:  # an interim answer: the real one follows
            return self.response(method)
        kind, n, will_close = body_kind(method, version, status, headers)
        if kind == "none":
            return status, headers, b"", will_close
        if kind == "chunked":
            return status, headers, self._chunked(), will_close
        if kind == "rest":
            return status, headers, self._rest(), True
        return status, headers, self._exactly(n), will_close

    # ---- reading ---------------------------------------------------------------------------

    def _recv(self) -> bytes:
        sock = self.sock
        if sock is None:
            raise ConnectionError("not connected")
        return sock.recv(_RECV)

    def _line(self) -> bytes:
        buf = self._buf
        while True:
            i = buf.find(b"\n")
            if i >= 0:
                self._buf = buf[i + 1:]
                return buf[: i + 1]
            if len(buf) > _MAX_LINE:
                raise BadResponse("a header line is too long")
            more = self._recv()
            if not more:
                self._buf = b""
                return buf  # what came before the end (b"": nothing)
            buf += more

    def _exactly(self, n: int) -> bytes:
        buf = self._buf
        if len(buf) >= n:
            self._buf = buf[n:]
            return buf[:n]
        parts = [buf]
        have = len(buf)
        while have < n:
            more = self._recv()
            if not more:
                raise BadResponse(f"the connection closed after {have} of {n} bytes")
            parts.append(more)
            have += len(more)
        data = b"".join(parts)
        self._buf = data[n:]
        return data[:n]

    def _chunked(self) -> bytes:
        parts: List[bytes] = []
        while True:
            size = chunk_size(self._line())
            if size == 0:
                while self._line() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            parts.append(self._exactly(size))
            self._line()  # the CRLF after the chunk

    def _rest(self) -> bytes:
        parts = [self._buf]
        self._buf = b""
        while True:
            more = self._recv()
            if not more:
                return b"".join(parts)
            parts.append(more)
