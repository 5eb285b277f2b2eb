# SPDX-License-Identifier: Apache-2.0
"""Requests to tenq servers: keep-alive HTTP/1.1 connections in a small
pool, failover between servers, following the leader, and sending a
request again only when that is safe.

What is safe to send again after a connection broke in the middle of a
request: reads (GET), submits (each carries an ``Idempotency-Key`` header,
the same on every copy: the server answers a copy with the first answer),
start/heartbeat/ack/fail/outcomes (fenced by their lease token) and cancel;
the caller says which by ``safe``. A request that never reached a server (no
connection, or the send failed) and an answer 503 (which changed nothing)
are always sent again, to the next server, until the failover budget runs
out.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from typing import (
    Any,
    Dict,
    Generic,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    Type,
    TypeVar,
)
from urllib.parse import urlsplit

from tenq._http import BadResponse, Connection, RemoteDisconnected
from tenq.errors import (
    ConnectError,
    InvalidError,
    NotLeaderError,
    ProtocolError,
    TenqError,
    TimedOutError,
    TLSError,
    error_from_answer,
)

VERSION = "0.1.0"

# Backoff between rounds over every server: 50 ms doubling to 1 s.
_BACKOFF_FIRST = 0.05
_BACKOFF_MAX = 1.0
# Most idle connections kept per server.
_MAX_IDLE = 8


def normalize_server(url: str) -> str:
    """``scheme://host:port`` of a server URL (the port defaults to 80 or
    443); InvalidError naming ``servers`` when it is not one."""
    text = url.strip().rstrip("/")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as e:
        raise InvalidError(f'bad server URL "{url}": {e}', field="servers") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidError(
            f'bad server URL "{url}": want http://host:port', field="servers"
        )
    if parts.path or parts.query:
        raise InvalidError(
            f'bad server URL "{url}": a base URL has no path', field="servers"
        )
    host = parts.hostname
    if ":" in host:
        host = f"[{host}]"
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return f"{parts.scheme}://{host}:{port}"


class _Unreached(Exception):
    """The request did not get an answer from this server and may be sent
    to another (it never arrived, or it is safe to send again)."""


class _Request(NamedTuple):
    """A request as it is sent to any server: ``safe``, whether it may be
    sent again after its connection broke; ``timeout``, the seconds its
    answer may take."""

    method: str
    path: str
    body: Optional[bytes]
    headers: Mapping[str, str]
    safe: bool
    timeout: float


class _Answer:
    __slots__ = ("status", "headers", "data")

    def __init__(self, status: int, headers: Dict[str, str], data: bytes) -> None:
        self.status = status
        self.headers = headers
        self.data = data


def _parse(data: bytes, headers: Dict[str, str]) -> Any:
    if not data:
        return None
    if "json" not in headers.get("content-type", "json"):
        return data.decode("utf-8", "replace")
    try:
        return json.loads(data)
    except ValueError:
        raise ProtocolError(
            "the server's answer is not JSON: " + data[:200].decode("utf-8", "replace")
        ) from None


def _retry_after(headers: Dict[str, str]) -> Optional[float]:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class Servers:
    """The servers a client knows (the leaders named by standbys added) and
    the one tried first; thread-safe."""

    def __init__(self, servers: Sequence[str]) -> None:
        if not servers:
            raise InvalidError("no server URL", field="servers")
        self._servers: List[str] = []
        for s in servers:
            base = normalize_server(s)
            if base not in self._servers:
                self._servers.append(base)
        self._lock = threading.Lock()
        self._cur = 0

    @property
    def servers(self) -> List[str]:
        with self._lock:
            return list(self._servers)

    @property
    def current(self) -> str:
        """The server tried first: the one that answered last."""
        with self._lock:
            return self._servers[self._cur]

    def _use(self, base: str) -> None:
        with self._lock:
            if base not in self._servers:
                self._servers.append(base)
            self._cur = self._servers.index(base)

    def _next_after(self, base: str) -> None:
        with self._lock:
            if self._servers[self._cur] == base:
                self._cur = (self._cur + 1) % len(self._servers)

    def _answered(self, base: str) -> None:
        with self._lock:
            if base in self._servers:
                self._cur = self._servers.index(base)

    def _count(self) -> int:
        with self._lock:
            return len(self._servers)


class Failover:
    """What one request does after each try, for the sync and the asyncio
    transports alike: follow a standby to the leader it names (307, 503
    not_leader), try the next server at once after a connection error or a
    503, and after a whole round of them pause (50 ms doubling to 1 s, or
    the Retry-After) until ``budget`` seconds after the first failure; then
    raise the last error (ConnectError when no server answered)."""

    def __init__(self, servers: Servers, budget: float, raw: bool) -> None:
        self.servers = servers
        self.budget = budget
        self.raw = raw
        self.deadline: Optional[float] = None
        self.delay = _BACKOFF_FIRST
        self.tried_in_round = 0
        self.hops = 0
        self.why: List[str] = []

    def answered(
        self, base: str, ans: _Answer
    ) -> Tuple[Optional[Tuple[Any, Dict[str, str]]], float]:
        """An answer of ``base``: (the parsed answer and its headers, 0) when
        it is the request's, (None, pause) to send it again after ``pause``
        seconds (0: at once); raises the typed error of a refusal."""
        leader = leader_of(ans)
        if ans.status == 503 and leader == base:
            leader = None  # the leader itself, unsure of its leadership: wait
        if ans.status == 307 or (ans.status == 503 and leader):
            if leader is None:
                raise ProtocolError(f"{base} redirected without naming the leader")
            self.hops += 1
            self.servers._use(leader)
            if self.hops <= 2 * self.servers._count():
                return None, 0.0
            failure: TenqError = NotLeaderError(
                f"the servers keep naming other leaders (last: {leader})",
                status=ans.status,
                leader=leader,
            )
            return None, self._failed(base, failure)
        if ans.status == 503:
            err = error_from_answer(503, _parse_quietly(ans), _retry_after(ans.headers))
            self.why.append(f"{base} ({err})")
            return None, self._failed(base, err)
        self.servers._answered(base)
        if self.raw and 200 <= ans.status < 300:
            return (ans.data, ans.headers), 0.0
        parsed = _parse(ans.data, ans.headers)
        if 200 <= ans.status < 300:
            return (parsed, ans.headers), 0.0
        raise error_from_answer(ans.status, parsed, _retry_after(ans.headers))

    def unreached(self, base: str, why: str) -> float:
        """``base`` did not answer: the pause before the next try."""
        self.why.append(why)
        return self._failed(base, None)

    def _failed(self, base: str, failure: Optional[TenqError]) -> float:
        now = time.monotonic()
        if self.deadline is None:
            self.deadline = now + self.budget
        self.servers._next_after(base)
        self.tried_in_round += 1
        if self.tried_in_round < self.servers._count() and now < self.deadline:
            return 0.0  # another server at once
        self.tried_in_round = 0
        pause = self.delay
        if failure is not None and failure.retry_after is not None:
            pause = max(pause, failure.retry_after)
        if now >= self.deadline:
            raise failure or ConnectError(_no_server(self.why, self.budget))
        self.delay = min(self.delay * 2, _BACKOFF_MAX)
        return max(min(pause, self.deadline - now), 1e-6)


def leader_of(ans: _Answer) -> Optional[str]:
    """The leader a standby named: ``Tenq-Leader``, else the base of
    ``Location`` (307), else the ``leader`` of a not_leader error."""
    named = ans.headers.get("tenq-leader")
    if not named and ans.status == 307:
        loc = ans.headers.get("location", "")
        parts = urlsplit(loc)
        if parts.scheme and parts.netloc:
            named = f"{parts.scheme}://{parts.netloc}"
    if not named and ans.status == 503:
        err = error_from_answer(503, _parse_quietly(ans))
        named = err.leader if isinstance(err, NotLeaderError) else None
    if not named:
        return None
    try:
        return normalize_server(named)
    except InvalidError:
        raise ProtocolError(f'the server named a bad leader URL "{named}"') from None


def base_headers(token: Optional[str]) -> Dict[str, str]:
    """The headers of every request; InvalidError for a token that would
    break the header."""
    if token is not None and ("\r" in token or "\n" in token):
        raise InvalidError("the token holds a line break", field="token")
    headers = {
        "User-Agent": f"tenq-python/{VERSION}",
        "Accept": "application/json",
    }
    if token:
        headers["Authorization"] = "Bearer " + token
    return headers


class _Closes(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closes)


class Pool(Servers, Generic[C]):
    """What the sync and the asyncio transports keep alike: the headers of
    every request, the timeouts, the TLS context, and per server a pool of
    idle connections (at most ``max_idle``)."""

    max_idle = _MAX_IDLE

    def __init__(
        self,
        servers: Sequence[str],
        token: Optional[str],
        connect_timeout: float,
        request_timeout: float,
        failover_budget: float,
        ca_file: Optional[str] = None,
        cert_file: Optional[str] = None,
        key_file: Optional[str] = None,
    ) -> None:
        super().__init__(servers)
        self._headers = base_headers(token)
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.failover_budget = failover_budget
        self._idle: Dict[str, List[C]] = {}
        # requests in flight, with when they began (the sync transport's:
        # ``interrupt`` cuts them)
        self._busy: Dict[int, Tuple[C, float]] = {}
        self.ca_file, self.cert_file, self.key_file = ca_file, cert_file, key_file
        self._tls: Optional[ssl.SSLContext] = None
        if ca_file or cert_file or key_file:
            self._tls = tls_context(ca_file, cert_file, key_file)  # a bad file: told now
        self._interrupted = False

    def _endpoint(self, base: str) -> Tuple[str, int, Optional[ssl.SSLContext]]:
        """The host, port and TLS context (https only) of a server."""
        scheme, rest = base.split("://", 1)
        host, _, port = rest.rpartition(":")
        tls = None
        if scheme == "https":
            if self._tls is None:
                self._tls = tls_context(None, None, None)
            tls = self._tls
        return host.strip("[]"), int(port), tls

    def _request(
        self,
        method: str,
        path: str,
        body: Optional[bytes],
        safe: bool,
        wait: float,
        extra: Optional[Mapping[str, str]],
    ) -> _Request:
        """A request to send: with every request's headers, a body's type
        and ``extra``; its timeout is the request timeout and ``wait``, a
        long poll's length."""
        headers = self._headers
        if body is not None or extra:
            headers = dict(headers)
            if body is not None:
                headers["Content-Type"] = "application/json"
            if extra:
                headers.update(extra)
        return _Request(method, path, body, headers, safe, self.request_timeout + max(0.0, wait))

    def _checkin(self, base: str, conn: C, will_close: bool) -> None:
        """After an answer: the connection back to the pool, or closed when
        the server closes it (or the pool is full)."""
        if not will_close:
            with self._lock:
                pool = self._idle.setdefault(base, [])
                if len(pool) < self.max_idle and not self._interrupted:
                    pool.append(conn)
                    return
        conn.close()

    def close(self) -> None:
        """Closes every idle connection (the transport stays usable)."""
        with self._lock:
            pools = list(self._idle.values())
            self._idle = {}
        for pool in pools:
            for conn in pool:
                conn.close()


class Transport(Pool[Connection]):
    """Thread-safe: each request takes a connection from the pool (or opens
    one) and gives it back after the answer."""

    # ---- connections ---------------------------------------------------------------------

    def _checkout(self, base: str) -> Tuple[Connection, bool]:
        with self._lock:
            pool = self._idle.get(base)
            if pool:
                return pool.pop(), True
        host, port, tls = self._endpoint(base)
        return Connection(host, port, self.connect_timeout, tls), False

    def interrupt(self, min_age: float = 0.0) -> bool:
        """Stops this transport: no request is sent again, and requests in
        flight for at least ``min_age`` seconds are cut (their socket shut
        down). True when every request in flight was cut (or none was)."""
        now = time.monotonic()
        all_cut = True
        with self._lock:
            self._interrupted = True
            busy = list(self._busy.values())
        for conn, began in busy:
            if now - began < min_age:
                all_cut = False
                continue
            sock = conn.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        return all_cut

    # ---- one exchange --------------------------------------------------------------------

    def _exchange(self, base: str, req: _Request) -> _Answer:
        conn, reused = self._checkout(base)
        while True:
            if conn.sock is None:
                try:
                    conn.connect()
                except ssl.SSLError as e:
                    # a certificate refused, either way: not cured by trying again
                    conn.close()
                    raise TLSError(f"TLS with {base} failed: {_why(e)}") from None
                except OSError as e:
                    conn.close()
                    raise _Unreached(f"{base} ({_why(e)})") from None
                reused = False
            sock = conn.sock
            assert sock is not None
            sock.settimeout(req.timeout)
            key = id(conn)
            with self._lock:
                self._busy[key] = (conn, time.monotonic())
            try:
                try:
                    conn.request(req.method, req.path, body=req.body, headers=req.headers)
                except OSError as e:
                    # not sent whole: the server cannot have acted on it
                    conn.close()
                    if reused and not self._interrupted:
                        reused = False
                        continue
                    raise _Unreached(f"{base} ({_why(e)})") from None
                try:
                    status, hdrs, data, will_close = conn.response(req.method)
                except RemoteDisconnected:
                    conn.close()
                    if self._interrupted:
                        raise ConnectError("interrupted") from None
                    # no byte came back: on a kept connection, the server had
                    # closed it while idle (it closes idle ones only)
                    if reused:
                        reused = False
                        continue
                    raise broken(base, req, None) from None
                except (OSError, BadResponse) as e:
                    conn.close()
                    if self._interrupted:
                        raise ConnectError("interrupted") from None
                    if isinstance(e, ssl.SSLError) and "ALERT" in str(e.reason or ""):
                        # TLS 1.3: a client certificate the server refuses is
                        # told by an alert where the answer was to be
                        raise TLSError(f"{base} refused the TLS connection: {_why(e)}") from None
                    raise broken(base, req, _why(e), isinstance(e, socket.timeout)) from None
            finally:
                with self._lock:
                    self._busy.pop(key, None)
            self._checkin(base, conn, will_close)
            return _Answer(status, hdrs, data)

    # ---- a request, with failover ---------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Optional[bytes] = None,
        *,
        safe: bool,
        wait: float = 0.0,
        raw: bool = False,
    ) -> Any:
        """Sends ``method path`` (a JSON body or none) and returns the parsed
        answer of a 2xx (``raw``: its body, not parsed); raises the typed
        error of any other answer, or ConnectError when no server answered
        within the failover budget. ``wait`` is a long poll's length, added
        to the request timeout."""
        return self.send(method, path, body, safe=safe, wait=wait, raw=raw)[0]

    def send(
        self,
        method: str,
        path: str,
        body: Optional[bytes] = None,
        *,
        safe: bool,
        wait: float = 0.0,
        headers: Optional[Mapping[str, str]] = None,
        raw: bool = False,
    ) -> Tuple[Any, Dict[str, str]]:
        """As ``request``, with ``headers`` added to every copy sent (to any
        server); the parsed answer and its headers (names in lower case)."""
        req = self._request(method, path, body, safe, wait, headers)
        round = Failover(self, self.failover_budget, raw)
        while True:
            if self._interrupted:
                raise ConnectError("interrupted")
            base = self.current
            try:
                ans = self._exchange(base, req)
            except _Unreached as e:
                pause = round.unreached(base, str(e))
            else:
                done, pause = round.answered(base, ans)
                if done is not None:
                    return done
            if pause:
                time.sleep(pause)


def _parse_quietly(ans: _Answer) -> Any:
    try:
        return _parse(ans.data, ans.headers)
    except ProtocolError:
        return None


def tls_context(
    ca_file: Optional[str], cert_file: Optional[str], key_file: Optional[str]
) -> ssl.SSLContext:
    """A context verifying servers against ca_file (None: the system's CAs)
    and presenting a client certificate when cert_file is given; InvalidError
    naming the option when a file cannot be used."""
    if bool(cert_file) != bool(key_file):
        raise InvalidError(
            "a client certificate needs both its certificate and its key file",
            field="client_cert" if key_file else "client_key",
        )
    try:
        ctx = ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as e:
        raise InvalidError(f"the CA file {ca_file}: {_why(e)}", field="ca_file") from None
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file:
        try:
            ctx.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as e:
            raise InvalidError(
                f"the client certificate {cert_file} or its key {key_file}: {_why(e)}",
                field="client_cert",
            ) from None
    return ctx


def broken(base: str, req: _Request, why: Optional[str], timed_out: bool = False) -> Exception:
    """What a request raises when its answer broke off (``why``; None: not a
    byte of it came): _Unreached, to send it again, when that is safe;
    TimedOutError when its timeout passed without an answer; else
    ConnectError: the server may or may not have acted on it."""
    if req.safe:
        return _Unreached(f"{base} ({why or 'the connection broke'})")
    what = f"{req.method} {req.path}"
    if timed_out:
        return TimedOutError(f"no answer from {base} to {what} within {req.timeout:g} s")
    return ConnectError(
        f"lost the connection to {base} during {what}{f' ({why})' if why else ''}: "
        "the server may or may not have acted on it"
    )


def _why(e: BaseException, timeouts: Tuple[Type[BaseException], ...] = (socket.timeout,)) -> str:
    """Why a connection or an exchange failed, in a few words."""
    if isinstance(e, timeouts):
        return "timed out"
    text = getattr(e, "strerror", None) or str(e) or type(e).__name__
    return str(text)


def _no_server(why: List[str], budget: float) -> str:
    seen: List[str] = []
    for w in why:
        if w not in seen:
            seen.append(w)
    return f"no server answered within {budget:g} s: " + "; ".join(seen[-4:])
