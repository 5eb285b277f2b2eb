#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the peer comparison benchmark: the same workloads on several job queues.

    python3 bench/peers/run.py [--quick] [--runs N] [--only SYS,SYS] [--workloads W1,W2,...]
                               [--out results.json] [--md table.md] [--merge] [--baseline SYS]

Every (system, workload, run) gets fresh private servers on free loopback
ports with their data in a temporary folder; they are stopped by pid when the
run ends, even on error. A system is a plug-in (a class below, or one in
bench/peers/plugins/*.py) that starts its servers and names a driver command;
the driver prints one JSON object (the contract is in bench/peers/README.md).
Standard library only.
"""
import argparse
import datetime
import glob
import importlib.util
import json
import os
import platform
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


# --------------------------------------------------------------- helpers
def log(*a):
    print("[peers]", *a, file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, proc=None, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def stop_pid(proc, timeout=15):
    """Stops a process we started, by its pid: SIGTERM, then SIGKILL."""
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.terminate()
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def dpkg_version(pkg):
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True)
        return out.stdout.strip() or None
    except OSError:
        return None


def npm_version(pkg):
    try:
        with open(os.path.join(HERE, "node", "node_modules", pkg, "package.json")) as f:
            return json.load(f)["version"]
    except OSError:
        return None


def redis_cmd(port, *args):
    """One command with the RESP protocol, answer decoded loosely (for CONFIG GET, PING)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        req = f"*{len(args)}\r\n" + "".join(f"${len(a.encode())}\r\n{a}\r\n" for a in args)
        s.sendall(req.encode())
        s.settimeout(5)
        data = b""
        while not data.endswith(b"\r\n"):
            data += s.recv(65536)
        time.sleep(0.02)
        s.setblocking(False)
        try:
            data += s.recv(65536)
        except BlockingIOError:
            pass
        return [x for x in data.decode(errors="replace").split("\r\n") if x and x[0] not in "*$"]


def psql_show(url, *names):
    psql = shutil.which("psql")
    if not psql:
        return {}
    out = {}
    for n in names:
        r = subprocess.run([psql, url, "-XAtc", f"show {n}"], capture_output=True, text=True)
        out[n] = r.stdout.strip()
    return out


# --------------------------------------------------------------- plug-ins
class System:
    """A queue under test. Subclasses start their servers and name their driver.

    name        the system's name (column in the results)
    driver()    argv of the driver (the runner appends --workload, --url, sizes)
    start(dir)  starts the servers with their data in dir, returns the URL given to the driver
    stop()      stops every server it started (by pid); called even after errors
    pids()      pids whose resident memory is the system's memory (MEM workload); [] if n/a
    durability(url)  one sentence saying what survives a crash, read from the running server
    versions()  {package: version}
    available() None when it can run here, else the reason
    """
    name = "?"
    family = ""
    # the workloads its driver runs (W6, the keyed limit, is newer than some drivers)
    workloads = {"W1", "W2", "W3", "W4", "W5", "MEM", "W6"}

    def available(self):
        return None

    def versions(self):
        return {}

    def pids(self):
        return []

    def durability(self, url):
        return ""

    def start(self, tmpdir):
        raise NotImplementedError

    def stop(self):
        pass

    def driver(self):
        raise NotImplementedError


class Beanstalkd(System):
    family = "beanstalkd"
    workloads = System.workloads - {"W6"}

    def __init__(self, name, binlog):
        self.name = name
        self.binlog = binlog
        self.proc = None

    def available(self):
        if not shutil.which("beanstalkd"):
            return "beanstalkd is not installed (bench/peers/setup.sh)"
        if not os.access(os.path.join(HERE, "beanstalk", "bs_bench"), os.X_OK):
            return "bench/peers/beanstalk/bs_bench is not built (bench/peers/setup.sh)"
        return None

    def versions(self):
        return {"beanstalkd": dpkg_version("beanstalkd")}

    def start(self, tmpdir):
        port = free_port()
        cmd = ["beanstalkd", "-l", "127.0.0.1", "-p", str(port)]
        if self.binlog:
            bdir = os.path.join(tmpdir, "binlog")
            os.makedirs(bdir)
            cmd += ["-b", bdir, "-f", "50"]
        self.logf = open(os.path.join(tmpdir, "beanstalkd.log"), "w")
        self.proc = subprocess.Popen(cmd, stdout=self.logf, stderr=subprocess.STDOUT, start_new_session=True)
        wait_port(port, self.proc)
        return f"beanstalk://127.0.0.1:{port}"

    def stop(self):
        stop_pid(self.proc)
        self.proc = None

    def pids(self):
        return [self.proc.pid] if self.proc else []

    def durability(self, url):
        if self.binlog:
            return "binlog on (-b DIR -f 50): written at once, fsync at most every 50 ms"
        return "in memory only (no binlog): a restart loses every job"

    def driver(self):
        return [os.path.join(HERE, "beanstalk", "bs_bench"), "--system", self.name]


class RedisBacked(System):
    """Sidekiq and BullMQ: a private redis-server, in memory (RDB and AOF off)."""

    def __init__(self):
        self.proc = None
        self.port = None

    def available(self):
        if not shutil.which("redis-server"):
            return "redis-server is not installed (bench/peers/setup.sh)"
        return None

    def start(self, tmpdir):
        self.port = free_port()
        cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", tmpdir,
               "--save", "", "--appendonly", "no", "--daemonize", "no",
               "--logfile", os.path.join(tmpdir, "redis.log")]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        wait_port(self.port, self.proc)
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self):
        stop_pid(self.proc)
        self.proc = None

    def pids(self):
        return [self.proc.pid] if self.proc else []

    def durability(self, url):
        try:
            aof = redis_cmd(self.port, "CONFIG", "GET", "appendonly")[-1]
            save = redis_cmd(self.port, "CONFIG", "GET", "save")
            save = save[-1] if len(save) > 1 else ""
        except (OSError, IndexError):
            aof, save = "?", "?"
        return (f"Redis appendonly {aof} (the default), RDB snapshots off (save '{save}'): "
                "in memory only, a restart loses every job")


class Sidekiq(RedisBacked):
    name = "sidekiq"
    family = "redis"
    workloads = System.workloads - {"W6"}

    def available(self):
        return super().available() or (None if shutil.which("sidekiq") and shutil.which("ruby")
                                       else "ruby-sidekiq is not installed (bench/peers/setup.sh)")

    def versions(self):
        return {"ruby-sidekiq": dpkg_version("ruby-sidekiq"), "ruby-redis": dpkg_version("ruby-redis"),
                "redis-server": dpkg_version("redis-server"), "ruby": dpkg_version("ruby3.1")}

    def driver(self):
        return ["ruby", os.path.join(HERE, "sidekiq", "driver.rb"), "--system", self.name]


class NodeSystem(System):
    def available(self):
        if not shutil.which("node"):
            return "node is not installed"
        if not os.path.isdir(os.path.join(HERE, "node", "node_modules")):
            return "bench/peers/node/node_modules is missing (bench/peers/setup.sh)"
        return None

    def driver(self):
        return ["node", os.path.join(HERE, "node", "driver.js"), "--system", self.name]


class BullMQ(RedisBacked, NodeSystem):
    name = "bullmq"
    family = "redis"

    def available(self):
        return RedisBacked.available(self) or NodeSystem.available(self)

    def versions(self):
        return {"bullmq": npm_version("bullmq"), "ioredis": npm_version("ioredis"),
                "redis-server": dpkg_version("redis-server"), "node": platform_node()}

    def driver(self):
        return NodeSystem.driver(self)


def platform_node():
    try:
        return subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return None


class PgBacked(NodeSystem):
    """graphile-worker and pg-boss: a private PostgreSQL (scripts/pgtmp.sh)."""
    family = "postgresql"

    def __init__(self):
        self.dir = None

    def available(self):
        if not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
            return "PostgreSQL is not installed (bench/peers/setup.sh)"
        return NodeSystem.available(self)

    def start(self, tmpdir):
        os.chmod(tmpdir, 0o755)  # as root, pgtmp.sh runs the server as the user tenqpg
        self.dir = os.path.join(tmpdir, "pg")
        r = subprocess.run(["sh", os.path.join(REPO, "scripts", "pgtmp.sh"), "start", self.dir],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"pgtmp.sh start failed: {r.stderr.strip()[-500:]}")
        return r.stdout.strip()

    def stop(self):
        if self.dir:
            subprocess.run(["sh", os.path.join(REPO, "scripts", "pgtmp.sh"), "stop", self.dir],
                           capture_output=True)
            self.dir = None

    def durability(self, url):
        s = psql_show(url, "synchronous_commit", "fsync", "shared_buffers", "server_version")
        return (f"PostgreSQL {s.get('server_version', '?')}: synchronous_commit={s.get('synchronous_commit', '?')}, "
                f"fsync={s.get('fsync', '?')} (the defaults; every commit is flushed), "
                f"shared_buffers={s.get('shared_buffers', '?')}")

    def versions(self):
        return {self.name: npm_version(self.name), "pg": npm_version("pg"),
                "postgresql": dpkg_version("postgresql-15") or dpkg_version("postgresql"), "node": platform_node()}


class GraphileWorker(PgBacked):
    name = "graphile-worker"


class PgBoss(PgBacked):
    name = "pg-boss"


SYSTEMS = {}


def register(system):
    """Plug-ins call this (bench/peers/plugins/*.py: def register_systems(register, base))."""
    SYSTEMS[system.name] = system


for s in (Beanstalkd("beanstalkd", False), Beanstalkd("beanstalkd-binlog", True),
          Sidekiq(), GraphileWorker(), PgBoss(), BullMQ()):
    register(s)

DEFAULT_ORDER = ["beanstalkd", "beanstalkd-binlog", "sidekiq", "graphile-worker", "pg-boss", "bullmq"]


def load_plugins():
    import types
    # plug-ins load in name order; one may leave a class here for later ones
    # (tenq.py leaves Tenq, which the client libraries' plug-ins extend)
    base = types.SimpleNamespace(System=System, RedisBacked=RedisBacked, Sidekiq=Sidekiq, free_port=free_port,
                                 wait_port=wait_port, stop_pid=stop_pid, dpkg_version=dpkg_version,
                                 psql_show=psql_show, REPO=REPO, HERE=HERE)
    for path in sorted(glob.glob(os.path.join(HERE, "plugins", "*.py"))):
        spec = importlib.util.spec_from_file_location("peers_plugin_" + os.path.basename(path)[:-3], path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if hasattr(mod, "register_systems"):
            mod.register_systems(register, base)


# --------------------------------------------------------------- workloads
# metric: (json key, label, better) ; better is "high" or "low"
METRICS = {
    "W1": [("enqueue_jobs_per_s", "enqueue jobs/s", "high"), ("drain_jobs_per_s", "drain jobs/s", "high"),
           ("ms_per_job", "ms/job", "low")],
    "W2": [("p50_ms", "p50 ms", "low"), ("p90_ms", "p90 ms", "low"), ("p99_ms", "p99 ms", "low"),
           ("max_ms", "max ms", "low")],
    "W3": [("b_wait_p50_ms", "B wait p50 ms", "low"), ("b_wait_p99_ms", "B wait p99 ms", "low"),
           ("total_jobs_per_s", "all jobs/s", "high"),
           ("a_max_running", "A's most at once (limit 3)", "low")],
    "W4": [("jobs_per_s", "jobs/s", "high"), ("order_violations", "order violations", "low")],
    "W6": [("jobs_per_s", "jobs/s", "high"), ("max_at_once", "most of one account at once", "low"),
           ("over_limit", "starts over the limit", "low")],
    "W5": [("fill_jobs_per_s", "fill jobs/s", "high"), ("drain_jobs_per_s", "drain jobs/s", "high"),
           ("measured_jobs", "jobs measured", "")],
    "MEM": [("rss_bytes_per_job", "server RSS bytes/job", "low"),
            ("store_bytes_per_job", "table+index bytes/job", "low"),
            ("enqueue_jobs_per_s", "enqueue jobs/s", "high")],
}
# the host's CPU steal while the driver ran (a shared VM: the hypervisor ran
# someone else on our cores); a run with much of it is slower for reasons
# outside the system measured
for _m in METRICS.values():
    _m.append(("host_steal_pct", "host steal %", ""))
TEXT_FIELDS = {"W3": ["tenant_slots"], "W4": ["ordering"], "W6": ["limiting"]}

TITLES = {
    "W1": "W1 drain: enqueue {jobs} blank jobs (bulk), then drain them with concurrency {concurrency}",
    "W2": "W2 latency: {jobs} jobs submitted {interval_ms} ms apart to {concurrency} idle workers; start - submit",
    "W3": "W3 tenants: A floods {flood} jobs, then B submits {probe}; {concurrency} workers; B's wait (FIFO)",
    "W4": "W4 ordered keys: {keys} keys x {per_key} jobs (bursts of {burst}), concurrency {concurrency}",
    "W5": "W5 backlog: drain {measure} jobs with {backlog} jobs queued, concurrency {concurrency}",
    "W6": "W6 keyed limit: at most {limit} at once per account, {keys} accounts x {per_key} jobs"
          " of {work_ms} ms (bursts of {burst}), concurrency {concurrency}",
    "MEM": "Memory: {jobs} queued blank jobs",
}


def sizes(args):
    q = args.quick
    return {
        "W1": {"jobs": args.w1_jobs or (2000 if q else 100000)},
        "W2": {"jobs": args.w2_jobs or (100 if q else 2000), "interval-ms": args.w2_interval_ms},
        "W3": {"flood": args.w3_flood or (2000 if q else 50000), "probe": args.w3_probe or (50 if q else 200)},
        "W4": {"keys": args.w4_keys or (50 if q else 1000), "per-key": args.w4_per_key or (5 if q else 20),
               "burst": args.w4_burst},
        "W6": {"keys": args.w6_accounts or (50 if q else 1000), "per-key": args.w6_per_account or (5 if q else 20),
               "burst": args.w4_burst, "limit": args.w6_limit, "work-ms": args.w6_work_ms},
        "W5": [{"backlog": b, "measure": args.w5_measure or (1000 if q else 20000)}
               for b in (args.w5_backlogs or ([1000, 5000] if q else [10000, 1000000, 5000000]))],
        "MEM": {"jobs": args.mem_jobs or (10000 if q else 1000000)},
    }


def case_id(workload, params):
    return f"W5@{params['backlog']}" if workload == "W5" else workload


# --------------------------------------------------------------- running
class Interrupted(Exception):
    pass


def on_signal(signum, frame):
    raise Interrupted(f"signal {signum}")


def settle():
    """A quiet machine for the next run: the previous system's dirty pages (a PostgreSQL
    checkpoint at shutdown, a binlog, a deleted data folder) are written out now, not while
    the next system fsyncs its own commits."""
    os.sync()
    time.sleep(1.0)


def cpu_ticks():
    """(steal, total) jiffies of every CPU so far, or None off Linux."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return (v[7] if len(v) > 7 else 0), sum(v[:8])
    except (OSError, ValueError):
        return None


def run_once(system, workload, params, concurrency, timeout, keep_logs):
    settle()
    tmp = tempfile.mkdtemp(prefix=f"peers-{system.name}-")
    try:
        url = system.start(tmp)
        durability = system.durability(url)
        rss0 = sum(filter(None, (rss_bytes(p) for p in system.pids()))) if workload == "MEM" else None
        cmd = system.driver() + ["--workload", workload, "--url", url, "--concurrency", str(concurrency)]
        for k, v in params.items():
            cmd += [f"--{k}", str(v)]
        log(" ".join(shlex.quote(c) for c in cmd))
        t0 = time.time()
        ticks0 = cpu_ticks()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, cwd=HERE)
        try:
            out, err = proc.communicate(timeout=timeout)
        except (subprocess.TimeoutExpired, Interrupted, KeyboardInterrupt):
            os.killpg(proc.pid, signal.SIGKILL)  # the driver's own group (it may have children)
            proc.wait()
            raise
        if proc.returncode != 0:
            raise RuntimeError(f"driver exited {proc.returncode}: {err.strip()[-3000:]}")
        lines = [x for x in out.splitlines() if x.strip().startswith("{")]
        if not lines:
            raise RuntimeError(f"driver printed no JSON; stderr: {err.strip()[-3000:]}")
        res = json.loads(lines[-1])
        res["wall_s"] = round(time.time() - t0, 2)
        ticks1 = cpu_ticks()
        if ticks0 and ticks1 and ticks1[1] > ticks0[1]:
            res["host_steal_pct"] = round(100.0 * (ticks1[0] - ticks0[0]) / (ticks1[1] - ticks0[1]), 1)
        if workload == "MEM":
            pids = system.pids()
            if pids:
                rss1 = sum(filter(None, (rss_bytes(p) for p in pids)))
                res["rss_bytes_before"] = rss0
                res["rss_bytes_after"] = rss1
                res["rss_bytes_per_job"] = (rss1 - rss0) / res["jobs"]
        res["durability"] = durability
        return res
    finally:
        system.stop()
        if not keep_logs:
            shutil.rmtree(tmp, ignore_errors=True)


def summarize(workload, runs):
    summary = {}
    for key, _, _ in METRICS[workload]:
        vals = [r[key] for r in runs if isinstance(r.get(key), (int, float))]
        if vals:
            summary[key] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}
    text = {}
    for k in TEXT_FIELDS.get(workload, []) + ["driver_note", "enqueue_note", "drain_note", "note", "store_note",
                                               "ordered"]:
        if k in runs[0]:
            text[k] = runs[0][k]
    return summary, text


# --------------------------------------------------------------- reporting
def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    osname = "?"
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    osname = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": cpu, "ram": mem, "os": osname, "kernel": platform.release()}


def fmt(v):
    if v is None:
        return "–"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def cell(s, key, runs):
    m = s.get(key)
    if not m:
        return "n/a"
    if m["n"] > 1 and m["min"] != m["max"]:
        return f"{fmt(m['median'])} ({fmt(m['min'])}–{fmt(m['max'])})"
    return fmt(m["median"])


def order_cases(results):
    order = {"W1": 1, "W2": 2, "W3": 3, "W4": 4, "W6": 4.5, "W5": 5, "MEM": 6}
    cases = {}
    for r in results:
        cases.setdefault(r["case"], r)
    return sorted(cases, key=lambda c: (order.get(c.split("@")[0], 9), int(c.split("@")[1]) if "@" in c else 0))


def render_md(doc, baseline=None):
    meta = doc["meta"]
    m = meta["machine"]
    out = ["# Peer benchmark: the last run", ""]
    if meta.get("date_first"):
        out.append(f"- dates: {meta['date_first']} (first command) to {meta['date']} (last)")
    else:
        out.append(f"- date: {meta['date']}")
    out.append(f"- machine: {m['nproc']} cores ({m['cpu']}), {m['ram']} RAM, {m['os']}, Linux {m['kernel']}")
    for c in meta.get("commands", []):
        out.append(f"- command: `{c}`")
    out.append("- every job is blank (does nothing); clients, workers and servers share the same machine;")
    out.append("  each cell is the median over the runs, with (min–max) when there were several")
    out.append("")
    out.append("## Systems")
    out.append("")
    out.append("| system | versions | durability as run | driver |")
    out.append("| --- | --- | --- | --- |")
    for name, info in doc["systems"].items():
        vers = ", ".join(f"{k} {v}" for k, v in info.get("versions", {}).items() if v)
        out.append(f"| {name} | {vers} | {info.get('durability', '')} | {info.get('driver_note', '')} |")
    out.append("")
    results = doc["results"]
    for case in order_cases(results):
        rows = [r for r in results if r["case"] == case]
        wl = rows[0]["workload"]
        fp = {k.replace("-", "_"): v for k, v in rows[0]["params"].items()}
        if wl == "W5":
            fp["measure"] = min(fp["measure"], fp["backlog"])
        title = TITLES[wl].format(**fp, concurrency=rows[0]["concurrency"])
        out.append(f"## {title}")
        out.append("")
        mets = METRICS[wl]
        present = [mt for mt in mets if any(mt[0] in r["summary"] for r in rows)]
        heads = ["system", "runs"] + [lab for _, lab, _ in present]
        extra = TEXT_FIELDS.get(wl, [])
        heads += extra
        base = next((r for r in rows if r["system"] == baseline), None) if baseline else None
        rated = [m for m in present if m[2]]  # no ratio for counts such as "jobs measured"
        if base:
            heads += [f"{lab} ÷ {baseline}" for _, lab, _ in rated]
        out.append("| " + " | ".join(heads) + " |")
        out.append("|" + " --- |" * len(heads))
        for r in rows:
            cells = [r["system"], str(r["n_runs"])] + [cell(r["summary"], k, None) for k, _, _ in present]
            cells += [str(r["text"].get(k, "")) for k in extra]
            if base:
                for k, _, _ in rated:
                    a, b = r["summary"].get(k), base["summary"].get(k)
                    cells.append(f"{a['median'] / b['median']:.2f}" if a and b and b["median"] else "–")
            out.append("| " + " | ".join(cells) + " |")
        errs = [r for r in results if r["case"] == case and r.get("errors")]
        for r in errs:
            out.append(f"\n{r['system']}: {len(r['errors'])} failed run(s): {r['errors'][0][:300]}")
        out.append("")
    out.append("## Reading the tables")
    out.append("")
    out.extend(NOTES)
    out.append("")
    if doc.get("failures"):
        out.append("## Failures")
        out.append("")
        for f in doc["failures"]:
            out.append(f"- {f}")
        out.append("")
    return "\n".join(out) + "\n"


NOTES = [
    "- Rates are jobs per second (higher is better); times are milliseconds (lower is better).",
    "- W1 ms/job = drain time / jobs, with 5 workers (the Lowkiq README's figure: 100,000 blank jobs,"
    " 5 threads: Lowkiq 2.14 ms/job, Sidekiq 0.29 ms/job).",
    "- W3: no peer has per-tenant slots. B's wait is plain FIFO: it is the backlog of A's jobs still"
    " queued when B submits, divided by the drain rate. Where the workers drain as fast as A can"
    " flood (beanstalkd here), no backlog builds up and B hardly waits; that is a property of the"
    " speeds, not fairness.",
    "- W4: only graphile-worker keeps per-key order (queue_name = key). The other systems ran the"
    " same jobs unordered; their violation counts show what that costs and are a floor (blank jobs"
    " rarely overlap).",
    "- W6: tenq limits each account by a concurrency key (limit 3, a key setting of account:*);"
    " graphile-worker comes nearest with 3 named queues per account (each runs one job at a time), without"
    " its localQueue, which runs a named queue's jobs at once (graphile/worker#621; W4 runs without it too);"
    " BullMQ's groups (a limit per group) are BullMQ Pro's, not in the open-source BullMQ, so it and"
    " the others ran without a limit: their counts show how often an account went over 3.",
    "- pg-boss polls (no LISTEN/NOTIFY in v10): each of its 5 work() loops takes a batch of 100 jobs at"
    " most every 0.5 s, hence about 1,000 jobs/s and up to 0.5 s of latency; see README.md.",
    "- host steal % is the CPU time the hypervisor gave to other guests while the driver ran"
    " (/proc/stat); on a shared VM it is the main source of the spread between runs, above all"
    " in W2's tail.",
    "- MEM: server RSS per job is the growth of the server's resident memory divided by the jobs;"
    " for the PostgreSQL peers it is the table+index size per job (on disk, cached in shared"
    " buffers), not process memory.",
    "- Durability differs (see Systems): beanstalkd and Redis run without fsync per job.",
]


# The headline: tenq against the best peer, metric by metric.  "Durable" peers
# fsync every commit before they acknowledge it, as tenq does (PostgreSQL with
# synchronous_commit=on); beanstalkd's binlog fsyncs at most every 50 ms and
# the Redis peers run in memory.
DURABLE_PEERS = {"graphile-worker", "pg-boss"}
TENQ_SYSTEMS = ["tenq-sqlite", "tenq-postgres"]
HEADLINE = [
    # (case, key, label, better, only peers that keep order)
    ("W1", "drain_jobs_per_s", "W1 drain, jobs/s", "high", False),
    ("W1", "enqueue_jobs_per_s", "W1 enqueue (bulk), jobs/s", "high", False),
    ("W2", "p50_ms", "W2 latency p50, ms", "low", False),
    ("W2", "p99_ms", "W2 latency p99, ms", "low", False),
    ("W3", "b_wait_p99_ms", "W3 tenant B's wait p99, ms", "low", False),
    ("W4", "jobs_per_s", "W4 ordered keys, jobs/s (peers that keep order)", "high", True),
    ("W5@1000000", "drain_jobs_per_s", "W5 drain with 1M queued, jobs/s", "high", False),
    ("W5@5000000", "drain_jobs_per_s", "W5 drain with 5M queued, jobs/s", "high", False),
    ("MEM", "bytes_per_job", "bytes per queued job (1M)", "low", False),
]


def _median(r, key):
    if r is None:
        return None
    if key == "bytes_per_job":  # process memory, or the table size for the PostgreSQL-backed systems
        m = r["summary"].get("rss_bytes_per_job") or r["summary"].get("store_bytes_per_job")
    else:
        m = r["summary"].get(key)
    return m["median"] if m else None


def _better(a, b, better):
    """How many times a is better than b (>1: a wins)."""
    if a is None or b is None or a <= 0 or b <= 0:
        return None
    return a / b if better == "high" else b / a


def render_headline(doc, link):
    res = {(r["system"], r["case"]): r for r in doc["results"]}
    peers = [n for n in dict.fromkeys(r["system"] for r in doc["results"]) if n not in TENQ_SYSTEMS]
    out = ["| metric | tenq-sqlite | tenq-postgres | best peer | tenq-sqlite: × better |"
           " best peer with fsync'd commits | tenq-postgres: × better |",
           "| --- | ---: | ---: | --- | ---: | --- | ---: |"]
    for case, key, label, better, ordered_only in HEADLINE:
        if not any(c == case for _, c in res):
            continue
        ts, tp = (_median(res.get((t, case)), key) for t in TENQ_SYSTEMS)

        def best(names):
            cands = []
            for n in names:
                r = res.get((n, case))
                v = _median(r, key)
                if v is None or (ordered_only and not r["text"].get("ordered")):
                    continue
                cands.append((v, n))
            if not cands:
                return None, None
            return (max if better == "high" else min)(cands)

        bv, bn = best(peers)
        dv, dn = best([p for p in peers if p in DURABLE_PEERS])
        def ratio(a, b):
            x = _better(a, b, better)
            return f"**{x:.1f}×**" if x is not None and x >= 1 else (f"{x:.2f}× (behind)" if x else "–")

        def peer(n, v):
            if case == "W3":  # no peer has tenant slots: their B wait is plain FIFO, shown for honesty
                return f"not supported (FIFO: {n} {fmt(v)})" if n else "not supported"
            return f"{n} {fmt(v)}" if n else "not supported"

        if case == "W3":
            a = [_median(res.get((t, case)), "a_max_running") for t in TENQ_SYSTEMS]
            label += f" (A's most at once: {', '.join(fmt(x) for x in a if x is not None)}; limit 3)"
        out.append(f"| {label} | {fmt(ts)} | {fmt(tp)} | {peer(bn, bv)} | "
                   f"{ratio(ts, bv) if case != 'W3' else '–'} | {peer(dn, dv)} | "
                   f"{ratio(tp, dv) if case != 'W3' else '–'} |")
    out.append("")
    out.append("Each cell is the median of the runs; “× better” is tenq's figure over the peer's for rates and"
               " the peer's over tenq's for times and bytes, so above 1 means tenq is ahead. W3 needs per-tenant"
               " slots, which no peer has. The full tables, with min–max and every system: "
               f"[last-run.md]({link}).")
    return "\n".join(out) + "\n"


def splice(path, begin, end, text):
    """Replaces what lies between the marker lines begin and end in path."""
    with open(path) as f:
        s = f.read()
    i, j = s.find(begin), s.find(end)
    if i < 0 or j < i:
        raise SystemExit(f"{path}: markers {begin} ... {end} not found")
    s = s[:i + len(begin)] + "\n" + text + s[j:]
    with open(path, "w") as f:
        f.write(s)


def write_reports(doc, args):
    """--results and --readme: the headline (and for --results the whole report) into marked sections."""
    if args.results:
        # the headline and how it was run; every table is in --md (last-run.md)
        md = render_md(doc, args.baseline)
        how = md.split("\n## ", 1)[0].split("\n", 2)[2]
        splice(args.results, "<!-- peers:begin -->", "<!-- peers:end -->",
               render_headline(doc, "peers/last-run.md") + "\n" + how)
        print(f"results: {args.results}")
    if args.readme:
        splice(args.readme, "<!-- peers-headline:begin -->", "<!-- peers-headline:end -->",
               render_headline(doc, "bench/peers/last-run.md"))
        print(f"readme:  {args.readme}")


def print_table(doc):
    for case in order_cases(doc["results"]):
        rows = [r for r in doc["results"] if r["case"] == case]
        wl = rows[0]["workload"]
        print(f"\n== {case} {json.dumps(rows[0]['params'])}")
        mets = METRICS[wl]
        w = max(len(r["system"]) for r in rows) + 2
        print("system".ljust(w) + "".join(lab[:24].rjust(26) for _, lab, _ in mets))
        for r in rows:
            print(r["system"].ljust(w) + "".join(cell(r["summary"], k, None)[:25].rjust(26) for k, _, _ in mets))


# --------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small counts, 1 run: a smoke test (a few minutes)")
    ap.add_argument("--runs", type=int, help="runs per (system, workload); default 3 (1 with --quick)")
    ap.add_argument("--only", help="comma-separated systems (default: every available one)")
    ap.add_argument("--workloads", default="W1,W2,W3,W4,W5,MEM",
                    help="comma-separated, of W1,W2,W3,W4,W5,W6,MEM (W6 only when asked for)")
    ap.add_argument("--concurrency", type=int, default=5)
    ap.add_argument("--out", help="results JSON (default bench/peers/last-run.json; with --quick bench/out/peers-quick.json)")
    ap.add_argument("--md", help="Markdown table (default bench/peers/last-run.md; with --quick bench/out/peers-quick.md)")
    ap.add_argument("--merge", action="store_true",
                    help="keep the results already in --out for the (system, case) pairs not run now")
    ap.add_argument("--results", help="also write the headline and the commands into the marked section of this"
                    " file (bench/RESULTS.md: <!-- peers:begin --> ... <!-- peers:end -->)")
    ap.add_argument("--readme", help="also write the headline table into the marked section of this file"
                    " (README.md: <!-- peers-headline:begin --> ... <!-- peers-headline:end -->)")
    ap.add_argument("--baseline", help="add 'metric ÷ SYSTEM' ratio columns (e.g. tenq-sqlite)")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per driver run")
    ap.add_argument("--keep-logs", action="store_true", help="keep the temporary server folders")
    ap.add_argument("--list", action="store_true", help="list the systems and exit")
    ap.add_argument("--render", action="store_true",
                    help="only rewrite --md (and print the table) from the results in --out")
    ap.add_argument("--w1-jobs", type=int)
    ap.add_argument("--w2-jobs", type=int)
    ap.add_argument("--w2-interval-ms", type=int, default=5)
    ap.add_argument("--w3-flood", type=int)
    ap.add_argument("--w3-probe", type=int)
    ap.add_argument("--w4-keys", type=int)
    ap.add_argument("--w4-per-key", type=int)
    ap.add_argument("--w4-burst", type=int, default=5)
    ap.add_argument("--w6-accounts", type=int, help="W6 accounts (default 1000; quick 50)")
    ap.add_argument("--w6-per-account", type=int, help="W6 jobs per account (default 20; quick 5)")
    ap.add_argument("--w6-limit", type=int, default=3, help="W6 jobs of one account at once")
    ap.add_argument("--w6-work-ms", type=int, default=2, help="W6: each job's work (a sleep), ms")
    ap.add_argument("--w5-backlogs", type=lambda s: [int(x) for x in s.split(",")],
                    help="comma-separated backlog sizes (default 10000,1000000,5000000; quick 1000,5000)")
    ap.add_argument("--w5-measure", type=int, help="jobs drained per W5 measurement (default 20000)")
    ap.add_argument("--mem-jobs", type=int, help="queued jobs for MEM (default 1000000; quick 10000)")
    args = ap.parse_args()

    load_plugins()
    if args.list:
        for name, s in SYSTEMS.items():
            print(name, "-", s.available() or "available")
        return 0

    runs = args.runs or (1 if args.quick else 3)
    out_json = args.out or (os.path.join(REPO, "bench", "out", "peers-quick.json") if args.quick
                            else os.path.join(HERE, "last-run.json"))
    out_md = args.md or (os.path.join(REPO, "bench", "out", "peers-quick.md") if args.quick
                         else os.path.join(HERE, "last-run.md"))
    if args.render:
        with open(out_json) as f:
            doc = json.load(f)
        for r in doc["results"]:
            if r.get("runs"):
                r["summary"], r["text"] = summarize(r["workload"], r["runs"])
        with open(out_md, "w") as f:
            f.write(render_md(doc, args.baseline))
        print_table(doc)
        print(f"\ntable: {out_md}")
        write_reports(doc, args)
        return 0
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in SYSTEMS]
        if unknown:
            ap.error(f"unknown system(s): {', '.join(unknown)} (known: {', '.join(SYSTEMS)})")
    else:
        names = [n for n in DEFAULT_ORDER if n in SYSTEMS] + [n for n in SYSTEMS if n not in DEFAULT_ORDER]
        names = [n for n in names if SYSTEMS[n].available() is None or n in DEFAULT_ORDER]
        # variants run only when asked for (--only): tenq-postgres-standbys
        names = [n for n in names if getattr(SYSTEMS[n], "by_default", True)]
    workloads = [w.strip().upper() for w in args.workloads.split(",") if w.strip()]
    for w in workloads:
        if w not in METRICS:
            ap.error(f"unknown workload {w}")
    failures = []
    systems = []
    for n in names:
        why = SYSTEMS[n].available()
        if why:
            failures.append(f"{n}: not run: {why}")
            log(f"{n}: not available: {why}")
        else:
            systems.append(SYSTEMS[n])

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    sz = sizes(args)
    cases = []
    for w in workloads:
        for p in (sz[w] if isinstance(sz[w], list) else [sz[w]]):
            cases.append((w, {k: v for k, v in p.items()}))

    command = "python3 bench/peers/run.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    doc = {"meta": {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                    "machine": machine(), "commands": [command], "runs": runs, "quick": args.quick},
           "systems": {}, "results": [], "failures": failures}
    if args.merge and os.path.exists(out_json):
        with open(out_json) as f:
            old = json.load(f)
        doc["systems"] = old.get("systems", {})
        doc["meta"]["commands"] = old.get("meta", {}).get("commands", []) + [command]
        doc["meta"]["date_first"] = old.get("meta", {}).get("date_first") or old.get("meta", {}).get("date")
        doc["results"] = old.get("results", [])

    raw = {}
    started = time.time()
    try:
        for w, params in cases:
            cid = case_id(w, params)
            for i in range(runs):
                for s in systems:
                    if w not in s.workloads:
                        if i == 0:
                            log(f"{cid}: {s.name} has no driver for it")
                        continue
                    log(f"{cid} run {i + 1}/{runs}: {s.name}")
                    try:
                        res = run_once(s, w, params, args.concurrency, args.timeout, args.keep_logs)
                        raw.setdefault((s.name, cid), {"runs": [], "errors": [], "w": w, "p": params})["runs"].append(res)
                        info = doc["systems"].setdefault(s.name, {})
                        info["versions"] = s.versions()
                        info["durability"] = res.get("durability", "")
                        if res.get("driver_note"):
                            info["driver_note"] = res["driver_note"]
                        log(f"{cid} {s.name}: " + ", ".join(
                            f"{k}={fmt(res[k])}" for k, _, _ in METRICS[w] if isinstance(res.get(k), (int, float))))
                    except (Interrupted, KeyboardInterrupt):
                        raise
                    except Exception as e:  # a broken driver fails the run, the others go on
                        msg = f"{cid} {s.name}: {type(e).__name__}: {e}"
                        log("FAILED " + msg)
                        raw.setdefault((s.name, cid), {"runs": [], "errors": [], "w": w, "p": params})["errors"].append(
                            str(e))
                        failures.append(msg[:2000])
    except (Interrupted, KeyboardInterrupt) as e:
        failures.append(f"interrupted: {e}")
        log("interrupted; servers of the current run were stopped")
    finally:
        new = []
        for (name, cid), d in raw.items():
            entry = {"system": name, "case": cid, "workload": d["w"], "params": d["p"],
                     "concurrency": args.concurrency, "n_runs": len(d["runs"]), "runs": d["runs"],
                     "errors": d["errors"]}
            if d["runs"]:
                entry["summary"], entry["text"] = summarize(d["w"], d["runs"])
            else:
                entry["summary"], entry["text"] = {}, {}
            new.append(entry)
        for r in doc["results"]:  # summaries of merged results, recomputed with the current metrics
            if r.get("runs"):
                r["summary"], r["text"] = summarize(r["workload"], r["runs"])
        keys = {(e["system"], e["case"]) for e in new}
        doc["results"] = [r for r in doc["results"] if (r["system"], r["case"]) not in keys] + new
        sysorder = {n: i for i, n in enumerate(list(SYSTEMS))}
        doc["results"].sort(key=lambda r: sysorder.get(r["system"], 99))
        doc["meta"]["elapsed_s"] = round(time.time() - started, 1)
        os.makedirs(os.path.dirname(out_json), exist_ok=True)
        with open(out_json, "w") as f:
            json.dump(doc, f, indent=1)
        os.makedirs(os.path.dirname(out_md), exist_ok=True)
        with open(out_md, "w") as f:
            f.write(render_md(doc, args.baseline))
        print_table(doc)
        print(f"\nresults: {out_json}\ntable:   {out_md}")
        write_reports(doc, args)
        if failures:
            print("\nFAILURES:\n" + "\n".join("  " + f for f in failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
