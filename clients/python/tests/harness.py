# SPDX-License-Identifier: Apache-2.0
"""The client suite's layer over the repository's test harness
(tests/lib/harness.py, loaded here as ``tenq_test_harness``), which starts,
waits for, stops, kills, pauses and restarts real servers and owns the
facts every Python suite shares (store URLs, TLS certificates, clocks off by
libfaketime, metrics, waiting). What is the client suite's own: ``Server``
in its shape (a folder, started by ``start()``, ``url`` a property, the
snapshot binary by default), the rule that a test needing PostgreSQL
skips but fails when CI is set, a proxy that loses answers, and a worker
of the library."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import threading
from typing import Any, Callable, Dict, List, NoReturn, Optional

import pytest

import tenq

_LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "lib")


def _load_core() -> Any:
    path = os.path.join(_LIB, "harness.py")
    spec = importlib.util.spec_from_file_location("tenq_test_harness", path)
    if not os.path.isfile(path) or spec is None or spec.loader is None:
        raise RuntimeError(f"no {path}: the suite runs from a checkout of the repository")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


core: Any = sys.modules.get("tenq_test_harness") or _load_core()
_CoreServer: Any = core.Server
free_port: Callable[[], int] = core.free_port
clock_off: Callable[[int], Dict[str, str]] = core.clock_off
until: Callable[..., None] = core.until
certs: Callable[..., None] = core.certs
cert_pair: Callable[[str, str], Any] = core.cert_pair

TENQ_BIN = os.environ.get("TENQ_BIN") or "/opt/tenq-snapshot/tenq"


class Server(_CoreServer):  # type: ignore[misc]
    """One ``tenq serve`` in ``dir`` (its files NAME.log and NAME.port),
    started by ``start()``; ``store`` defaults to a SQLite file in ``dir``.
    A later start, and ``restart()``, keep the port of the first."""

    def __init__(
        self,
        dir: str,
        *,
        store: Optional[str] = None,
        args: Optional[List[str]] = None,
        env: Optional[Dict[str, str]] = None,
        name: str = "tenq",
    ) -> None:
        super().__init__(store_url=store or core.sqlite_url(dir),
                         args=["--log-level", "warn"] + list(args or []), env=env, tmp=dir,
                         name=name, bin=TENQ_BIN, start=False)
        self.dir = dir

    @property
    def store(self) -> str:
        return str(self.store_url)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, wait_ready: bool = True) -> "Server":
        self.listen_port = self.port or 0
        super().start(wait=wait_ready)
        return self

    def stop(self) -> None:
        """SIGTERM; SIGKILL when it is not gone in 10 s."""
        try:
            super().stop(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()

    def log(self) -> str:
        return str(self.log_text())


def requests_served(server: Server) -> int:
    """The server's count of HTTP requests (GET /metrics)."""
    return int(server.metric("tenq_http_requests_total"))


def need(what: str) -> NoReturn:
    """A test that cannot run here (no PostgreSQL, no psycopg): skipped,
    but a failure when CI is set."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} (CI is set: this is a failure, not a skip)")
    pytest.skip(what)


def pg_database() -> str:
    """The URL of a fresh database on the suite's PostgreSQL
    ($TENQ_TEST_PG_URL, which tests/with-pg.sh sets), or need()."""
    if not os.environ.get("TENQ_TEST_PG_URL"):
        need("needs TENQ_TEST_PG_URL (run the suite under tests/with-pg.sh)")
    return str(core.pg_url_for_new_database())


class DroppingProxy:
    """A TCP relay in front of a server that, for the next ``drop``
    requests, passes the request on but closes the client's connection
    instead of relaying the answer: the answer is lost, as when a network
    breaks after the server acted. ``on_drop`` runs before the connection
    is closed (e.g. to restart the server). ``keys`` records the
    Idempotency-Key header of each request (None when it had none)."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream = upstream_port
        self.drop = 0
        self.requests = 0
        self.connections = 0
        self.keys: List[Optional[str]] = []
        self.on_drop: Optional[Callable[[], None]] = None
        self._lock = threading.Lock()
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        """One request at a time on a connection: read a whole request,
        relay it, and relay (or drop) its answer."""
        try:
            up = socket.create_connection(("127.0.0.1", self.upstream))
        except OSError:
            client.close()
            return
        try:
            while True:
                req = _read_message(client)
                if req is None:
                    return
                with self._lock:
                    self.requests += 1
                    self.keys.append(_header(req, b"idempotency-key"))
                    dropping = self.drop > 0
                    if dropping:
                        self.drop -= 1
                up.sendall(req)
                ans = _read_message(up)
                if ans is None:
                    return
                if dropping:
                    if self.on_drop is not None:
                        self.on_drop()
                    return  # the answer is lost
                client.sendall(ans)
        except OSError:
            return
        finally:
            client.close()
            up.close()


def _header(message: bytes, name: bytes) -> Optional[str]:
    head = message.partition(b"\r\n\r\n")[0]
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip().decode()
    return None


def _read_message(s: socket.socket) -> Optional[bytes]:
    """One HTTP/1.1 message with a Content-Length body (what the library and
    the server send); None at EOF."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = s.recv(65536)
        if not chunk:
            return None
        rest += chunk
    return head + b"\r\n\r\n" + rest[:length]


def worker_for(client: tenq.Client, queue: str, reg: tenq.Registry, **kw: Any) -> tenq.Worker:
    """A worker of queue with reg's handlers (polls every 2 s unless told)."""
    kw.setdefault("poll", 2)
    return tenq.Worker(client, queues=[queue], handlers=reg, **kw)
