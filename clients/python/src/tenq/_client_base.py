# SPDX-License-Identifier: Apache-2.0
"""What the sync Client and the AsyncClient share beyond the bodies they
submit (_shaping.py): their settings from the environment, the servers
they know, what they make of the server's answers, and the steps of
``wait``'s loop. No I/O here: each client sends, sleeps and waits its own
way (threads, asyncio) around these."""

from __future__ import annotations

import os
import time
from typing import Any, Dict, Generic, List, Optional, Protocol, Sequence, Tuple, TypeVar

from tenq import _mode
from tenq._backpressure import check_budget
from tenq._keys import RequestKeys
from tenq._shaping import SubmitHook, TraceHook, _Shaper
from tenq._work_api import dumps
from tenq.errors import InvalidError, NotFoundError, ProtocolError, TenqError
from tenq.jobs import CancelResult, Handle, Job

# An early answer to a wait we did not ask for is not followed at once.
_WAIT_PAUSE = 0.1
# How long ``wait`` takes "not found" for a job made in a transaction (an odd
# id: tenq.tx) as "not taken in yet": the leader takes committed jobs in
# within milliseconds (a lost notification: at its next --inbox-poll, 1 s);
# a job whose transaction rolled back never appears. (Node's client: the same.)
TX_TAKE_IN = 5.0
_TX_LOOK_AGAIN = 0.02


class _Known(Protocol):
    """What a client reads of its transport."""

    @property
    def servers(self) -> List[str]: ...

    @property
    def current(self) -> str: ...

    @property
    def failover_budget(self) -> float: ...


T = TypeVar("T", bound=_Known)


def client_env(
    token: Optional[str],
    ca_file: Optional[str],
    client_cert: Optional[str],
    client_key: Optional[str],
) -> Tuple[Optional[str], Optional[str], Optional[str], Optional[str]]:
    """A client's token and TLS files (CA, certificate, key): those given,
    else TENQ_TOKEN (when the token is None), TENQ_CA_FILE,
    TENQ_CLIENT_CERT and TENQ_CLIENT_KEY."""
    env = os.environ.get
    if token is None:
        token = env("TENQ_TOKEN") or None
    return (
        token,
        ca_file or env("TENQ_CA_FILE") or None,
        client_cert or env("TENQ_CLIENT_CERT") or None,
        client_key or env("TENQ_CLIENT_KEY") or None,
    )


class ClientBase(_Shaper, Generic[T]):
    """A client's transport (``_t``), the defaults and hooks of its
    submits, its request keys and its ``backpressure_budget``."""

    _t: T
    backpressure_budget: float

    def _settings(
        self,
        backpressure_budget: float,
        tenant: Optional[str],
        queue: Optional[str],
        trace: Optional[TraceHook],
        on_submit: Sequence[SubmitHook],
    ) -> None:
        self.backpressure_budget = check_budget(backpressure_budget)
        self.tenant = tenant
        self.queue = queue
        self.trace = trace
        self.on_submit = list(on_submit)
        self._keys = RequestKeys()

    def _test_mode_submit(self, body: Dict[str, Any]) -> Optional[Handle[Any]]:
        """The handle of a job the test mode that is on (tenq.testing) took
        in place of a server (its refusal raised), or None: no mode is on."""
        sink = _mode.active()
        if sink is None:
            return None
        out = sink.submit([body])[0]
        if isinstance(out, TenqError):
            raise out
        return out

    @property
    def failover_budget(self) -> float:
        """Seconds a request keeps trying servers before ConnectError."""
        return self._t.failover_budget

    @property
    def servers(self) -> List[str]:
        """The servers known, the leaders named by standbys included."""
        return self._t.servers

    @property
    def current_server(self) -> str:
        """The server tried first: the one that answered last."""
        return self._t.current


def cancel_result(ans: Any, job_id: int) -> CancelResult:
    """What a cancel's answer says (ProtocolError when it is not one)."""
    if not isinstance(ans, dict):
        raise ProtocolError("the cancel answer is not a JSON object")
    return CancelResult(
        int(ans.get("id", job_id)), str(ans.get("state")), ans.get("cancel_requested") is True
    )


def any_request(method: str, path: str, body: Any) -> Tuple[str, Optional[bytes], bool]:
    """``request``'s method, its body as JSON and whether it may be sent
    again after a connection broke (GET and HEAD only); InvalidError for a
    path that is not one."""
    if not path.startswith("/") or any(c in path for c in " \r\n"):
        raise InvalidError("a path starts with / and has no spaces", field="path")
    m = method.upper()
    return m, None if body is None else dumps(body), m in ("GET", "HEAD")


class WaitLoop:
    """``wait``'s steps, for both clients: ``poll`` gives the next long poll
    to send; after its answer (``answered``) or its 404 (``not_found``),
    ``job`` is the job to return once there is one, and ``pause`` the
    seconds to sleep before the next poll. A merged job is followed to the
    job that took its payload; a 404 of a job of a transaction (an odd id)
    is looked for again for up to ``TX_TAKE_IN`` seconds."""

    def __init__(self, job_id: int, timeout: float) -> None:
        self.first = int(job_id)
        self.start = time.monotonic()
        self.end = self.start + max(0.0, timeout)
        self.seen = {self.first}
        self.current = self.first
        self.sent = self.start
        self.job: Optional[Job] = None
        self.pause = 0.0

    def poll(self) -> Tuple[str, float]:
        """The path of the next long poll, and how long it may wait."""
        self.sent = time.monotonic()
        self.pause = 0.0
        left = max(0.0, self.end - self.sent)
        return f"/v1/jobs/{self.current}/wait?timeout_ms={int(left * 1000)}", left

    def answered(self, ans: Any) -> None:
        job = Job.from_json(ans)
        if job.state == "merged" and job.merged_into and job.merged_into not in self.seen:
            self.seen.add(job.merged_into)
            self.current = job.merged_into
            return
        now = time.monotonic()
        if job.finished or now >= self.end:
            self.job = job
        elif now - self.sent < _WAIT_PAUSE:
            self.pause = min(_WAIT_PAUSE, self.end - now)

    def not_found(self, e: NotFoundError) -> None:
        """Raises ``e`` unless the job may be one of a transaction that the
        server has not taken in yet: the id waited for is odd, and neither
        the take-in window nor the wait's own time is over."""
        now = time.monotonic()
        first = self.first
        if not (
            self.current == first
            and first % 2 == 1
            and now - self.start < TX_TAKE_IN
            and now < self.end
        ):
            raise e
        self.pause = _TX_LOOK_AGAIN
