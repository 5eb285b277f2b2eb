# SPDX-License-Identifier: Apache-2.0
"""Counts what must never happen, from what the clients were told
(load.Record) and what the store holds in the end (its job rows).

Times are the clients' own (monotonic); a lease counts from when its
answer arrived, an outcome from when it was first sent, so the counted
intervals lie inside the server's: when two of them overlap, the real ones
did too.

- lost:            an acknowledged submit whose job is not in the store, or
                   a key whose submits were answered with two ids;
- ids_twice:       one id answered for submits of different keys (unkeyed
                   submits have none: one id twice among them);
- double_leases:   two leases of one job, both valid (their outcomes were
                   accepted), held at once;
- stale_acks:      an ack accepted under a token other than the job's last
                   lease in the store, or acks accepted under two tokens;
- amo_twice:       an at-most-once job handed out under two tokens;
- lane_order:      a laned job handed out before the job before it in its
                   lane was finished (its accepted outcome first sent), or
                   lane jobs whose ids do not follow their submission order;
- slots_exceeded:  more valid leases of the slotted tenant at once than it
                   has slots;
- unfinished:      a job in the store that is not finished;
- tokens_twice:    one token of a job handed out for two of its leases
                   (tokens grow with every lease of a job).

And of the durable steps (check_steps, from the store's job_steps rows):
- steps_lost:      a step whose store was answered 200 that the store does
                   not hold with that value (lost across a kill -9 or a
                   takeover, or overwritten by a later lease);
- steps_twice:     a step name stored twice for one job, or stored (answered
                   200) with two values: its code ran twice and both counted;
- steps_result:    a steps job that succeeded with a result that is not what
                   its stored steps hold (a later attempt did not get a step's
                   result back, or an event wait that says otherwise), or
                   whose steps are not all done.
"""
import json
import collections

FINAL = {"succeeded", "cancelled", "merged", "dead"}


def store_rows(psql_rows):
    """{id: {"state", "token", "tenant", "queue", "key", "idem"}} from rows
    of SELECT id, state, lease_token, tenant, queue, key, idempotency_key."""
    out = {}
    for r in psql_rows:
        out[int(r[0])] = {"state": r[1], "token": int(r[2]), "tenant": r[3], "queue": r[4],
                          "key": r[5] or None, "idem": r[6] or None}
    return out


def check(rec, rows, slots):
    c = collections.Counter()
    detail = collections.defaultdict(list)

    def bad(what, info):
        c[what] += 1
        if len(detail[what]) < 5:
            detail[what].append(info)

    # submits
    by_key = {}
    owner = {}
    for kind, jid, key, tenant, queue, lane, t in rec.submits:
        row = rows.get(jid)
        if row is None:
            bad("lost", ("not in the store", kind, jid))
        elif (row["tenant"], row["queue"], row["idem"]) != (tenant, queue, key):
            # the id is there, but the row is another submit's: this one was lost
            bad("lost", ("the store's row is another job", kind, jid, (tenant, queue, key),
                         (row["tenant"], row["queue"], row["idem"])))
        if key is not None:
            if by_key.setdefault((tenant, key), jid) != jid:
                bad("lost", ("one key, two ids", key, by_key[(tenant, key)], jid))
        who = (tenant, key) if key is not None else ("unkeyed", kind, t)
        if owner.setdefault(jid, who) != who:
            bad("ids_twice", (jid, owner[jid], who))

    # leases and outcomes
    grants = collections.defaultdict(list)  # job -> [(token, t, tenant, queue, lane)]
    for jid, tok, tenant, queue, lane, t, worker in rec.grants:
        grants[jid].append((tok, t, tenant, queue, lane))
    first_sent = {}  # (job, token) -> first time its accepted outcome was sent
    accepted_tokens = collections.defaultdict(set)
    for jid, tok, ok, t_sent, answer in rec.outcomes:
        if not ok:
            continue
        accepted_tokens[jid].add(tok)
        k = (jid, tok)
        first_sent[k] = min(first_sent.get(k, t_sent), t_sent)
    # a valid lease: granted, its outcome accepted: [granted, outcome first sent]
    valid = collections.defaultdict(list)  # job -> [(t_from, t_to, token)]
    seen_token = set()
    for jid, gs in grants.items():
        toks = {}
        for tok, t, tenant, queue, lane in gs:
            if tok in toks:
                bad("tokens_twice", (jid, tok))
            toks[tok] = t
            if (jid, tok) in first_sent and (jid, tok) not in seen_token:
                seen_token.add((jid, tok))
                valid[jid].append((t, first_sent[(jid, tok)], tok))
        if gs[0][3] == "amo" and len(toks) > 1:
            bad("amo_twice", (jid, sorted(toks)))
    for jid, iv in valid.items():
        iv.sort()
        for a, b in zip(iv, iv[1:]):
            if b[0] < a[1]:
                bad("double_leases", (jid, a, b))
    for jid, toks in accepted_tokens.items():
        row = rows.get(jid)
        if len(toks) > 1:
            bad("stale_acks", ("accepted under two tokens", jid, sorted(toks)))
        elif row and row["state"] == "succeeded" and row["token"] not in toks:
            bad("stale_acks", ("accepted under a token the store does not have", jid, toks,
                               row["token"]))

    # lanes: by id (ids follow submission within a lane), each job handed out
    # only once the one before it was finished
    lanes = collections.defaultdict(list)
    for jid, row in rows.items():
        if row["queue"] == "lanes":
            lanes[row["key"]].append(jid)
    sub_order = collections.defaultdict(list)
    for kind, jid, key, tenant, queue, lane, t in rec.submits:
        if kind == "lanes":
            sub_order[lane].append(jid)
    for lane, ids in sub_order.items():
        if ids != sorted(ids):
            bad("lane_order", ("ids out of submission order", lane))
    for lane, ids in lanes.items():
        ids.sort()
        for prev, nxt in zip(ids, ids[1:]):
            done = [first_sent[(prev, t)] for t in accepted_tokens.get(prev, ())]
            if not done:
                continue  # prev never finished by a worker here (then unfinished counts it)
            for tok, t, *_ in grants.get(nxt, ()):
                if t < min(done):
                    bad("lane_order", (lane, prev, nxt, tok))

    # the slotted tenant: valid leases at once
    events = []
    for jid, iv in valid.items():
        if rows.get(jid, {}).get("tenant") != "slotted":
            continue
        for t_from, t_to, tok in iv:
            events.append((t_from, 1))
            events.append((t_to, -1))
    events.sort(key=lambda e: (e[0], e[1]))
    held = most = 0
    for t, d in events:
        held += d
        most = max(most, held)
    if most > slots:
        bad("slots_exceeded", ("held at once", most))

    for jid, row in rows.items():
        if row["state"] not in FINAL:
            bad("unfinished", (jid, row["state"]))

    totals = {"submits": len(rec.submits), "unknown_submits": rec.unknown,
              "grants": len(rec.grants),
              "accepted_outcomes": sum(1 for o in rec.outcomes if o[2]),
              "refused_outcomes": sum(1 for o in rec.outcomes if not o[2]),
              "jobs_in_store": len(rows), "slotted_most_at_once": most,
              "protocol_errors": len(rec.errors)}
    counts = {k: c[k] for k in ("lost", "ids_twice", "double_leases", "stale_acks", "amo_twice",
                                "lane_order", "slots_exceeded", "unfinished", "tokens_twice")}
    return counts, totals, dict(detail)


def step_rows(psql_rows):
    """[(job, pos, name, kind, done, result, error)] from rows of
    step_rows_sql (done: PostgreSQL's t/f, SQLite's 1/0)."""
    return [(int(r[0]), int(r[1]), r[2], r[3], r[4] in ("t", "1", "true"),
             json.loads(r[5]) if r[5] else None, r[6] or None) for r in psql_rows]


def step_rows_sql():
    return ("SELECT job_id, pos, name, kind, done, coalesce(result, ''), coalesce(error, '') "
            "FROM %sjob_steps")


def steps_job_rows_sql():
    return "SELECT id, state, coalesce(result, '') FROM %sjobs WHERE queue = 'steps'"


def check_steps(rec, steps, jobs):
    """Counts of what must never happen to durable steps (see the top),
    from rec.steps and the store's rows: steps (step_rows) and jobs
    ([id, state, result text] of the queue steps)."""
    c = collections.Counter()
    detail = collections.defaultdict(list)

    def bad(what, info):
        c[what] += 1
        if len(detail[what]) < 5:
            detail[what].append(info)

    held = collections.defaultdict(dict)  # job -> name -> (kind, done, result, error)
    for jid, pos, name, kind, done, result, error in sorted(steps):
        if name in held[jid]:
            bad("steps_twice", ("stored twice", jid, name))
        held[jid][name] = (kind, done, result, error)
    answered = collections.defaultdict(set)
    for jid, name, tok, value, t in rec.steps:
        answered[(jid, name)].add(value)
        got = held.get(jid, {}).get(name)
        if got is None or got[2] != value:
            bad("steps_lost", (jid, name, tok, value, got))
    for (jid, name), values in answered.items():
        if len(values) > 1:
            bad("steps_twice", ("two values answered", jid, name, sorted(values)))
    succeeded = 0
    for r in jobs:
        jid, state, text = int(r[0]), r[1], r[2]
        if state != "succeeded":
            continue
        succeeded += 1
        h = held.get(jid, {})
        try:
            res = json.loads(text) if text else None
        except ValueError:
            res = None
        if not all(x[1] for x in h.values()) or set(h) != {"a", "nap", "b", "ev"}:
            bad("steps_result", ("steps", jid, sorted(h)))
            continue
        ev = h["ev"][2] if h["ev"][3] is None else "timed out"
        want = {"a": h["a"][2], "b": h["b"][2], "ev": ev}
        if res != want:
            bad("steps_result", ("result", jid, res, want))
    totals = {"steps_stored": len(rec.steps), "parks": rec.parks, "steps_jobs_succeeded": succeeded,
              "events_sent": len(rec.events),
              "events_delivered": sum(1 for e in rec.events if e[1]),
              "events_kept": sum(1 for e in rec.events if e[2]),
              "waits_that_got_their_event": sum(1 for x in held.values()
                                                if "ev" in x and x["ev"][3] is None)}
    counts = {k: c[k] for k in ("steps_lost", "steps_twice", "steps_result")}
    return counts, totals, dict(detail)


def job_rows_sql():
    return ("SELECT id, state, lease_token, tenant, queue, coalesce(key, ''), "
            "coalesce(idempotency_key, '') FROM %sjobs")
