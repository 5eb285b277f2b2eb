# SPDX-License-Identifier: Apache-2.0
"""Requests to tenq servers for the asyncio client: keep-alive HTTP/1.1
connections on asyncio streams (standard library only), in a pool per
server, with the same failover, leader following and rules of what is sent
again as the sync transport (_transport.py: ``Failover`` is shared).

One AsyncTransport belongs to the event loop it was first used on."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from tenq._http import (
    BadResponse,
    RemoteDisconnected,
    add_header,
    body_kind,
    chunk_size,
    encode_request,
    host_header,
    parse_status,
)
from tenq._transport import Failover, Pool, _Answer, _Request, _Unreached, _why, broken

# The longest line of an answer's head.
_MAX_LINE = 65536
# What says a wait ran out here.
_TIMEOUTS = (asyncio.TimeoutError,)


class AsyncConnection:
    """``connect``, then ``request`` and ``response`` in turn; ``close``
    when a request failed or the server said it closes."""

    def __init__(self, host: str, port: int, tls: Optional[ssl.SSLContext]) -> None:
        self.host = host
        self.port = port
        self.tls = tls
        self.reader: Optional[asyncio.StreamReader] = None
        self.writer: Optional[asyncio.StreamWriter] = None
        self._host_header = host_header(host, port, tls is not None)

    @property
    def open(self) -> bool:
        return self.writer is not None and not self.writer.is_closing()

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(
            self.host, self.port, ssl=self.tls, limit=_MAX_LINE
        )

    def close(self) -> None:
        w, self.writer, self.reader = self.writer, None, None
        if w is not None:
            w.close()

    async def request(
        self, method: str, path: str, body: Optional[bytes], headers: Mapping[str, str]
    ) -> None:
        """Sends the request whole (OSError when it could not)."""
        w = self.writer
        if w is None:
            raise ConnectionError("not connected")
        for data in encode_request(method, path, self._host_header, headers, body):
            w.write(data)
        await w.drain()

    async def response(self, method: str) -> Tuple[int, Dict[str, str], bytes, bool]:
        """The answer: status, headers (names in lower case), body, and
        whether the server closes the connection after it."""
        r = self.reader
        if r is None:
            raise ConnectionError("not connected")
        while True:
            version, status = parse_status(await self._line(r))
            headers: Dict[str, str] = {}
            while True:
                h = await self._line(r)
                if h in (b"\r\n", b"\n"):
                    break
                add_header(headers, h)
            if not 100 <= status < 200:  # an interim answer: the real one follows
                break
        kind, n, will_close = body_kind(method, version, status, headers)
        if kind == "none":
            return status, headers, b"", will_close
        if kind == "rest":
            return status, headers, await r.read(), True
        if kind == "chunked":
            parts: List[bytes] = []
            while True:
                size = chunk_size(await self._line(r))
                if size == 0:
                    while (await self._line(r)) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return status, headers, b"".join(parts), will_close
                parts.append(await self._exactly(r, size))
                await self._line(r)  # the CRLF after the chunk
        return status, headers, await self._exactly(r, n), will_close

    @staticmethod
    async def _line(r: asyncio.StreamReader) -> bytes:
        try:
            return await r.readuntil(b"\n")
        except asyncio.IncompleteReadError as e:
            return e.partial  # what came before the end (b"": nothing)
        except asyncio.LimitOverrunError:
            raise BadResponse("a header line is too long") from None

    @staticmethod
    async def _exactly(r: asyncio.StreamReader, n: int) -> bytes:
        try:
            return await r.readexactly(n)
        except asyncio.IncompleteReadError as e:
            raise BadResponse(
                f"the connection closed after {len(e.partial)} of {n} bytes"
            ) from None


class AsyncTransport(Pool[AsyncConnection]):
    """Each request takes a connection from the pool (or opens one) and
    gives it back after the answer; any number of coroutines at once."""

    # most idle connections kept per server (many coroutines share a client)
    max_idle = 64

    def __init__(
        self,
        servers: Sequence[str],
        token: Optional[str],
        connect_timeout: float,
        request_timeout: float,
        failover_budget: float,
        max_connections: int,
        ca_file: Optional[str] = None,
        cert_file: Optional[str] = None,
        key_file: Optional[str] = None,
    ) -> None:
        super().__init__(
            servers, token, connect_timeout, request_timeout, failover_budget,
            ca_file, cert_file, key_file,
        )
        self.max_connections = max(1, max_connections)
        # a request waits for one of a server's max_connections (a long poll holds one)
        self._slots: Dict[str, asyncio.Semaphore] = {}

    def _checkout(self, base: str) -> Tuple[AsyncConnection, bool]:
        pool = self._idle.get(base)
        while pool:
            conn = pool.pop()
            if conn.open:
                return conn, True
            conn.close()
        host, port, tls = self._endpoint(base)
        return AsyncConnection(host, port, tls), False

    def _slot(self, base: str) -> asyncio.Semaphore:
        """One of the server's max_connections, for a request to wait for."""
        slots = self._slots.get(base)
        if slots is None:
            slots = self._slots[base] = asyncio.Semaphore(self.max_connections)
        return slots

    async def _exchange(self, base: str, req: _Request) -> _Answer:
        conn, reused = self._checkout(base)
        while True:
            if not conn.open:
                try:
                    await asyncio.wait_for(conn.connect(), self.connect_timeout)
                except (OSError, asyncio.TimeoutError) as e:
                    conn.close()
                    raise _Unreached(f"{base} ({_why(e, _TIMEOUTS)})") from None
                reused = False
            try:
                await asyncio.wait_for(
                    conn.request(req.method, req.path, req.body, req.headers), req.timeout
                )
            except (OSError, asyncio.TimeoutError) as e:
                # not sent whole: the server cannot have acted on it
                conn.close()
                if reused:
                    reused = False
                    continue
                raise _Unreached(f"{base} ({_why(e, _TIMEOUTS)})") from None
            try:
                status, hdrs, data, will_close = await asyncio.wait_for(
                    conn.response(req.method), req.timeout
                )
            except RemoteDisconnected:
                conn.close()
                # no byte came back: on a kept connection, the server had
                # closed it while idle (it closes idle ones only)
                if reused:
                    reused = False
                    continue
                raise broken(base, req, None) from None
            except (OSError, BadResponse, asyncio.TimeoutError) as e:
                conn.close()
                timed_out = isinstance(e, asyncio.TimeoutError)
                raise broken(base, req, _why(e, _TIMEOUTS), timed_out) from None
            except BaseException:
                conn.close()  # cancelled mid-answer: the connection is in no state to reuse
                raise
            self._checkin(base, conn, will_close)
            return _Answer(status, hdrs, data)

    async def request(
        self, method: str, path: str, body: Optional[bytes] = None, *, safe: bool,
        wait: float = 0.0,
    ) -> Any:
        """The parsed answer of a 2xx, else its typed error (see send)."""
        return (await self.send(method, path, body, safe=safe, wait=wait))[0]

    async def send(
        self,
        method: str,
        path: str,
        body: Optional[bytes] = None,
        *,
        safe: bool,
        wait: float = 0.0,
        headers: Optional[Mapping[str, str]] = None,
    ) -> Tuple[Any, Dict[str, str]]:
        """Sends ``method path`` (a JSON body or none), with ``headers`` added
        to every copy sent (to any server); the parsed answer of a 2xx and
        its headers, or the typed error of any other answer, or ConnectError
        when no server answered within the failover budget. ``wait`` is a
        long poll's length, added to the request timeout."""
        req = self._request(method, path, body, safe, wait, headers)
        round = Failover(self, self.failover_budget, False)
        while True:
            base = self.current
            try:
                async with self._slot(base):
                    ans = await self._exchange(base, req)
            except _Unreached as e:
                pause = round.unreached(base, str(e))
            else:
                done, pause = round.answered(base, ans)
                if done is not None:
                    return done
            if pause:
                await asyncio.sleep(pause)

