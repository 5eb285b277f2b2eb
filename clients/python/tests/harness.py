# SPDX-License-Identifier: Apache-2.0
"""Real tenq servers for the tests: ``tenq serve`` from $TENQ_BIN (default
/opt/tenq-snapshot/tenq) on a free loopback port, its store in a temporary
folder; killed (SIGKILL), paused (SIGSTOP) and restarted on the same port
and store when a test needs it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import tenq

TENQ_BIN = os.environ.get("TENQ_BIN") or "/opt/tenq-snapshot/tenq"


class Server:
    """One ``tenq serve``. ``store`` defaults to a SQLite file in ``dir``."""

    def __init__(
        self,
        dir: str,
        *,
        store: Optional[str] = None,
        args: Optional[List[str]] = None,
        env: Optional[Dict[str, str]] = None,
        name: str = "tenq",
    ) -> None:
        self.dir = dir
        os.makedirs(dir, exist_ok=True)
        self.store = store or f"sqlite:{os.path.join(dir, 'tenq.db')}"
        self.args = list(args or [])
        self.env = dict(os.environ)
        self.env.update(env or {})
        self.name = name
        self.port = 0
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self._log = os.path.join(dir, f"{name}.log")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, wait_ready: bool = True) -> "Server":
        if not os.access(TENQ_BIN, os.X_OK):
            raise RuntimeError(f"no tenq binary at {TENQ_BIN} (set TENQ_BIN)")
        port_file = os.path.join(self.dir, f"{self.name}.port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        listen = f"127.0.0.1:{self.port}"
        cmd = [TENQ_BIN, "serve", "--store", self.store, "--listen", listen,
               "--port-file", port_file, "--log-level", "warn"] + self.args
        with open(self._log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=self.env,
                                         stdin=subprocess.DEVNULL)
        end = time.monotonic() + 30
        while True:
            try:
                with open(port_file) as f:
                    text = f.read().strip()
                if text:
                    self.port = int(text)
                    break
            except (OSError, ValueError):
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"tenq serve exited {self.proc.returncode}: {self.log()}")
            if time.monotonic() > end:
                raise RuntimeError(f"tenq serve did not start: {self.log()}")
            time.sleep(0.01)
        if wait_ready:
            self.wait_healthy()
        return self

    def wait_healthy(self, timeout: float = 30.0) -> None:
        """Until GET /healthz answers (any status)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    if s.recv(64).startswith(b"HTTP/1.1"):
                        return
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError(f"tenq serve on {self.port} is not healthy: {self.log()}")

    def log(self) -> str:
        try:
            with open(self._log, "rb") as f:
                return f.read()[-2000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL, and wait for it to be gone."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    def pause(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def restart(self) -> None:
        """Killed and started again on the same port and store."""
        self.kill()
        end = time.monotonic() + 20
        while True:
            try:
                self.start()
                return
            except RuntimeError:
                if time.monotonic() > end:
                    raise
                time.sleep(0.2)  # the port is not free yet

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def clock_off(seconds: int) -> Dict[str, str]:
    """The environment of a server whose wall clock is `seconds` off this
    machine's (libfaketime; its monotonic clock is left alone)."""
    import glob

    libs = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))
    if not libs:
        raise RuntimeError("libfaketime is missing: apt-get install faketime")
    asan = os.environ.get("ASAN_OPTIONS", "")
    return {"LD_PRELOAD": libs[0], "FAKETIME": "%+d" % seconds,
            "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_FORCE_MONOTONIC_FIX": "0",
            # ASan (a sanitized TENQ_BIN) wants to be the first library
            "ASAN_OPTIONS": (asan + ":" if asan else "") + "verify_asan_link_order=0"}


def requests_served(server: Server) -> int:
    """The server's count of HTTP requests (GET /metrics)."""
    import urllib.request

    with urllib.request.urlopen(server.url + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("tenq_http_requests_total "):
                return int(line.split()[1])
    raise AssertionError("no tenq_http_requests_total in /metrics")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


def until(cond: Callable[[], bool], timeout: float = 30.0) -> None:
    """Waits until cond() holds; fails after timeout seconds."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def worker_for(client: tenq.Client, queue: str, reg: tenq.Registry, **kw: Any) -> tenq.Worker:
    """A worker of queue with reg's handlers (polls every 2 s unless told)."""
    kw.setdefault("poll", 2)
    return tenq.Worker(client, queues=[queue], handlers=reg, **kw)
