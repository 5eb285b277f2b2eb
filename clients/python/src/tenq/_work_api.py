# SPDX-License-Identifier: Apache-2.0
"""The worker's requests of the protocol (lease, start, heartbeat, ack,
fail, outcomes), as a part of Client."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from tenq._transport import Transport, _parse
from tenq.errors import ProtocolError


def dumps(value: Any) -> bytes:
    """Compact JSON as the server takes it (NaN and infinities refused)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()


# Outcomes as a request carries them: their objects, or their JSON array
# written already (bytes: how a worker sends a batch of plain successes).
Outcomes = Union[Sequence[Mapping[str, Any]], bytes]


class WorkerRequests:
    """What a worker sends; Client has these methods."""

    _t: Transport

    def lease(
        self,
        queues: Sequence[str],
        *,
        max: int = 1,
        wait_ms: int = 0,
        types: Optional[Sequence[str]] = None,
        worker: Optional[str] = None,
        outcomes: Optional[Outcomes] = None,
    ) -> Dict[str, Any]:
        """POST /v1/lease: ``{"jobs": [...], "results": [...]}`` (results of
        the outcomes carried, in order). Not sent again after a connection
        broke mid-request (the jobs it leased come back when their leases
        expire); ConnectError then."""
        body: Dict[str, Any] = {"queues": list(queues), "max": max, "wait_ms": wait_ms}
        if worker is not None:
            body["worker"] = worker
        if types:
            body["types"] = list(types)
        if outcomes and not isinstance(outcomes, bytes):
            body["outcomes"] = list(outcomes)
        data = dumps(body)
        if isinstance(outcomes, bytes):
            data = data[:-1] + b',"outcomes":' + outcomes + b"}"  # the body's last member
        ans = self._t.request("POST", "/v1/lease", data, safe=False, wait=wait_ms / 1000.0)
        if not isinstance(ans, dict) or not isinstance(ans.get("jobs"), list):
            raise ProtocolError("the lease answer holds no jobs")
        return ans

    def start(self, job_id: int, token: int) -> Dict[str, Any]:
        """The handler began: the job is running."""
        return self._post_job(job_id, "start", {"token": token})

    def heartbeat(self, job_id: int, token: int, progress: Any = None) -> Dict[str, Any]:
        """Extends the lease (and records ``progress``, any JSON, when not
        None): ``{"lease_until": ..., "lease_left_ms": ..., "cancel": bool}``
        (``lease_left_ms``: the time the lease has left, on the server's clock)."""
        body: Dict[str, Any] = {"token": token}
        if progress is not None:
            body["progress"] = progress
        return self._post_job(job_id, "heartbeat", body)

    def ack(
        self, job_id: int, token: int, result: Any = None, stats: Any = None
    ) -> Dict[str, Any]:
        """The job succeeded. Sent again (the answer lost), an ack that
        already counted is answered as the first was."""
        body: Dict[str, Any] = {"token": token}
        if result is not None:
            body["result"] = result
        if stats is not None:
            body["stats"] = stats
        return self._post_job(job_id, "ack", body)

    def fail(
        self,
        job_id: int,
        token: int,
        error: Optional[str] = None,
        *,
        retry_in_ms: Optional[int] = None,
        retry: bool = True,
        cancelled: bool = False,
    ) -> Dict[str, Any]:
        """The attempt failed: retried by the queue's backoff, after
        ``retry_in_ms``, or not at all (``retry=False``: to the morgue);
        ``cancelled`` says the worker stopped a cancelled job. Sent again,
        a fail that already counted is answered as the first was."""
        body: Dict[str, Any] = {"token": token}
        if error is not None:
            body["error"] = error
        if retry_in_ms is not None:
            body["retry_in_ms"] = retry_in_ms
        if not retry:
            body["retry"] = False
        if cancelled:
            body["cancelled"] = True
        return self._post_job(job_id, "fail", body)

    def outcomes(self, outcomes: Outcomes) -> List[Dict[str, Any]]:
        """POST /v1/outcomes: acks and fails (up to 10,000), answered in
        order ({"id", "state"} or {"id", "error"}). ``outcomes``: their
        objects, or their JSON array (bytes)."""
        return self._outcomes(outcomes, 0)

    def report_outcomes(self, outcomes: Outcomes, n: int) -> List[Dict[str, Any]]:
        """As ``outcomes`` (``n`` of them), for a worker: [] when the server
        took every one. Such an answer is not parsed: a worker's batches
        run to thousands, and each result a dict made for nothing (and
        counted by Python's garbage collector)."""
        return self._outcomes(outcomes, n)

    def _outcomes(self, outcomes: Outcomes, n: int) -> List[Dict[str, Any]]:
        if isinstance(outcomes, bytes):
            data = b'{"outcomes":' + outcomes + b"}"
        else:
            data = dumps({"outcomes": list(outcomes)})
        raw = self._t.request("POST", "/v1/outcomes", data, safe=True, raw=True)
        if (
            n
            and isinstance(raw, bytes)
            and raw.startswith(b'{"results":[{"id":')
            and b'"error"' not in raw
            and raw.count(b'{"id":') == n
        ):
            return []  # n results, none an error: {"id": ..., "state": ...} each
        ans = _parse(raw, {})  # (a JSON answer: the server's content type)
        results = ans.get("results") if isinstance(ans, dict) else None
        if not isinstance(results, list):
            raise ProtocolError("the outcomes answer holds no results")
        return results

    def _post_job(self, job_id: int, action: str, body: Dict[str, Any]) -> Dict[str, Any]:
        ans = self._t.request(
            "POST", f"/v1/jobs/{int(job_id)}/{action}", dumps(body), safe=True
        )
        if not isinstance(ans, dict):
            raise ProtocolError(f"the {action} answer is not a JSON object")
        return ans
