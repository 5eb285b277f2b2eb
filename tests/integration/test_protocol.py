# SPDX-License-Identifier: Apache-2.0
"""tenq serve over real sockets: protocol abuse and the limits that meet it;
connections read and written in pieces, pipelined requests."""
import json
import sys
import os
import re
import socket
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import ServerTest, raw_socket, read_until_closed, main  # noqa: E402

ROUTER_C = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "api",
                        "router.c")


def route_table():
    """The server's routes as its one table (src/api/router.c) lists them:
    (method, pattern, the query parameters it takes, or None for any, and
    whether it reads a JSON body). A route added there is covered here."""
    with open(ROUTER_C) as f:
        text = f.read()
    start = text.index("static const route routes[] = {")
    table = text[start:text.index("\n};", start)]
    rows = re.findall(r'\{\s*"([A-Z]+)",\s*"([^"]+)",\s*(\w+),\s*([^,{}]+?)'
                      r'(?:,\s*("[^"]*"|ANY_QUERY))?(?:,\s*(\w+))?\s*\}', table)
    if len(rows) != table.count("{\"") or not rows:
        raise AssertionError("router.c's route table did not parse: %d rows" % len(rows))
    out = []
    for method, pattern, _fn, _roles, query, body in rows:
        names = None if query == "ANY_QUERY" else query.strip('"').split() if query else []
        out.append((method, pattern, names, body == "BODY_JSON"))
    return out


class Protocol(ServerTest):
    server_args = ("--header-timeout", "1500ms", "--body-timeout", "1500ms",
                   "--idle-timeout", "2s", "--max-connections", "12",
                   "--max-header-bytes", "4KiB", "--max-headers", "20",
                   "--max-batch-bytes", "64KiB", "--max-job-bytes", "8KiB")

    def test_a_body_that_never_completes_times_out(self):
        t0 = time.time()
        out = raw_socket(self.srv.port, b"POST /v1/jobs HTTP/1.1\r\nContent-Length: 50\r\n\r\n{\"te",
                         read_timeout=6)
        self.assertTrue(out.startswith(b"HTTP/1.1 408"), out[:80])
        self.assertLess(time.time() - t0, 5)

    def test_idle_connections_are_closed(self):
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=6)
        t0 = time.time()
        self.assertEqual(s.recv(100), b"")  # closed by the server, nothing sent
        self.assertGreater(time.time() - t0, 1.5)
        self.assertLess(time.time() - t0, 5)
        s.close()

    def test_connections_beyond_the_cap_are_refused_politely(self):
        held = [socket.create_connection(("127.0.0.1", self.srv.port)) for _ in range(14)]
        try:
            time.sleep(0.2)
            last = held[-1]
            last.settimeout(2)
            data = last.recv(200)
            self.assertTrue(data.startswith(b"HTTP/1.1 503"), data)
        finally:
            for h in held:
                h.close()
        time.sleep(0.2)
        self.assertEqual(self.srv.req("GET", "/healthz", conn="after")[0], 200)

    def test_oversized_body_is_413(self):
        status, body = self.srv.req("POST", "/v1/jobs",
                                    b'{"jobs":[' + b'{"a":1},' * 20000 + b'{}]}')
        self.assertEqual(status, 413)

    def test_oversized_and_too_many_headers_are_431(self):
        out = raw_socket(self.srv.port, b"GET /healthz HTTP/1.1\r\nX-Big: " + b"a" * 5000 +
                         b"\r\n\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 431"), out[:80])
        hdrs = b"".join(b"X-%d: y\r\n" % i for i in range(25))
        out = raw_socket(self.srv.port, b"GET /healthz HTTP/1.1\r\n" + hdrs + b"\r\n")
        self.assertTrue(out.startswith(b"HTTP/1.1 431"), out[:80])

    def test_smuggling_shapes_are_refused_and_the_connection_closed(self):
        both = (b"POST /v1/jobs HTTP/1.1\r\nContent-Length: 4\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n")
        out = raw_socket(self.srv.port, both)
        self.assertTrue(out.startswith(b"HTTP/1.1 400"), out[:80])
        self.assertEqual(out.count(b"HTTP/1.1 "), 1)  # nothing after: closed
        self.assertIn(b"Connection: close", out)
        two = (b"POST /v1/jobs HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\n"
               b"{}{}{")
        out = raw_socket(self.srv.port, two)
        self.assertTrue(out.startswith(b"HTTP/1.1 400"), out[:80])
        self.assertEqual(out.count(b"HTTP/1.1 "), 1)
        folded = b"GET /healthz HTTP/1.1\r\nX-A: 1\r\n continued\r\n\r\n"
        self.assertTrue(raw_socket(self.srv.port, folded).startswith(b"HTTP/1.1 400"))
        te = b"POST /v1/jobs HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
        self.assertTrue(raw_socket(self.srv.port, te).startswith(b"HTTP/1.1 501"))

    def test_bad_request_lines(self):
        for line, code in [(b"GARBAGE\r\n\r\n", b"400"), (b"GET / HTTP/2.0\r\n\r\n", b"505"),
                           (b"GET nopath HTTP/1.1\r\n\r\n", b"400"),
                           (b"G@T / HTTP/1.1\r\n\r\n", b"400"),
                           # a third word, or a space in the target: malformed, not a version
                           (b"GET / HTTP/1.1 extra\r\n\r\n", b"400"),
                           (b"GET /a b HTTP/1.1\r\n\r\n", b"400"),
                           (b"GET / HTTP/1.1x\r\n\r\n", b"400"),
                           (b"GET / HTTP/1.2\r\n\r\n", b"505")]:
            out = raw_socket(self.srv.port, line)
            self.assertTrue(out.startswith(b"HTTP/1.1 " + code), (line, out[:60]))

    def test_a_half_closed_client_gets_every_answer_then_the_close(self):
        """A client that sends its requests and then shutdown(SHUT_WR) is
        answered (a submit waits for its commit meanwhile), every pipelined
        request in order, and the last answer says it closes."""
        def submit(queue):
            body = json.dumps({"tenant": "acme", "queue": queue, "type": "T"}).encode()
            return (b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                    % len(body)) + body

        for requests, n in [(submit("hc-one"), 1),
                            (submit("hc-two") + submit("hc-two") +
                             b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 3)]:
            s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=10)
            try:
                s.sendall(requests)
                s.shutdown(socket.SHUT_WR)
                out = read_until_closed(s)
            finally:
                s.close()
            self.assertEqual(out.count(b"HTTP/1.1 "), n, out)
            self.assertTrue(out.startswith(b"HTTP/1.1 201"), out[:80])
            self.assertEqual(out.count(b"Connection: close"), 1, out)
        counts = {q["name"]: q for q in self.srv.ok("GET", "/v1/stats")["queues"]}
        self.assertEqual((counts["hc-one"]["ready"], counts["hc-two"]["ready"]), (1, 2))
        # a request cut short by the half-close is not answered (nor made): closed
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=10)
        s.sendall(submit("hc-cut")[:-3])
        s.shutdown(socket.SHUT_WR)
        self.assertEqual(read_until_closed(s), b"")
        s.close()

    def test_a_long_poll_ends_when_its_client_half_closes(self):
        """End of input during a long poll counts as the client gone (a
        closed socket looks the same): it is handed no job."""
        body = json.dumps({"worker": "w", "queues": ["hc-poll"], "wait_ms": 30000}).encode()
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=10)
        s.sendall(b"POST /v1/lease HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                  % len(body) + body)
        time.sleep(0.3)  # the poll waits
        s.shutdown(socket.SHUT_WR)
        t0 = time.time()
        self.assertEqual(read_until_closed(s), b"")
        self.assertLess(time.time() - t0, 5)
        s.close()
        job = self.srv.submit(queue="hc-poll")
        time.sleep(0.2)
        self.assertEqual(self.srv.job(job["id"])["state"], "ready")

    def test_chunked_bodies_expect_continue_and_pipelining(self):
        body = json.dumps({"tenant": "acme", "queue": "pr", "type": "T"}).encode()
        chunked = (b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                   b"%x\r\n" % 10 + body[:10] + b"\r\n" + b"%x\r\n" % (len(body) - 10) +
                   body[10:] + b"\r\n0\r\n\r\n")
        pipelined = chunked + b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        out = raw_socket(self.srv.port, pipelined)
        self.assertTrue(out.startswith(b"HTTP/1.1 201"), out[:80])
        self.assertIn(b"HTTP/1.1 200", out[12:])  # the second answer, in order
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=5)
        s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
                  b"Expect: 100-continue\r\n\r\n" % len(body))
        self.assertTrue(s.recv(100).startswith(b"HTTP/1.1 100 Continue"))
        s.sendall(body)
        self.assertTrue(s.recv(1000).startswith(b"HTTP/1.1 201"))
        s.close()

    def test_a_slow_client_is_closed_while_others_are_served(self):
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=10)
        closed_at = None
        t0 = time.time()
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
        for i, byte in enumerate(request):
            try:
                s.send(bytes([byte]))
            except OSError:
                closed_at = time.time() - t0
                break
            # meanwhile another client is served at once
            if i == 2:
                t1 = time.time()
                self.assertEqual(self.srv.req("GET", "/healthz", conn="fast")[0], 200)
                self.assertLess(time.time() - t1, 0.5)
            s.settimeout(0.25)
            try:
                data = s.recv(1000)
                if data == b"" or data.startswith(b"HTTP/1.1 408"):
                    closed_at = time.time() - t0
                    break
            except socket.timeout:
                pass
        s.close()
        self.assertIsNotNone(closed_at, "the slow client was never closed")
        self.assertLess(closed_at, 5)

    def test_idle_keep_alive_connections_survive_between_requests(self):
        for _ in range(3):
            self.assertEqual(self.srv.req("GET", "/healthz", conn="ka")[0], 200)


def split_answers(data):
    """HTTP/1.1 answers one after another in data (each with a
    Content-Length): [(status, body bytes)], and the bytes left over."""
    out = []
    while data:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            break
        head = data[:end].decode()
        length = 0
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.lower() == "content-length":
                length = int(value)
        if len(data) < end + 4 + length:
            break
        out.append((int(head.split(" ")[1]), data[end + 4:end + 4 + length]))
        data = data[end + 4 + length:]
    return out, data


class ConnectionIO(ServerTest):
    """The server's own reads and writes: a body far larger than its read
    buffer arriving in pieces, pipelining past that buffer, a reply the
    client reads late, and one it never reads."""
    server_args = ("--write-timeout", "1500ms")
    PAD = "x" * 8000

    def batch(self, queue, n=1000):
        return {"jobs": [{"tenant": "acme", "queue": queue, "type": "T",
                          "args": {"pad": self.PAD, "i": i}} for i in range(n)]}

    def connections(self):
        _, text = self.srv.req("GET", "/metrics")
        return int(text.split("\ntenq_http_connections ")[1].split()[0])

    def test_a_large_body_in_pieces_then_a_pipelined_request(self):
        body = json.dumps(self.batch("io-big")).encode()  # about 8 MB
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=30)
        s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body[:100])
        cuts = [100, 5000, 70000, 3000000, 6000000, len(body) - 7]
        for a, b in zip(cuts, cuts[1:]):
            time.sleep(0.05)
            s.sendall(body[a:b])
        s.sendall(body[-7:] + b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answers, rest = split_answers(read_until_closed(s))
        s.close()
        self.assertEqual([a[0] for a in answers], [201, 200], answers[:1])
        self.assertEqual(rest, b"")
        ids = [j["id"] for j in json.loads(answers[0][1])["jobs"]]
        self.assertEqual(len(set(ids)), 1000)
        page = self.srv.ok("GET", "/v1/jobs?queue=io-big&limit=1000")["jobs"]
        self.assertEqual(sorted(j["args"]["i"] for j in page), list(range(1000)))
        self.assertTrue(all(j["args"]["pad"] == self.PAD for j in page))

    def test_pipelined_requests_past_the_read_buffer_are_answered_in_order(self):
        # 4,000 requests in one send: about 130 KB, past the 80 KiB the server
        # buffers while a request is handled
        reqs, want = [], []
        for i in range(4000):
            path = b"/nope" if i % 3 == 2 else b"/healthz"
            reqs.append(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
            want.append(404 if i % 3 == 2 else 200)
        reqs.append(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        want.append(200)
        answers, rest = split_answers(raw_socket(self.srv.port, b"".join(reqs), read_timeout=20))
        self.assertEqual([a[0] for a in answers], want)
        self.assertEqual(rest, b"")

    def late_reader(self, queue):
        self.srv.ok("POST", "/v1/jobs", self.batch(queue))
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(30)
        s.connect(("127.0.0.1", self.srv.port))
        s.sendall(b"GET /v1/jobs?queue=" + queue.encode() + b"&limit=1000 HTTP/1.1\r\n"
                  b"Host: x\r\nConnection: close\r\n\r\n")
        return s

    def test_a_reply_read_late_arrives_whole_and_others_are_served_meanwhile(self):
        s = self.late_reader("io-late")
        time.sleep(0.8)  # the 8 MB page waits in the server for the socket
        t0 = time.time()
        self.assertEqual(self.srv.req("GET", "/healthz", conn="other")[0], 200)
        self.assertLess(time.time() - t0, 0.5)
        answers, rest = split_answers(read_until_closed(s))
        s.close()
        self.assertEqual(len(answers), 1)
        self.assertEqual(answers[0][0], 200)
        self.assertEqual(rest, b"")
        self.assertEqual(len(json.loads(answers[0][1])["jobs"]), 1000)

    def test_a_reply_nobody_reads_is_dropped_after_the_write_timeout(self):
        base = self.connections()
        s = self.late_reader("io-never")
        time.sleep(0.3)
        self.assertEqual(self.connections(), base + 1)
        deadline = time.time() + 6
        while self.connections() > base and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(self.connections(), base)  # gone after 1.5 s without progress
        got = read_until_closed(s)
        s.close()
        answers, _ = split_answers(got)
        self.assertEqual(answers, [])  # cut short: never a whole answer
        self.assertTrue(got.startswith(b"HTTP/1.1 200"), got[:40])


ROUTE_ADMIN = "admin-secret-for-the-route-table-0001"


class EveryRoute(ServerTest):
    """Every route of the table, called with what it does not read: a query
    parameter it does not take, a body member it does not know, a body that
    is not an object. Each is refused (400 naming the parameter or member)
    and changes nothing; the world is read again after each route."""
    server_env = {"TENQ_ADMIN_TOKEN": ROUTE_ADMIN}

    # A real thing for each {} of a pattern, by the segment before it (made
    # in setUpClass); a new kind of segment needs one here.
    # The body each route would take (absent: {}), so that the only fault
    # of a request is the one added; and a query it needs (a wait that
    # would otherwise wait).
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        srv = cls.srv

        def ok(method, path, body=None):
            return srv.ok(method, path, body, ROUTE_ADMIN)
        ok("PUT", "/v1/queues/rq", {"lease_ms": 600000, "max_attempts": 1})
        dead = ok("POST", "/v1/jobs", {"tenant": "acme", "queue": "rq", "type": "T"})["id"]
        j = srv.lease(["rq"], token=ROUTE_ADMIN)[0]
        srv.fail(j, ROUTE_ADMIN, error="boom")
        ok("POST", "/v1/jobs", {"tenant": "acme", "queue": "rq", "type": "T"})
        held = ok("POST", "/v1/jobs", {"tenant": "acme", "queue": "rq", "type": "T"})["id"]
        leased = srv.lease(["rq"], token=ROUTE_ADMIN)[0]
        ok("POST", "/v1/jobs", {"tenant": "acme", "queue": "rq", "type": "T", "key": "k1"})
        ok("PUT", "/v1/schedules/rs", {"cron": "0 0 1 1 *", "job": {
            "tenant": "acme", "queue": "rq", "type": "T"}})
        batch = ok("POST", "/v1/batches", {"tenant": "acme", "jobs": [
            {"queue": "other", "type": "T"}]})["id"]
        token = ok("POST", "/v1/tokens", {"role": "worker"})["id"]
        assert dead != held
        cls.fill = {"jobs": leased["id"], "tenants": "acme", "queues": "rq", "schedules": "rs",
                    "batches": batch, "morgue": dead, "tokens": token, "ui": "app.js"}
        tok = leased["token"]
        cls.bodies = {
            ("POST", "/v1/jobs"): {"tenant": "acme", "queue": "rq", "type": "T"},
            ("POST", "/v1/jobs/bulk"): {"action": "set_priority", "priority": 5, "queue": "rq"},
            ("POST", "/v1/lease"): {"queues": ["rq"], "max": 5},
            ("POST", "/v1/jobs/{}/start"): {"token": tok},
            ("POST", "/v1/jobs/{}/heartbeat"): {"token": tok, "progress": 0.5},
            ("POST", "/v1/jobs/{}/ack"): {"token": tok},
            ("POST", "/v1/jobs/{}/fail"): {"token": tok, "error": "x"},
            ("POST", "/v1/outcomes"): {"outcomes": [{"id": leased["id"], "token": tok,
                                                     "ok": True}]},
            ("PUT", "/v1/tenants/{}"): {"weight": 3},
            ("PUT", "/v1/queues/{}"): {"max_attempts": 7},
            ("PUT", "/v1/schedules/{}"): {"cron": "0 0 2 1 *", "job": {
                "tenant": "acme", "queue": "rq", "type": "T2"}},
            ("POST", "/v1/batches"): {"tenant": "acme", "jobs": [{"queue": "rq", "type": "T"}]},
            ("POST", "/v1/batches/{}/jobs"): {"jobs": [{"queue": "rq", "type": "T"}]},
            ("POST", "/v1/morgue/requeue"): {"queue": "rq"},
            ("POST", "/v1/morgue/delete"): {"queue": "rq"},
            ("POST", "/v1/tokens"): {"role": "worker"},
        }
        cls.queries = {("GET", "/v1/jobs/{}/wait"): "timeout_ms=0"}

    def req(self, method, path, body=None):
        return self.srv.req(method, path, body, ROUTE_ADMIN)

    def world(self):
        """Everything a request could change, as the API shows it (less
        what moves by itself: rates, lag, the clock)."""
        def strip(v):
            if isinstance(v, dict):
                return {k: strip(x) for k, x in v.items() if k not in (
                    "lag_ms", "completed_per_s", "failed_per_s", "rate_limited_until")}
            if isinstance(v, list):
                return [strip(x) for x in v]
            return v
        got = {}
        for path in ("/v1/jobs?limit=1000", "/v1/queues", "/v1/tenants", "/v1/schedules",
                     "/v1/tokens", "/v1/morgue?limit=1000", "/v1/batches", "/v1/lanes"):
            got[path] = strip(self.srv.ok("GET", path, token=ROUTE_ADMIN))
        got["totals"] = strip(self.srv.ok("GET", "/v1/stats", token=ROUTE_ADMIN)["totals"])
        return got

    def path_for(self, pattern):
        segs = pattern.split("/")
        for i, s in enumerate(segs):
            if s == "{}":
                if segs[i - 1] not in self.fill:
                    self.fail("no test value for the {} of %s: add one to EveryRoute.fill" %
                              pattern)
                segs[i] = str(self.fill[segs[i - 1]])
        return "/".join(segs)

    def test_every_route_refuses_what_it_does_not_read_and_changes_nothing(self):
        routes = route_table()
        self.assertGreater(len(routes), 40)
        before = self.world()
        for method, pattern, query, _reads_body in routes:
            with self.subTest(route=method + " " + pattern):
                path = self.path_for(pattern)
                q = self.queries.get((method, pattern))
                body = self.bodies.get((method, pattern), {} if method != "GET" else None)
                tries = []
                if query is not None:  # a query parameter it does not take
                    tries.append((path + "?" + (q + "&" if q else "") + "bogus_param=1", body,
                                  "bogus_param"))
                if q:
                    path += "?" + q
                # a member it does not know, and bodies that are no object
                tries.append((path, dict(body or {}, bogus_field=1), "bogus_field"))
                for bad in ("[]", '"now"', "1", "null", "[{}]"):
                    tries.append((path, bad, None))
                for p, b, field in tries:
                    st, ans = self.req(method, p, b)
                    said = "%s %s %r -> %d %.300r" % (method, p, b, st, ans)
                    self.assertEqual(st, 400, said)
                    self.assertEqual(ans["error"]["code"], "invalid", said)
                    if field:
                        self.assertEqual(ans["error"].get("field"), field, said)
                after, before = before, self.world()
                self.assertEqual(before, after, method + " " + pattern)


if __name__ == "__main__":
    main()
