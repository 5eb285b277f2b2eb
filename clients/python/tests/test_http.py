# SPDX-License-Identifier: Apache-2.0
"""The library's HTTP/1.1 connection (tenq._http) on answers tenq does not
send but a proxy in between may: chunked bodies, a body that ends with the
connection, an interim 100 answer, repeated headers; and a server that
closes an idle kept connection. A real socket server in a thread answers
with fixed bytes and records what it read."""

from __future__ import annotations

import socket
import threading
from typing import List

import pytest

from tenq._http import Connection, RemoteDisconnected

CLOSE = b"<close>"  # an answer ending so: the server closes the connection after it


class RawServer:
    def __init__(self, answers: List[bytes]) -> None:
        self.answers = list(answers)
        self.seen: List[bytes] = []
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(4)
        self.port = self.ls.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with self.ls:
            while self.answers:
                conn, _ = self.ls.accept()
                with conn:
                    while self.answers:
                        data = b""
                        while b"\r\n\r\n" not in data:
                            more = conn.recv(65536)
                            if not more:
                                break
                            data += more
                        if not data:
                            break
                        self.seen.append(data)
                        ans = self.answers.pop(0)
                        conn.sendall(ans[: -len(CLOSE)] if ans.endswith(CLOSE) else ans)
                        if ans.endswith(CLOSE):
                            break

    def connect(self) -> Connection:
        c = Connection("127.0.0.1", self.port, 5.0)
        c.connect()
        return c


def test_keep_alive_chunked_interim_and_to_the_end() -> None:
    srv = RawServer([
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n"
        b'{"a":1}',
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n"
        b'X-Two: a\r\nX-Two: b\r\n\r\n3\r\n{"b\r\n4;ext=1\r\n":2}\r\n0\r\nTrailer: x\r\n\r\n',
        b"HTTP/1.0 200 OK\r\n\r\nto the end" + CLOSE,
    ])
    c = srv.connect()
    c.request("POST", "/v1/x", b"{}", {"Content-Type": "application/json"})
    assert c.response("POST") == (
        200, {"content-type": "application/json", "content-length": "7"}, b'{"a":1}', False)
    c.request("GET", "/v1/y?z=1", None, {})
    status, headers, body, close = c.response("GET")
    assert (status, body, close, headers["x-two"]) == (201, b'{"b":2}', False, "a, b")
    c.request("GET", "/old", None, {})
    assert c.response("GET")[2:] == (b"to the end", True)
    c.close()
    srv.thread.join(5)
    assert len(srv.seen) == 3  # one connection, kept for all three
    assert srv.seen[0].startswith(b"POST /v1/x HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nContent-Length: 2\r\n" in srv.seen[0] and srv.seen[0].endswith(b"\r\n\r\n{}")
    assert srv.seen[1].startswith(b"GET /v1/y?z=1 HTTP/1.1\r\n")
    assert b"Content-Length" not in srv.seen[1]


def test_a_closed_idle_connection_is_told_apart() -> None:
    srv = RawServer([b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" + CLOSE])
    c = srv.connect()
    c.request("GET", "/a", None, {})
    assert c.response("GET") == (200, {"content-length": "0"}, b"", False)
    srv.thread.join(5)
    # the server closed the kept connection: no byte of an answer comes, which
    # the transport takes as "send it again on a new connection"
    try:
        c.request("GET", "/b", None, {})
    except OSError:
        return  # the send already failed: as good
    with pytest.raises(RemoteDisconnected):
        c.response("GET")
