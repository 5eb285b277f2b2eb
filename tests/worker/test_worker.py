#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`tenq work` against a real `tenq serve`, with real handler processes.

One server (port 0, a private SQLite file) serves the suite; tests keep
apart by their queue and tenant names.  Handlers are shell and Python
scripts written to a temporary directory; what each does is chosen by the
job's args ({"mode": ...}).  The binary comes from TENQ_BIN (ctest sets it).

    TENQ_BIN=build/tenq python3 tests/worker/test_worker.py [-v] [Class.test]
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import harness  # noqa: E402

BIN = os.environ.get("TENQ_BIN") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "tenq")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
SANITIZER_WORDS = harness.SANITIZER_WORDS

S = {}  # the server: proc, port, url, tmp, store


# ---- the server ------------------------------------------------------------------------

def start_server(port):
    """Starts tenq serve on the suite's store at a fixed port (so that a
    restart keeps the URL workers know)."""
    if "srv" not in S:
        S["srv"] = harness.Server(store_url=S["store"], args=["--sqlite-sync", "normal"],
                                  tmp=S["tmp"], port=port)
    else:
        S["srv"].start()
    S["proc"] = S["srv"].proc


def stop_server():
    srv = S.get("srv")
    if srv:
        srv.stop()


def setUpModule():
    S["tmp"] = tempfile.mkdtemp(prefix="tenq-work-test-")
    S["store"] = "sqlite:" + os.path.join(S["tmp"], "t.db")
    S["port"] = harness.free_port()
    S["url"] = "http://127.0.0.1:%d" % S["port"]
    write_handlers(S["tmp"])
    start_server(S["port"])


def tearDownModule():
    for w in _workers:
        w.kill()
    stop_server()
    S["srv"].assert_clean()
    S["srv"].log.close()
    if os.environ.get("TENQ_KEEP_TMP"):
        print("kept", S["tmp"])
    else:
        shutil.rmtree(S["tmp"], ignore_errors=True)


# ---- requests --------------------------------------------------------------------------

def api(method, path, body=None, expect=(200, 201)):
    c = http.client.HTTPConnection("127.0.0.1", S["port"], timeout=30)
    try:
        c.request(method, path, body=None if body is None else json.dumps(body),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read().decode()
    finally:
        c.close()
    parsed = json.loads(data) if data else None
    if expect and r.status not in expect:
        raise AssertionError("%s %s -> %d %s" % (method, path, r.status, data))
    return r.status, parsed


def submit(queue, args=None, tenant="acme", type="T", **kw):
    job = {"tenant": tenant, "queue": queue, "type": type}
    if args is not None:
        job["args"] = args
    job.update(kw)
    return api("POST", "/v1/jobs", job)[1]["id"]


def job(id):
    return api("GET", "/v1/jobs/%d" % id)[1]


def set_queue(name, **settings):
    api("PUT", "/v1/queues/" + name, settings)


def wait_job(id, states=("succeeded", "scheduled", "dead", "cancelled"), timeout=20):
    """Polls the job until its state is one of states."""
    deadline = time.time() + timeout
    while True:
        j = job(id)
        if j["state"] in states:
            return j
        if time.time() > deadline:
            raise AssertionError("job %d still %s after %ss: %s" % (id, j["state"], timeout, j))
        time.sleep(0.05)


def wait_for(cond, timeout=15, what="condition"):
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.05)


# ---- the worker ------------------------------------------------------------------------

_counter = [0]
_workers = []  # every worker started, killed at the end if a test left one


class Worker:
    """One `tenq work` process; its log (stderr) in a file."""

    def __init__(self, args, cmd, env=None, url=None):
        _counter[0] += 1
        self.log_path = os.path.join(S["tmp"], "worker-%d.log" % _counter[0])
        e = dict(os.environ)
        e.update(env or {})
        e.pop("TENQ_TOKEN", None)
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [BIN, "work", "--server", url or S["url"]] + list(args) + ["--"] + list(cmd),
                stdout=subprocess.DEVNULL, stderr=log, env=e)
        _workers.append(self)

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def wait_log(self, pattern, timeout=15):
        wait_for(lambda: re.search(pattern, self.log()), timeout, "log line " + pattern)

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=30):
        """SIGTERM, then the exit status; the log must be clean."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout)
        self.check_clean()
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def check_clean(self):
        text = self.log()
        for w in SANITIZER_WORDS:
            if w in text:
                raise AssertionError("sanitizer report in the worker's log:\n" + text[-6000:])


# ---- handlers ----------------------------------------------------------------------------

EXEC_SH = r"""#!/bin/sh
# an exec handler in shell; the job's args choose what it does
args=$(cat)
case "$args" in
*'"mode":"json"'*)
    printf '{"id":%s,"tenant":"%s","queue":"%s","type":"%s","key":"%s","attempt":%s,"token":%s,"args":%s}\n' \
        "$TENQ_JOB_ID" "$TENQ_TENANT" "$TENQ_QUEUE" "$TENQ_TYPE" "${TENQ_KEY-none}" \
        "$TENQ_ATTEMPT" "$TENQ_TOKEN" "$args" ;;
*'"mode":"text"'*) echo "plain text, not JSON" ;;
*'"mode":"exit75"'*) echo "try again later" >&2; exit 75 ;;
*'"mode":"exit65"'*) echo "bad input" >&2; exit 65 ;;
*'"mode":"exit3"'*) exit 3 ;;
*'"mode":"segv"'*) kill -SEGV $$ ;;
*'"mode":"sleep"'*) echo $$ > "$MARKS/$TENQ_JOB_ID"; exec sleep 30 ;;
*'"mode":"ignoreterm"'*) trap '' TERM; echo $$ > "$MARKS/$TENQ_JOB_ID"; sleep 30; sleep 30 ;;
*'"mode":"stderr"'*) echo "first words" >&2; echo "last words" >&2; echo '"done"' ;;
*'"mode":"huge"'*) head -c 3000000 /dev/zero | tr '\0' 'a' ;;
*'"mode":"short"'*) sleep 0.3; echo '{"ok":1}' ;;
*) echo "unknown mode: $args" >&2; exit 65 ;;
esac
"""

EXEC_PY = r"""
import json, os, signal, sys, time
args = json.load(sys.stdin)
mode = args["mode"]
env = {k: os.environ.get(k) for k in ("TENQ_JOB_ID", "TENQ_TENANT", "TENQ_QUEUE", "TENQ_TYPE",
                                      "TENQ_KEY", "TENQ_ATTEMPT", "TENQ_TOKEN", "TRACEPARENT")}
if mode == "json":
    print(json.dumps({"env": env, "args": args}))
elif mode == "text":
    sys.stdout.write("text from python\nsecond line\n")
elif mode == "exit75":
    sys.exit(75)
elif mode == "exit65":
    print("no good", file=sys.stderr)
    sys.exit(65)
elif mode == "crash":
    raise RuntimeError("handler crashed on purpose")
elif mode == "killed":
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "ignoreterm":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(30)
elif mode == "alloc":
    hog = []
    while True:
        hog.append(b"x" * (8 << 20))
        time.sleep(0.01)
elif mode == "stderr":
    print("python says hi", file=sys.stderr, flush=True)
    print(json.dumps("ok"))
elif mode == "huge":
    sys.stdout.write("\u00e9" * 2000000)
else:
    sys.exit(65)
"""

LINES_PY = r"""
import json, os, signal, sys, time
def say(o):
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()
signal.signal(signal.SIGTERM, signal.SIG_DFL)
for line in sys.stdin:
    job = json.loads(line)
    id, args = job["id"], job.get("args") or {}
    mode = args.get("mode", "ok")
    if mode == "ok":
        say({"id": id, "ok": True, "result": {"pid": os.getpid(), "type": job["type"],
                                              "attempt": job["attempt"], "args": args}})
    elif mode == "fail":
        say({"id": id, "ok": False, "error": "it did not work", "retry_in_ms": 60000})
    elif mode == "noretry":
        say({"id": id, "ok": False, "error": "never will", "retry": False})
    elif mode == "progress":
        say({"id": id, "progress": {"done": 1, "of": 2}})
        time.sleep(float(args.get("sleep", 2)))
        say({"id": id, "ok": True, "result": "after progress"})
    elif mode == "die":
        os._exit(3)
    elif mode == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif mode == "huge":
        say({"id": id, "ok": True, "result": "x" * 3000000})
    elif mode == "sleep":
        time.sleep(60)
    elif mode == "ignoreterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(60)
    elif mode == "alloc":
        hog = []
        while True:
            hog.append(b"x" * (8 << 20))
            time.sleep(0.01)
    elif mode == "stderr":
        print("lines handler on stderr", file=sys.stderr, flush=True)
        say({"id": id, "ok": True, "result": None})
    elif mode == "noise":
        print("this is not JSON", flush=True)
        say({"id": id + 1000, "ok": True})
        say({"id": id, "ok": True, "result": "after noise"})
    elif mode == "steps":
        # durable steps: each asked on stdout, answered on stdin
        done = {s["name"]: s for s in job.get("steps", [])}
        def ask(o):
            say(o)
            return json.loads(sys.stdin.readline())
        if "one" not in done:
            with open(os.path.join(args["marks"], "one-%d" % id), "a") as f:
                f.write("ran\n")  # the step's code: once per job
            assert ask({"id": id, "step": "one", "result": {"v": 1}})["ok"]
        if "nap" not in done and ask({"id": id, "sleep": "nap", "duration_ms": 200})["parked"]:
            continue
        if "evt" in done:
            payload = done["evt"]["result"]
        else:
            r = ask({"id": id, "wait_event": "evt", "event": "ev-%d" % id})
            if r["parked"]:
                continue
            payload = r["result"]
        if "kid" in done:
            kid = done["kid"]["result"]
        else:
            r = ask({"id": id, "run_child": "kid", "job": {"queue": args["kids"], "type": "K",
                                                           "args": {"for": id}}})
            if r["parked"]:
                continue
            kid = r["result"]
        say({"id": id, "ok": True, "result": {"one": done.get("one", {}).get("result"),
                                              "event": payload, "kid": kid,
                                              "attempt": job["attempt"]}})
"""

LINES_SH = r"""#!/bin/sh
# a lines handler in shell: answers every job with ok
while read -r line; do
    id=$(printf '%s' "$line" | grep -o '"id":[0-9]*' | head -n 1 | cut -d: -f2)
    echo "shell handled $id" >&2
    printf '{"id":%s,"ok":true,"result":{"by":"sh"}}\n' "$id"
done
"""

# Records every start and end, one line each with O_APPEND (a single write,
# so lines of concurrent handlers never mix); the file order is the order
# the kernel took them in.
RECORD_PY = r"""
import json, os, random, sys, time
def note(what, job):
    fd = os.open(os.environ["RECORD"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, ("%s %d %s %s %d\n" % (what, job["id"], job["tenant"], job["key"] or "-",
                                         time.monotonic_ns())).encode())
    os.close(fd)
def run(job):
    note("start", job)
    time.sleep(random.uniform(0.05, 0.15))  # long enough for slots to fill on a loaded machine
    note("end", job)
if len(sys.argv) > 1 and sys.argv[1] == "lines":
    for line in sys.stdin:
        job = json.loads(line)
        run(job)
        sys.stdout.write(json.dumps({"id": job["id"], "ok": True}) + "\n")
        sys.stdout.flush()
else:
    json.load(sys.stdin)
    run({"id": int(os.environ["TENQ_JOB_ID"]), "tenant": os.environ["TENQ_TENANT"],
         "key": os.environ.get("TENQ_KEY")})
"""


def write_handlers(tmp):
    files = {"exec.sh": EXEC_SH, "exec.py": EXEC_PY, "lines.py": LINES_PY,
             "lines.sh": LINES_SH, "record.py": RECORD_PY}
    for name, text in files.items():
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(text.lstrip("\n"))
        os.chmod(path, 0o755)
    os.mkdir(os.path.join(tmp, "marks"))


def H(name):
    return os.path.join(S["tmp"], name)


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def mark_pid(job_id, timeout=10):
    path = os.path.join(S["tmp"], "marks", str(job_id))
    def read():
        try:
            with open(path) as f:
                return f.read().strip()
        except FileNotFoundError:
            return ""
    wait_for(read, timeout, "mark " + path)
    return int(read())


# ---- exec handlers ---------------------------------------------------------------------------

class ExecTest(unittest.TestCase):
    """A process per job; shell and Python."""

    def run_jobs(self, queue, cmd, modes, args=(), **submit_kw):
        ids = [submit(queue, {"mode": m}, **submit_kw) for m in modes]
        w = Worker(["--queue", queue, "--concurrency", "4"] + list(args), cmd,
                   env={"MARKS": os.path.join(S["tmp"], "marks")})
        try:
            jobs = [wait_job(i) for i in ids]
        finally:
            self.assertEqual(w.stop(), 0, w.log())
        return jobs, w

    def test_shell_results_and_environment(self):
        jobs, w = self.run_jobs("ex-sh", [H("exec.sh")], ["json", "text"], key="lane-1")
        j, t = jobs
        self.assertEqual(j["state"], "succeeded", j)
        r = j["result"]
        self.assertEqual((r["id"], r["tenant"], r["queue"], r["type"], r["key"], r["attempt"]),
                         (j["id"], "acme", "ex-sh", "T", "lane-1", 1))
        self.assertEqual(r["args"], {"mode": "json"})
        self.assertGreater(r["token"], 0)  # the lease's fencing token, not a secret
        self.assertEqual(j["stats"]["exit_code"], 0)
        self.assertEqual(t["state"], "succeeded")
        self.assertEqual(t["result"], "plain text, not JSON")

    def test_python_results_and_environment(self):
        jobs, _ = self.run_jobs("ex-py", [PY, H("exec.py")], ["json", "text"])
        j, t = jobs
        env = j["result"]["env"]
        self.assertEqual(env["TENQ_JOB_ID"], str(j["id"]))
        self.assertEqual(env["TENQ_QUEUE"], "ex-py")
        self.assertEqual(env["TENQ_ATTEMPT"], "1")  # the first run
        self.assertIsNone(env["TENQ_KEY"])  # no key: unset
        self.assertTrue(env["TENQ_TOKEN"].isdigit())
        self.assertIsNone(env["TRACEPARENT"])  # none given
        self.assertEqual(t["result"], "text from python\nsecond line")

    def test_a_handler_continues_its_submitters_trace(self):
        tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        jobs, _ = self.run_jobs("ex-trace", [PY, H("exec.py")], ["json"], traceparent=tp)
        self.assertEqual(jobs[0]["result"]["env"]["TRACEPARENT"], tp)

    def test_shell_exit_statuses(self):
        jobs, _ = self.run_jobs("ex-sh-exit", [H("exec.sh")], ["exit75", "exit65", "exit3", "segv"])
        e75, e65, e3, segv = jobs
        self.assertEqual(e75["state"], "scheduled")  # retried by the queue's backoff
        self.assertEqual(e75["error"], "exit status 75: try again later")
        self.assertGreater(e75["run_at"], time.time() * 1000 + 5000)
        self.assertEqual(e65["state"], "dead")
        self.assertEqual(e65["error"], "exit status 65: bad input")
        self.assertEqual(e3["state"], "scheduled")
        self.assertEqual(e3["error"], "exit status 3")
        self.assertEqual(segv["state"], "scheduled")
        self.assertTrue(segv["error"].startswith("killed by signal 11"), segv["error"])

    def test_python_exit_statuses_and_crash(self):
        jobs, _ = self.run_jobs("ex-py-exit", [PY, H("exec.py")],
                                ["exit75", "exit65", "crash", "killed"])
        e75, e65, crash, killed = jobs
        self.assertEqual((e75["state"], e75["error"]), ("scheduled", "exit status 75"))
        self.assertEqual((e65["state"], e65["error"]), ("dead", "exit status 65: no good"))
        self.assertEqual(crash["state"], "scheduled")
        self.assertEqual(crash["error"],
                         "exit status 1: RuntimeError: handler crashed on purpose")
        self.assertEqual(killed["state"], "scheduled")
        self.assertTrue(killed["error"].startswith("killed by signal 9"), killed["error"])

    def test_timeout_term_then_kill(self):
        t0 = time.time()
        jobs, w = self.run_jobs("ex-timeout", [H("exec.sh")], ["sleep", "ignoreterm"],
                                args=["--timeout", "1s", "--grace", "1s"])
        for j in jobs:
            self.assertEqual((j["state"], j["error"]), ("scheduled", "timeout"), j)
        self.assertLess(time.time() - t0, 10)
        log = w.log()
        self.assertIn("job %d: stopping its handler (timeout)" % jobs[0]["id"], log)
        # the one that ignores TERM took a KILL; the other did not need one
        self.assertIn("job %d: handler still running after SIGTERM: SIGKILL" % jobs[1]["id"], log)
        self.assertNotIn("job %d: handler still running" % jobs[0]["id"], log)
        for j in jobs:
            self.assertFalse(pid_alive(mark_pid(j["id"])))

    def test_python_timeout_ignoring_term(self):
        jobs, w = self.run_jobs("ex-py-timeout", [PY, H("exec.py")], ["ignoreterm"],
                                args=["--timeout", "500ms", "--grace", "500ms"])
        self.assertEqual(jobs[0]["error"], "timeout")
        self.assertIn("SIGKILL", w.log())

    def test_memory_limit_then_next_job(self):
        q = "ex-rss"
        hog = submit(q, {"mode": "alloc"})
        w = Worker(["--queue", q, "--max-rss", "120MiB", "--grace", "5s"], [PY, H("exec.py")])
        try:
            j = wait_job(hog)
            self.assertEqual((j["state"], j["error"]), ("scheduled", "memory limit"))
            # the worker goes on with the next job
            nxt = wait_job(submit(q, {"mode": "json"}))
            self.assertEqual(nxt["state"], "succeeded")
        finally:
            self.assertEqual(w.stop(), 0)
        self.assertIn("over --max-rss", w.log())

    def test_huge_stdout_is_bounded(self):
        jobs, w = self.run_jobs("ex-huge", [H("exec.sh")], ["huge"])
        j = jobs[0]
        self.assertEqual(j["state"], "succeeded")
        self.assertIsInstance(j["result"], str)
        self.assertEqual(len(j["result"]), (1 << 20) - 2)  # 1 MiB of JSON with its quotes
        self.assertEqual(j["stats"]["stdout_bytes"], 3000000)
        self.assertTrue(j["stats"]["stdout_truncated"])
        self.assertIn("job %d: stdout cut" % j["id"], w.log())

    def test_huge_utf8_stdout_stays_valid(self):
        jobs, _ = self.run_jobs("ex-huge-py", [PY, H("exec.py")], ["huge"],
                                args=["--max-output", "100KiB"])
        r = jobs[0]["result"]
        self.assertLessEqual(len(json.dumps(r, ensure_ascii=False).encode()), 100 << 10)
        self.assertEqual(set(r), {"\u00e9"})

    def test_stderr_lines_tagged_with_the_job(self):
        jobs, w = self.run_jobs("ex-stderr", [H("exec.sh")], ["stderr"])
        jobs2, w2 = self.run_jobs("ex-stderr-py", [PY, H("exec.py")], ["stderr"])
        self.assertRegex(w.log(), r"info job %d: first words\n" % jobs[0]["id"])
        self.assertRegex(w.log(), r"info job %d: last words\n" % jobs[0]["id"])
        self.assertRegex(w2.log(), r"info job %d: python says hi\n" % jobs2[0]["id"])
        self.assertEqual(jobs[0]["result"], "done")

    def test_cancel_stops_the_handler(self):
        q = "ex-cancel"
        set_queue(q, lease_ms=1500)  # heartbeats every 500 ms
        id = submit(q, {"mode": "sleep"})
        w = Worker(["--queue", q, "--grace", "2s"], [H("exec.sh")],
                   env={"MARKS": os.path.join(S["tmp"], "marks")})
        try:
            pid = mark_pid(id)
            wait_for(lambda: job(id)["state"] == "running", 5, "running")
            api("POST", "/v1/jobs/%d/cancel" % id)
            t0 = time.time()
            j = wait_job(id, ("cancelled",), timeout=10)
            self.assertLess(time.time() - t0, 5)
            self.assertFalse(pid_alive(pid))
            self.assertEqual(j["state"], "cancelled")
        finally:
            self.assertEqual(w.stop(), 0)
        self.assertIn("job %d: cancelled; stopping its handler" % id, w.log())

    def test_the_servers_timeout_stops_the_handler(self):
        q = "ex-server-timeout"
        set_queue(q, lease_ms=1500, timeout_ms=1000, backoff="fixed", backoff_base_ms=60000)
        id = submit(q, {"mode": "sleep"})
        w = Worker(["--queue", q, "--grace", "1s"], [H("exec.sh")],
                   env={"MARKS": os.path.join(S["tmp"], "marks")})
        try:
            pid = mark_pid(id)
            t0 = time.time()
            j = wait_job(id, ("scheduled",), timeout=10)
            self.assertIn("timed out", j["error"])
            # the next heartbeat tells the worker: it stops the handler
            wait_for(lambda: not pid_alive(pid), 5, "the handler stopped")
            self.assertLess(time.time() - t0, 5)
        finally:
            self.assertEqual(w.stop(), 0)
        self.assertRegex(w.log(), r"job %d: .*lease" % id)

    def test_status_on_sigttin_and_status_file(self):
        q = "ex-status"
        ids = [submit(q, {"mode": "sleep"}) for _ in range(2)]
        status = os.path.join(S["tmp"], "status.txt")
        w = Worker(["--queue", q, "--concurrency", "2", "--status-file", status, "--grace",
                    "1s"], [H("exec.sh")], env={"MARKS": os.path.join(S["tmp"], "marks")})
        try:
            for i in ids:
                mark_pid(i)
            w.signal(signal.SIGTTIN)
            w.wait_log(r"2 job\(s\) in hand")
            for i in ids:
                self.assertRegex(w.log(), r"job %d  tenant=acme queue=%s type=T .*state=running "
                                 r"age=\d+\.\d{3}s" % (i, q))
            wait_for(lambda: os.path.exists(status) and "job %d" % ids[1] in open(status).read())
        finally:
            self.assertEqual(w.stop(), 0)


# ---- lines handlers --------------------------------------------------------------------------

class LinesTest(unittest.TestCase):
    """Long-lived handler processes, one JSON line per job."""

    def worker(self, queue, pool=2, args=(), cmd=None):
        w = Worker(["--queue", queue, "--lines", "--pool", str(pool)] + list(args),
                   cmd or [PY, H("lines.py")])
        self.addCleanup(w.kill)
        return w

    def test_results_failures_and_one_process_per_slot(self):
        q = "li-basic"
        oks = [submit(q, {"mode": "ok", "n": i}, type="A.b") for i in range(10)]
        fail = submit(q, {"mode": "fail"})
        nor = submit(q, {"mode": "noretry"})
        noise = submit(q, {"mode": "noise"})
        w = self.worker(q)
        jobs = [wait_job(i) for i in oks]
        pids = {j["result"]["pid"] for j in jobs}
        self.assertLessEqual(len(pids), 2)  # the pool's processes did every job
        for n, j in enumerate(jobs):
            self.assertEqual(j["state"], "succeeded")
            self.assertEqual(j["result"]["args"], {"mode": "ok", "n": n})
            self.assertEqual(j["result"]["type"], "A.b")
            # the line's attempt is this attempt's number, as the history counts it
            self.assertEqual(j["result"]["attempt"], 1)
        f = wait_job(fail)
        self.assertEqual((f["state"], f["error"]), ("scheduled", "it did not work"))
        # retry_in_ms 60000 rather than the default backoff's 15 s or so
        self.assertGreater(f["run_at"], time.time() * 1000 + 45000)
        self.assertEqual(wait_job(nor)["state"], "dead")
        self.assertEqual(wait_job(noise)["result"], "after noise")
        self.assertEqual(w.stop(), 0)
        log = w.log()
        self.assertIn("job %d: not an answer on stdout: this is not JSON" % noise, log)
        self.assertIn("answer for job %d, which the handler was not given" % (noise + 1000), log)

    def test_shell_lines_handler(self):
        q = "li-sh"
        ids = [submit(q, {"n": i}) for i in range(5)]
        w = self.worker(q, pool=2, cmd=[H("lines.sh")])
        for i in ids:
            j = wait_job(i)
            self.assertEqual((j["state"], j["result"]), ("succeeded", {"by": "sh"}))
        self.assertEqual(w.stop(), 0)
        self.assertRegex(w.log(), r"job %d: shell handled %d" % (ids[0], ids[0]))

    def test_progress_reaches_the_job(self):
        q = "li-progress"
        id = submit(q, {"mode": "progress", "sleep": 2})
        w = self.worker(q, pool=1)
        wait_for(lambda: job(id)["progress"] == {"done": 1, "of": 2}, 5, "progress")
        self.assertEqual(job(id)["state"], "running")
        j = wait_job(id)
        self.assertEqual(j["result"], "after progress")
        self.assertEqual(w.stop(), 0)

    def test_durable_steps_through_the_lines_protocol(self):
        q, kids = "li-steps", "li-steps-kids"
        id = submit(q, {"mode": "steps", "marks": os.path.join(S["tmp"], "marks"),
                        "kids": kids})
        w = self.worker(q, pool=1)
        kw = self.worker(kids, pool=1)  # the child's handler answers {"pid", "args", ...}
        wait_for(lambda: job(id)["state"] == "waiting", 20, "the wait for its event")
        self.assertEqual(job(id)["waiting"]["reason"], "event")
        st, ans = api("POST", "/v1/events", {"tenant": "acme", "key": "ev-%d" % id,
                                             "payload": {"paid": True}})
        self.assertEqual(ans["delivered"], 1)
        j = wait_job(id, ("succeeded", "dead"), timeout=30)
        self.assertEqual(j["state"], "succeeded", j)
        r = j["result"]
        self.assertEqual((r["one"], r["event"], r["attempt"]), ({"v": 1}, {"paid": True}, 1))
        self.assertEqual(r["kid"]["args"], {"for": id})
        # step one's code ran once, though the handler ran the job four times
        with open(os.path.join(S["tmp"], "marks", "one-%d" % id)) as f:
            self.assertEqual(f.read(), "ran\n")
        steps = api("GET", "/v1/jobs/%d/steps" % id)[1]["steps"]
        self.assertEqual([(s["name"], s["kind"]) for s in steps],
                         [("one", "step"), ("nap", "sleep"), ("evt", "event"), ("kid", "child")])
        att = api("GET", "/v1/jobs/%d/attempts" % id)[1]["attempts"]
        self.assertEqual([a["outcome"] for a in att],
                         ["suspended", "suspended", "suspended", "succeeded"])
        self.assertEqual(w.stop(), 0)
        self.assertEqual(kw.stop(), 0)

    def test_handler_that_dies_is_restarted(self):
        q = "li-die"
        die = submit(q, {"mode": "die"})
        w = self.worker(q, pool=1)
        j = wait_job(die)
        self.assertEqual((j["state"], j["error"]), ("scheduled", "handler exited"))
        ok = wait_job(submit(q, {"mode": "ok"}))
        self.assertEqual(ok["state"], "succeeded")
        self.assertEqual(w.stop(), 0)
        self.assertRegex(w.log(), r"handler 0 \(pid \d+\) ended: exit status 3")

    def test_crash_and_huge_answer_fail_the_job_only(self):
        q = "li-crash"
        segv = submit(q, {"mode": "segv"})
        huge = submit(q, {"mode": "huge"})
        w = self.worker(q, pool=1)
        j = wait_job(segv)
        self.assertEqual((j["state"], j["error"]), ("scheduled", "handler exited"))
        j = wait_job(huge)
        self.assertEqual((j["state"], j["error"]), ("scheduled", "answer too long"))
        self.assertEqual(wait_job(submit(q, {"mode": "ok"}))["state"], "succeeded")
        self.assertEqual(w.stop(), 0)
        log = w.log()
        self.assertRegex(log, r"handler 0 \(pid \d+\) ended: killed by signal 11")
        self.assertIn("job %d: an answer line longer than" % huge, log)

    def test_timeout_and_memory_limit_then_next_job(self):
        q = "li-limits"
        sleepy = submit(q, {"mode": "sleep"})
        stubborn = submit(q, {"mode": "ignoreterm"})
        w = self.worker(q, pool=2, args=["--timeout", "1s", "--grace", "1s"])
        for i in (sleepy, stubborn):
            j = wait_job(i)
            self.assertEqual((j["state"], j["error"]), ("scheduled", "timeout"))
        self.assertEqual(wait_job(submit(q, {"mode": "ok"}))["state"], "succeeded")
        self.assertEqual(w.stop(), 0)
        self.assertIn("job %d: handler still running after SIGTERM: SIGKILL" % stubborn, w.log())

        q = "li-rss"
        hog = submit(q, {"mode": "alloc"})
        w = self.worker(q, pool=1, args=["--max-rss", "120MiB", "--timeout", "20s"])
        j = wait_job(hog)
        self.assertEqual((j["state"], j["error"]), ("scheduled", "memory limit"))
        self.assertEqual(wait_job(submit(q, {"mode": "ok"}))["state"], "succeeded")
        self.assertEqual(w.stop(), 0)

    def test_cancel_stops_the_handler(self):
        q = "li-cancel"
        set_queue(q, lease_ms=1500)
        id = submit(q, {"mode": "sleep"})
        w = self.worker(q, pool=1)
        wait_for(lambda: job(id)["state"] == "running", 5, "running")
        api("POST", "/v1/jobs/%d/cancel" % id)
        self.assertEqual(wait_job(id, ("cancelled",), 10)["state"], "cancelled")
        self.assertEqual(wait_job(submit(q, {"mode": "ok"}))["state"], "succeeded")
        self.assertEqual(w.stop(), 0)

    def test_stderr_tagged_with_the_job(self):
        q = "li-stderr"
        ids = [submit(q, {"mode": "stderr"}) for _ in range(3)]
        w = self.worker(q, pool=1)
        for i in ids:
            wait_job(i)
        self.assertEqual(w.stop(), 0)
        for i in ids:
            self.assertIn("info job %d: lines handler on stderr\n" % i, w.log())


# ---- crashes, stops, several workers, the server away ------------------------------------------

class RobustnessTest(unittest.TestCase):

    def test_kill9_worker_lease_expires_and_late_ack_is_refused(self):
        q = "rb-kill9"
        set_queue(q, lease_ms=1500, backoff="fixed", backoff_base_ms=0)
        id = submit(q, {"mode": "sleep"})
        w = Worker(["--queue", q], [H("exec.sh")], env={"MARKS": os.path.join(S["tmp"], "marks")})
        pid = mark_pid(id)
        wait_for(lambda: job(id)["state"] == "running", 5, "running")
        old_token = job(id)["token"]
        w.proc.kill()  # kill -9: no goodbye
        w.proc.wait()
        # its handler dies with it (PDEATHSIG), rather than run on unseen
        wait_for(lambda: not pid_alive(pid), 5, "the orphan handler to die")
        # the lease expires; another worker runs the job
        w2 = Worker(["--queue", q], ["/bin/sh", "-c", "cat >/dev/null; echo '\"second\"'"])
        try:
            j = wait_job(id, ("succeeded",), 20)
        finally:
            w2.stop()
        self.assertEqual((j["result"], j["attempts"]), ("second", 2))
        self.assertNotEqual(j["token"], old_token)
        # the dead worker's late ack, with its token, is refused
        status, body = api("POST", "/v1/jobs/%d/ack" % id, {"token": old_token}, expect=None)
        self.assertIn(status, (404, 409), body)
        self.assertEqual(job(id)["state"], "succeeded")

    def test_late_ack_with_a_stale_token_while_another_worker_runs_it(self):
        q = "rb-fence"
        set_queue(q, lease_ms=1500, backoff="fixed", backoff_base_ms=0)
        id = submit(q, {"mode": "short"})
        # a worker that leased it and died: simulated by a raw lease
        leased = api("POST", "/v1/lease", {"worker": "dead", "queues": [q], "max": 1})[1]["jobs"]
        old = leased[0]["token"]
        time.sleep(1.7)  # the lease expires
        w = Worker(["--queue", q], [H("exec.sh")])
        try:
            wait_for(lambda: job(id)["state"] in ("leased", "running"), 10, "re-leased")
            status, body = api("POST", "/v1/jobs/%d/ack" % id, {"token": old}, expect=None)
            self.assertEqual(status, 409, body)
            self.assertEqual(body["error"]["field"], "token")
            j = wait_job(id, ("succeeded",))
            self.assertEqual(j["result"], {"ok": 1})
        finally:
            self.assertEqual(w.stop(), 0)

    def test_graceful_stop_under_load(self):
        q = "rb-graceful"
        ids = [submit(q, {"mode": "short"}) for _ in range(60)]
        w = Worker(["--queue", q, "--concurrency", "8", "--grace", "10s"], [H("exec.sh")])
        wait_for(lambda: sum(1 for i in ids[:16] if job(i)["state"] == "succeeded") >= 4, 20,
                 "some jobs done")
        t0 = time.time()
        w.signal(signal.SIGTERM)
        self.assertEqual(w.proc.wait(15), 0)
        self.assertLess(time.time() - t0, 10)
        w.check_clean()
        states = [job(i) for i in ids]
        # nothing cut off, nothing left leased: every job is done or untouched
        for j in states:
            self.assertIn(j["state"], ("succeeded", "ready"), j)
            if j["state"] == "succeeded":
                self.assertEqual(j["attempts"], 1)
        self.assertIn("stopping: no more leases", w.log())
        # another worker finishes the rest: none was lost
        w2 = Worker(["--queue", q, "--concurrency", "8"], [H("exec.sh")])
        try:
            for i in ids:
                j = wait_job(i, ("succeeded",), 30)
                self.assertEqual(j["attempts"], 1)
        finally:
            self.assertEqual(w2.stop(), 0)

    def test_second_signal_exits_at_once(self):
        q = "rb-second"
        id = submit(q, {"mode": "sleep"})
        w = Worker(["--queue", q, "--grace", "30s"], [H("exec.sh")],
                   env={"MARKS": os.path.join(S["tmp"], "marks")})
        pid = mark_pid(id)
        w.signal(signal.SIGTERM)
        w.wait_log("stopping")
        t0 = time.time()
        w.signal(signal.SIGINT)
        self.assertEqual(w.proc.wait(5), 1)
        self.assertLess(time.time() - t0, 3)
        wait_for(lambda: not pid_alive(pid), 5, "the handler to die")
        w.check_clean()
        api("POST", "/v1/jobs/%d/cancel" % id)

    def test_slots_and_lanes_hold_with_several_workers(self):
        tenants = {"sl-a": 2, "sl-b": 3, "sl-c": 1}
        for t, n in tenants.items():
            api("PUT", "/v1/tenants/" + t, {"slots": n})
        record = os.path.join(S["tmp"], "record.txt")
        ids = {}
        jobs = []
        for i in range(150):
            t = list(tenants)[i % 3]
            q = "sl-q1" if i % 2 else "sl-q2"
            key = "k%d" % (i % 5) if i % 4 else None  # lanes, and jobs without a key
            kw = {"key": key} if key else {}
            jid = submit(q, {"i": i}, tenant=t, **kw)
            ids[jid] = (t, q, key)
            jobs.append(jid)
        env = {"RECORD": record}
        ws = [Worker(["--queue", "sl-q1", "--concurrency", "4"], [PY, H("record.py")], env=env),
              Worker(["--queue", "sl-q1", "--queue", "sl-q2", "--concurrency", "4"],
                     [PY, H("record.py")], env=env),
              Worker(["--queue", "sl-q2", "--lines", "--pool", "3"], [PY, H("record.py"), "lines"],
                     env=env)]
        try:
            for jid in jobs:
                self.assertEqual(wait_job(jid, ("succeeded",), 60)["state"], "succeeded")
        finally:
            for w in ws:
                self.assertEqual(w.stop(), 0)
        running = {t: 0 for t in tenants}
        lanes = {}
        started = {}
        peak = {t: 0 for t in tenants}
        with open(record) as f:
            lines = f.read().split("\n")[:-1]
        self.assertEqual(len(lines), 2 * len(jobs))
        for line in lines:
            what, jid, tenant, key, _ = line.split()
            jid = int(jid)
            _, q, k = ids[jid]
            lane = (tenant, q, k)
            if what == "start":
                running[tenant] += 1
                peak[tenant] = max(peak[tenant], running[tenant])
                self.assertLessEqual(running[tenant], tenants[tenant], line)
                if k:
                    self.assertNotIn(lane, lanes, "two jobs of a lane at once: " + line)
                    lanes[lane] = jid
                    # a lane starts its jobs in submission order
                    self.assertGreater(jid, started.get(lane, 0), line)
                    started[lane] = jid
            else:
                running[tenant] -= 1
                if k:
                    del lanes[lane]
        # the bound was reached: the test could have seen a violation
        self.assertEqual(peak["sl-b"], 3)

    def test_server_away_outcomes_kept_and_delivered(self):
        q = "rb-away"
        ids = [submit(q, {"mode": "short"}) for _ in range(3)]
        # slow handlers: the server goes away while they run
        w = Worker(["--queue", q, "--concurrency", "3"],
                   ["/bin/sh", "-c", "cat >/dev/null; sleep 1.5; echo '\"late\"'"])
        try:
            wait_for(lambda: all(job(i)["state"] == "running" for i in ids), 10, "running")
            stop_server()
            w.wait_log(r"cannot report \d outcome", timeout=10)
            time.sleep(0.5)
            start_server(S["port"])
            for i in ids:
                j = wait_job(i, ("succeeded",), 20)
                self.assertEqual((j["result"], j["attempts"]), ("late", 1))
        finally:
            if S["proc"].poll() is not None:
                start_server(S["port"])
            self.assertEqual(w.stop(), 0)
        self.assertIn("the server is back", w.log())


# ---- flags -------------------------------------------------------------------------------------

class FlagsTest(unittest.TestCase):

    def run_work(self, *args):
        return subprocess.run([BIN, "work"] + list(args), capture_output=True, text=True,
                              timeout=20)

    def test_help_and_usage_errors(self):
        r = self.run_work("--help")
        self.assertEqual(r.returncode, 0)
        for flag in ("--queue", "--type", "--concurrency", "--pool", "--lines", "--timeout",
                     "--max-rss", "--grace", "--server", "--worker-name", "--token",
                     "--status-file"):
            self.assertIn(flag, r.stdout)
        self.assertEqual(self.run_work("--", "true").returncode, 2)  # no queue
        self.assertEqual(self.run_work("--queue", "q").returncode, 2)  # no command
        self.assertEqual(self.run_work("--queue", "q", "--", "/nonexistent/x").returncode, 2)
        self.assertEqual(self.run_work("--queue", "q", "--timeout", "soon", "true").returncode, 2)
        r = self.run_work("--queue", "q", "--bogus", "true")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown flag --bogus", r.stderr)

    def test_types_worker_name_and_failover(self):
        q = "fl-types"
        a = submit(q, {"mode": "json"}, type="Wanted")
        b = submit(q, {"mode": "json"}, type="Other")
        dead = "http://127.0.0.1:%d" % harness.free_port()
        # a dead server first: the worker moves on to the live one
        w = Worker(["--server", S["url"], "--queue", q, "--type", "Wanted", "--worker-name",
                    "w-types"], [H("exec.sh")], url=dead)
        try:
            j = wait_job(a, ("succeeded",))
            self.assertEqual(j["worker"], "w-types")
            time.sleep(0.3)
            self.assertEqual(job(b)["state"], "ready")
        finally:
            self.assertEqual(w.stop(), 0)

    def test_refused_token_is_an_error(self):
        tmp = tempfile.mkdtemp(prefix="tenq-work-auth-")
        try:
            port_file = os.path.join(tmp, "port")
            env = dict(os.environ, TENQ_ADMIN_TOKEN="admin-secret-0123456789")
            p = subprocess.Popen([BIN, "serve", "--listen", "127.0.0.1:0", "--store",
                                  "sqlite:" + os.path.join(tmp, "t.db"), "--port-file",
                                  port_file], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, env=env)
            try:
                wait_for(lambda: os.path.exists(port_file) and open(port_file).read().strip())
                url = "http://127.0.0.1:" + open(port_file).read().strip()
                r = subprocess.run([BIN, "work", "--server", url, "--token", "wrong", "--queue",
                                    "q", "--", "true"], capture_output=True, text=True,
                                   timeout=20)
                self.assertEqual(r.returncode, 1)
                self.assertIn("refuses leases", r.stderr)
            finally:
                p.send_signal(signal.SIGTERM)
                p.wait(20)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
