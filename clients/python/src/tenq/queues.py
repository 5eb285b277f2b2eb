# SPDX-License-Identifier: Apache-2.0
"""Queues, tenants and keys as the server shows them (GET /v1/queues/{name},
/v1/tenants/{name}, /v1/keys, /v1/key-settings): their settings (docs/SEMANTICS.md) and their counts
(docs/API.md). Plain dicts at run time, typed for the checker; a field
the server does not send (a tenant token sees no per-second figures) is
absent."""

from __future__ import annotations

from typing import List, Optional, TypedDict


class Counts(TypedDict, total=False):
    """The jobs of a queue or tenant by state, and totals since start-up.
    ``eligible``: ready and free to go; ``held``: ready but held by a
    limit (slots, a cap, a pause, a rate); ``rate_limited_until``: only
    while a rate limit of its own allows no start (ms since the epoch);
    ``waiting``: jobs waiting for their parents (``depends_on``);
    ``queued`` and ``queued_bytes``: the unfinished jobs and their args'
    bytes, what the quotas count."""

    ready: int
    scheduled: int
    blocked: int
    waiting: int
    leased: int
    running: int
    dead: int
    queued: int
    queued_bytes: int
    eligible: int
    held: int
    rate_limited_until: int
    lag_ms: int
    submitted_total: int
    succeeded_total: int
    failed_total: int
    dead_total: int
    cancelled_total: int
    expired_total: int
    completed_per_s: float
    failed_per_s: float


class QueueInfo(Counts, total=False):
    """A queue: its settings and counts. ``paused``: paused whole;
    ``paused_tenants``: the tenants it is paused for (a tenant token sees
    only its own). ``timeout_ms`` (0: none) fails attempts still running
    that long after their lease. ``rate`` (the queue's starts) and
    ``tenant_rate`` (each tenant's starts in it) per ``rate_period_ms``,
    with bursts of ``rate_burst`` (None: the rate); None: no limit.
    ``concurrency_limit``: the limit of a concurrency key its jobs name
    without one (docs/SEMANTICS.md, "Concurrency keys"). ``aging_ms``
    (0: none) and ``aging_cap``: a ready job's priority rises one step per
    ``aging_ms`` it waits, up to ``aging_cap`` ("Priority aging")."""

    name: str
    order: str
    delivery: str
    lease_ms: int
    max_attempts: int
    backoff: str
    backoff_base_ms: int
    backoff_max_ms: int
    merge: bool
    dedup_window_ms: int
    retention_ms: int
    max_payload_bytes: int
    tenant_cap: Optional[int]
    timeout_ms: int
    paused: bool
    paused_tenants: List[str]
    rate: Optional[int]
    tenant_rate: Optional[int]
    rate_period_ms: int
    rate_burst: Optional[int]
    max_queued: Optional[int]
    max_queued_bytes: int
    concurrency_limit: int
    aging_ms: int
    aging_cap: int


class TenantInfo(Counts, total=False):
    """A tenant: ``slots`` (None: unlimited; 0: paused everywhere),
    ``weight``, ``in_use``, its ``rate`` of starts in every queue together
    per ``rate_period_ms`` with bursts of ``rate_burst`` (None: no limit,
    the rate), and its counts."""

    name: str
    slots: Optional[int]
    weight: int
    in_use: int
    rate: Optional[int]
    rate_period_ms: int
    rate_burst: Optional[int]
    max_queued: Optional[int]
    max_queued_bytes: int


class KeyRate(TypedDict, total=False):
    """A key's rate: ``rate`` units per ``rate_period_ms`` with bursts of
    ``rate_burst``; its next unit at ``until`` (None: now); ``setting``:
    the key setting it comes from (None: its jobs')."""

    rate: int
    rate_period_ms: int
    rate_burst: int
    until: Optional[int]
    setting: Optional[str]


class KeyInfo(TypedDict, total=False):
    """A key resident jobs name (GET /v1/keys): its ``limit`` (None:
    none), ``active`` (its jobs leased or running), ``ready``, ``held``
    (of those, held back by it), ``at_limit``, the ``setting`` in force
    (the key, ``prefix*``, or None) and its ``rate`` (None: none); asked
    for by its name, ``holders`` (up to 20 jobs running that hold it) and
    ``jobs`` (up to 20 of its ready jobs)."""

    tenant: str
    key: str
    limit: Optional[int]
    active: int
    ready: int
    held: int
    at_limit: bool
    setting: Optional[str]
    rate: Optional[KeyRate]
    holders: List[int]
    jobs: List[int]


class KeyPage(TypedDict, total=False):
    """GET /v1/keys: ``total`` keys, ``keys_at_limit`` of them, and the
    ``keys`` listed (those at their limit first)."""

    total: int
    keys_at_limit: int
    keys: List[KeyInfo]


class KeySetting(TypedDict, total=False):
    """A key setting (PUT /v1/key-settings): of ``key`` of ``tenant``, or
    of every key beginning with it less its ``*``; None: the jobs' own."""

    tenant: str
    key: str
    concurrency: Optional[int]
    rate: Optional[int]
    rate_period_ms: int
    rate_burst: Optional[int]
