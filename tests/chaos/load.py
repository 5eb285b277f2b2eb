# SPDX-License-Identifier: Apache-2.0
"""Load on a tenq cluster while it is being broken, and a record of
everything the clients were told, for checker.py.

Clients follow the protocol's rules for several servers (API.md): a
standby's 307 names the leader; a 503 or a refused connection changed
nothing, so the request goes to the next server after a pause; a request
whose connection broke after it was sent goes again only when that is
harmless (keyed submits, a worker's lease and outcomes). Every time here
is time.monotonic() of this process, so times of different threads
compare.

The workload (Load.start):
- keyed:    single submits with idempotency keys (tenant t-keyed, queue q);
- unkeyed:  single submits without keys, never sent twice once sent
            (tenant t-unkeyed): an answer lost on the way leaves an
            "unknown" submit, which may or may not have made a job;
- batches:  batches of 20 keyed jobs (tenant t-batch);
- lanes:    keyed jobs on 8 lanes, one submitter, in order (queue lanes);
- slotted:  batches of 10 for tenant slotted, which has SLOTS slots;
- amo:      keyed single submits to an at-most-once queue;
- steps:    keyed jobs (tenant t-steps, queue steps) whose handler is
            durable steps (docs/SEMANTICS.md, "Durable steps"): step "a"
            (a fresh random value), a durable sleep of 100 ms, step "b", a
            wait for the event "ev-ID" (300 ms timeout), then the ack with
            {"a", "b", "ev"} as the steps answered; an event sender sends
            "ev-ID" for some of them, before, during or after the wait;
- workers:  W threads leasing from every queue with the outcomes of what
            they ran (POST /v1/lease with outcomes), running each job for
            0-15 ms, keeping outcomes that got no answer for the next try;
            a steps job's steps are stored (and parks are made) as it runs.
"""
import heapq
import http.client
import json
import random
import threading
import time
import uuid
from urllib.parse import urlsplit

SLOTS = 3
LANES = 8
QUEUES = ("q", "lanes", "amo", "steps")
STEPS_SLEEP_MS = 100
STEPS_EVENT_TIMEOUT_MS = 300


class Unknown(Exception):
    """A request that was sent and got no answer: it may have been applied."""


class GaveUp(Exception):
    """No server answered usefully within the client's budget."""


class Client:
    """Requests to a list of servers, following the leader."""

    def __init__(self, urls, budget=30.0, stop=None):
        self.urls = list(urls)
        self.cur = 0
        self.budget = budget
        self.stop = stop
        self.conns = {}
        self.unavailable = 0  # 503 answers met by the last request
        self.lost_answers = 0  # times the last request was sent and its answer lost

    def _conn(self, url):
        c = self.conns.get(url)
        if c is None:
            u = urlsplit(url)
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
            self.conns[url] = c
        return c

    def _drop(self, url):
        c = self.conns.pop(url, None)
        if c:
            c.close()

    def _go(self, url):
        url = url.rstrip("/")
        if url not in self.urls:
            self.urls.append(url)
        self.cur = self.urls.index(url)

    def request(self, method, path, body=None, repeatable=True):
        """(status, parsed body) of the first useful answer. Raises Unknown
        when an unrepeatable request was sent and its answer lost, GaveUp
        after the budget."""
        data = json.dumps(body) if body is not None else None
        deadline = time.monotonic() + self.budget
        pause = 0.05
        self.unavailable = 0
        self.lost_answers = 0
        while True:
            url = self.urls[self.cur]
            sent = False
            try:
                c = self._conn(url)
                c.request(method, path, body=data,
                          headers={"Content-Type": "application/json"} if data else {})
                sent = True
                r = c.getresponse()
                raw = r.read()
                status = r.status
                parsed = json.loads(raw) if raw else None
                if r.getheader("Connection", "").lower() == "close":
                    self._drop(url)
            except (OSError, http.client.HTTPException, ValueError):
                self._drop(url)
                if sent and not repeatable:
                    raise Unknown(url)
                self.lost_answers += sent
                status, parsed = 0, None
            leader = None
            if status in (307, 503) and isinstance(parsed, dict):
                leader = (parsed.get("error") or {}).get("leader")
            if status not in (0, 307, 503):
                return status, parsed
            self.unavailable += status == 503 and not leader
            if leader and leader.rstrip("/") != url:
                self._go(leader)
                continue
            if time.monotonic() > deadline or (self.stop and self.stop.is_set()):
                raise GaveUp("%s %s: last %s %s" % (method, path, status, parsed))
            self.cur = (self.cur + 1) % len(self.urls)
            time.sleep(pause)
            pause = min(pause * 2, 0.5)

    def close(self):
        for url in list(self.conns):
            self._drop(url)


class Record:
    """What the clients saw (appended under one lock)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.submits = []   # (kind, id, key, tenant, queue, lane or None, t_answered)
        self.unknown = 0    # unkeyed submits whose answer was lost
        self.grants = []    # (job id, token, tenant, queue, lane, t_received, worker)
        self.outcomes = []  # (job id, token, accepted, t_first_sent, answer)
        self.after_503 = 0  # accepted outcomes whose earlier sending was answered 503
        self.after_loss = 0  # accepted outcomes sent again after an answer was lost
        self.errors = []    # requests that got an answer no client expects
        self.steps = []     # steps stored: (job id, name, token, value, t_answered)
        self.parks = 0      # leases a step ended by parking the job
        self.events = []    # events sent: (key, delivered, kept)

    def add(self, name, item):
        with self.lock:
            getattr(self, name).append(item)


class FileRecord(Record):
    """A Record that also appends every item to a file as a JSON line,
    flushed at once: the record of a worker process that may be frozen or
    killed (worker_process), read back with read_records."""

    def __init__(self, path):
        super().__init__()
        self.f = open(path, "a", buffering=1)

    def add(self, name, item):
        with self.lock:
            getattr(self, name).append(item)
            self.f.write(json.dumps([name, item]) + "\n")


def read_records(paths, into):
    """Adds the items of the files FileRecord wrote to the Record into."""
    for path in paths:
        with open(path) as f:
            for line in f:
                if line.endswith("\n"):  # a line cut short by a kill is not an item
                    name, item = json.loads(line)
                    into.add(name, tuple(item))
    return into


class Load:
    def __init__(self, urls, workers=4, rate=150, budget=30.0, run_ms=15, rec=None):
        self.urls = urls
        self.nworkers = workers
        self.rate = rate  # submits a second per submitter (batches count as one)
        self.budget = budget
        self.run_ms = run_ms  # the most a worker runs a batch of jobs
        self.rec = rec or Record()
        self.stop_submits = threading.Event()
        self.stop_all = threading.Event()
        self.threads = []
        self.steps_jobs = []  # (id, t_submitted) of the steps jobs, for the event sender

    def setup(self):
        c = Client(self.urls, budget=60)
        for path, body in [("/v1/queues/q", {"lease_ms": 3000, "backoff": "fixed",
                                              "backoff_base_ms": 100}),
                           ("/v1/queues/lanes", {"lease_ms": 3000, "backoff": "fixed",
                                                  "backoff_base_ms": 100}),
                           ("/v1/queues/amo", {"lease_ms": 3000, "delivery": "at-most-once"}),
                           ("/v1/queues/steps", {"lease_ms": 3000, "backoff": "fixed",
                                                  "backoff_base_ms": 100}),
                           ("/v1/tenants/slotted", {"slots": SLOTS})]:
            st, ans = c.request("PUT", path, body)
            assert st == 200, (path, st, ans)
        c.close()

    # -- submitters ------------------------------------------------------
    def _submitter(self, kind):
        c = Client(self.urls, budget=self.budget, stop=self.stop_all)
        lane_n = 0
        while not self.stop_submits.is_set():
            t0 = time.monotonic()
            jobs, repeatable = [], True
            if kind == "keyed":
                jobs = [{"tenant": "t-keyed", "queue": "q", "type": "T"}]
            elif kind == "unkeyed":
                jobs = [{"tenant": "t-unkeyed", "queue": "q", "type": "T"}]
                repeatable = False
            elif kind == "batches":
                jobs = [{"tenant": "t-batch", "queue": "q", "type": "T"} for _ in range(20)]
            elif kind == "lanes":
                jobs = [{"tenant": "t-lanes", "queue": "lanes", "type": "T",
                         "key": "lane-%d" % (lane_n % LANES)}]
                lane_n += 1
            elif kind == "slotted":
                jobs = [{"tenant": "slotted", "queue": "q", "type": "T"} for _ in range(10)]
            elif kind == "amo":
                jobs = [{"tenant": "t-amo", "queue": "amo", "type": "T"}]
            elif kind == "steps":
                jobs = [{"tenant": "t-steps", "queue": "steps", "type": "S"}]
            if repeatable:
                for j in jobs:
                    j["idempotency_key"] = uuid.uuid4().hex
            body = jobs[0] if len(jobs) == 1 else {"jobs": jobs}
            try:
                st, ans = c.request("POST", "/v1/jobs", body, repeatable=repeatable)
            except Unknown:
                with self.rec.lock:
                    self.rec.unknown += 1
                continue
            except GaveUp:
                continue
            now = time.monotonic()
            answers = [ans] if len(jobs) == 1 else (ans or {}).get("jobs", [])
            if st not in (200, 201) or len(answers) != len(jobs):
                self.rec.add("errors", ("submit", st, ans))
                continue
            for j, a in zip(jobs, answers):
                if "id" not in a:
                    self.rec.add("errors", ("submit item", st, a))
                    continue
                self.rec.add("submits", (kind, a["id"], j.get("idempotency_key"), j["tenant"],
                                         j["queue"], j.get("key"), now))
                if kind == "steps":
                    with self.rec.lock:
                        self.steps_jobs.append((a["id"], now))
            # steps jobs cost a request a step: a fifth of the rate
            left = (5.0 if kind == "steps" else 1.0) / self.rate - (time.monotonic() - t0)
            if left > 0:
                time.sleep(left)
        c.close()

    # -- workers ---------------------------------------------------------
    def _worker(self, n):
        c = Client(self.urls, budget=self.budget, stop=self.stop_all)
        name = n if isinstance(n, str) else "w%d" % n
        rnd = random.Random(n)
        pending = []  # outcomes not answered yet: (body, t_first_sent or None)
        while not self.stop_all.is_set():
            body = {"worker": name, "queues": list(QUEUES), "max": 8, "wait_ms": 300}
            if pending:
                body["outcomes"] = [o for o, _ in pending]
            t_send = time.monotonic()
            pending = [(o, t if t is not None else t_send) for o, t in pending]
            try:
                st, ans = c.request("POST", "/v1/lease", body)
            except GaveUp:
                continue
            t_recv = time.monotonic()
            if st != 200:
                self.rec.add("errors", ("lease", st, ans))
                continue
            results = ans.get("results") or []
            if pending and len(results) != len(pending):
                self.rec.add("errors", ("results", len(pending), results))
            for (o, t_first), r in zip(pending, results):
                accepted = "state" in r and "error" not in r
                self.rec.add("outcomes", (o["id"], o["token"], accepted, t_first, r))
                if accepted and c.unavailable:
                    with self.rec.lock:
                        self.rec.after_503 += 1
                if accepted and c.lost_answers:
                    with self.rec.lock:
                        self.rec.after_loss += 1
            pending = []
            for j in ans.get("jobs", []):
                self.rec.add("grants", (j["id"], j["token"], j["tenant"], j["queue"], j.get("key"),
                                        t_recv, name))
            if ans.get("jobs"):
                time.sleep(rnd.random() * self.run_ms / 1000.0)
            for j in ans.get("jobs", []):
                if j["queue"] == "steps":
                    out = self._steps(c, j)
                    if out is not None:
                        pending.append((out, None))
                else:
                    pending.append(({"id": j["id"], "token": j["token"], "ok": True}, None))
        c.close()

    def _steps(self, c, j):
        """A steps job's handler: its outcome, or None when a step parked it
        or its lease was lost (a server away past the budget: it comes back
        when its lease expires)."""
        jid, tok = j["id"], j["token"]
        try:
            stored = {}
            if j.get("steps"):
                st, ans = c.request("GET", "/v1/jobs/%d/steps" % jid)
                if st != 200:
                    self.rec.add("errors", ("steps read", st, ans))
                    return None
                stored = {s["name"]: s for s in ans["steps"] if s["done"]}

            def post(body):
                body["token"] = tok
                st, ans = c.request("POST", "/v1/jobs/%d/steps" % jid, body)
                if st == 409 and (ans.get("error") or {}).get("field") == "token":
                    return None  # the lease is over: parked by the first try, or lost
                if st != 200:
                    self.rec.add("errors", ("step", body, st, ans))
                    return None
                return ans

            def step(name):
                if name in stored:
                    return stored[name]["result"]
                value = uuid.uuid4().hex
                ans = post({"name": name, "result": value})
                if ans is None:
                    return None
                self.rec.add("steps", (jid, name, tok, value, time.monotonic()))
                return value

            def parked(ans):
                if ans is None or ans.get("parked"):
                    with self.rec.lock:
                        self.rec.parks += ans is not None
                    return True
                return False

            a = step("a")
            if a is None:
                return None
            if "nap" not in stored and parked(post({"name": "nap", "kind": "sleep",
                                                    "duration_ms": STEPS_SLEEP_MS})):
                return None
            b = step("b")
            if b is None:
                return None
            if "ev" in stored:
                ev = stored["ev"]["result"] if stored["ev"]["error"] is None else "timed out"
            else:
                ans = post({"name": "ev", "kind": "event", "event": "ev-%d" % jid,
                            "timeout_ms": STEPS_EVENT_TIMEOUT_MS})
                if parked(ans):
                    return None
                ev = ans.get("result")  # a kept event, taken at once
            return {"id": jid, "token": tok, "ok": True, "result": {"a": a, "b": b, "ev": ev}}
        except GaveUp:
            return None

    def _event_sender(self):
        """Sends "ev-ID" for about half the steps jobs, at a random moment up
        to 0.8 s after their submit: before their wait (kept), during it
        (delivered) or after it timed out (kept, unused)."""
        c = Client(self.urls, budget=self.budget, stop=self.stop_all)
        rnd = random.Random(7)
        at = 0
        due = []  # heap of (when, job id)
        while not self.stop_all.is_set():
            with self.rec.lock:
                todo = self.steps_jobs[at:]
            at += len(todo)
            for jid, t in todo:
                if rnd.random() < 0.5:
                    heapq.heappush(due, (t + rnd.random() * 0.8, jid))
            now = time.monotonic()
            while due and due[0][0] <= now and not self.stop_all.is_set():
                _, jid = heapq.heappop(due)
                try:
                    st, ans = c.request("POST", "/v1/events", {"tenant": "t-steps",
                                                               "key": "ev-%d" % jid,
                                                               "payload": {"n": jid}},
                                        repeatable=False)
                except (Unknown, GaveUp):
                    continue
                if st != 200:
                    self.rec.add("errors", ("event", st, ans))
                    continue
                self.rec.add("events", ("ev-%d" % jid, ans.get("delivered"), ans.get("kept")))
            time.sleep(0.01)
        c.close()

    def run_worker(self, name):
        """One worker in this thread until stop()."""
        self._worker(name)

    def start(self):
        self.setup()
        kinds = ["keyed", "unkeyed", "batches", "lanes", "slotted", "amo", "steps"]
        self.threads = [threading.Thread(target=self._submitter, args=(k,), daemon=True)
                        for k in kinds]
        self.nsubmitters = len(self.threads)
        self.threads.append(threading.Thread(target=self._event_sender, daemon=True))
        self.threads += [threading.Thread(target=self._worker, args=(i,), daemon=True)
                         for i in range(self.nworkers)]
        for t in self.threads:
            t.start()

    def stop_submitting(self):
        self.stop_submits.set()

    def wait_submitters(self, timeout=60):
        """Stops the submits and waits for those in flight (a submit may be
        retried for its budget, through a restart): after this, no job is
        made by the load any more."""
        self.stop_submits.set()
        for t in self.threads[:self.nsubmitters]:
            t.join(timeout)

    def stop(self):
        self.stop_submits.set()
        self.stop_all.set()
        for t in self.threads:
            t.join(60)


def worker_process(url, name, path, run_ms):
    """`python3 load.py worker URL NAME FILE RUN_MS`: one load worker in a
    process of its own (so that a test can SIGSTOP or kill it), recording
    to FILE, until SIGTERM."""
    import signal
    load = Load([url], budget=30.0, run_ms=run_ms, rec=FileRecord(path))
    signal.signal(signal.SIGTERM, lambda *a: load.stop_all.set())
    load.run_worker(name)


if __name__ == "__main__":
    import sys
    if len(sys.argv) == 6 and sys.argv[1] == "worker":
        worker_process(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        sys.exit("usage: load.py worker URL NAME FILE RUN_MS")
