# SPDX-License-Identifier: Apache-2.0
"""Joins w2_syscalls.sh's system call stamps with the driver's per-job dump:
for each submit, the segments of its pickup, then the medians and 90th
percentiles of each segment over the run (µs).

    pre      the driver's submit time -> its send (building the request)
    wake     the send -> the server's epoll_wait returns
    read     -> the server's read of the submit returns
    handler  the read -> the server's write to the woken worker begins
    worker   the write -> the worker's poll (tenq before 2026-11-24) or read returns
    recv     the worker's poll -> its read returns (0 when it blocks in read)
    post     the read -> the driver's start time (parsing the answer)
"""
import bisect
import re
import sys

EV = re.compile(r"@ev\[(\d+), (\d+)\]: \((\d+), (\d+), (\d+), (-?\d+), (-?\d+)\)")
SEGMENTS = ("pre", "wake", "read", "handler", "worker", "recv", "post", "total")


def load(base):
    ev = []
    for line in open(base + ".trace"):
        m = EV.match(line)
        if m:
            ts, tid, kind, pid, cpu, fd, ret = map(int, m.groups())
            ev.append((ts, kind, pid, tid, cpu, fd, ret))
    ev.sort()
    dump = [tuple(map(float, line.split())) for line in open(base + ".dump")]
    srv, drv = map(int, open(base + ".pids").read().split())
    return ev, dump, srv, drv


def analyse(base):
    ev, dump, srv, drv = load(base)
    # the submits: sends by the driver's main thread to a socket
    subs = [e for e in ev if e[1] == 1 and e[2] == drv and e[3] == drv and e[5] > 2]
    times = [e[0] for e in ev]
    rows = []
    for i, s in enumerate(subs):
        nxt = subs[i + 1][0] if i + 1 < len(subs) else 1 << 62
        j = bisect.bisect_right(times, s[0])

        def first(pred, after):
            for e in ev[j:]:
                if e[0] >= nxt:
                    return None
                if e[0] > after and pred(e):
                    return e
            return None

        woke = first(lambda e: e[1] == 3 and e[2] == srv, s[0])
        got = first(lambda e: e[1] == 2 and e[2] == srv, s[0])
        if not woke or not got:
            continue
        out = first(lambda e: e[1] == 1 and e[2] == srv and e[5] != got[5] and e[5] > 3, got[0])
        if not out:
            continue
        poll = first(lambda e: e[1] == 3 and e[2] == drv and e[3] != drv, out[0])
        read = first(lambda e: e[1] == 2 and e[2] == drv and e[3] != drv, out[0])
        if not read:
            continue
        if not poll or poll[0] > read[0]:
            poll = read
        rows.append({"i": i, "wake": (woke[0] - s[0]) / 1e3, "read": (got[0] - woke[0]) / 1e3,
                     "handler": (out[0] - got[0]) / 1e3, "worker": (poll[0] - out[0]) / 1e3,
                     "recv": (read[0] - poll[0]) / 1e3, "end": read[0],
                     "same_cpu": read[4] == got[4]})
    # the dump's submit time (ms) is at or before its send
    send_at = [e[0] for e in subs]
    by_send = {}
    for sub_ms, lat_ms in dump:
        by_send[bisect.bisect_left(send_at, sub_ms * 1e6)] = (sub_ms, lat_ms)
    for r in rows:
        d = by_send.get(r["i"])
        if d:
            r["pre"] = subs[r["i"]][0] / 1e3 - d[0] * 1e3
            r["post"] = (d[0] + d[1]) * 1e3 - r["end"] / 1e3
            r["total"] = d[1] * 1e3
    return rows


def pct(v, q):
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def cells(rows, qs):
    """Each segment's percentiles qs over rows, and the share whose worker
    ran on the server's CPU."""
    out = []
    for k in SEGMENTS:
        v = sorted(r[k] for r in rows if k in r)
        out.append(f"{k} " + "/".join(f"{pct(v, q):.0f}" for q in qs))
    return "  ".join(out), sum(r["same_cpu"] for r in rows) / max(len(rows), 1)


def main():
    for base in sys.argv[1:]:
        rows = analyse(base)
        name = "tenq-sqlite" if base.rsplit("/", 1)[-1].startswith("t") else "beanstalkd"
        text, same = cells(rows, (.5, .9))
        print(f"{name:12s} n={len(rows)} worker on the server's CPU {same:.0%}")
        print("    " + text)
        # the slowest 5 % of pickups: each segment's median among them
        slow = sorted((r for r in rows if "total" in r), key=lambda r: r["total"])
        slow = slow[int(len(slow) * 0.95):]
        text, same = cells(slow, (.5,))
        print(f"    slowest 5 % (n={len(slow)}, {same:.0%} on the server's CPU), medians: " + text)

if __name__ == "__main__":
    main()
