#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""packaging/: the systemd unit and the Dockerfile, tried for real on a
machine with neither systemd running nor Docker.

The unit: `systemd-analyze verify` and `security` on it (its binary pointed
at the one built here), its user made by systemd-sysusers in a scratch root,
then its ExecStart run the way systemd would run it (its user, StateDirectory,
UMask, LimitNICE, NoNewPrivileges) under strace, and what the process did
checked against the unit's sandbox: the system calls against
SystemCallFilter, the sockets against RestrictAddressFamilies, what it wrote
against ProtectSystem=strict (only its StateDirectory), no writable and
executable memory (MemoryDenyWriteExecute), a SIGTERM stop well within
TimeoutStopSec.

The Dockerfile: parsed (every instruction known, continuations, exec and
shell forms) and linted (pinned bases, apt-get hygiene, shellcheck on every
RUN, exec-form CMD/ENTRYPOINT/HEALTHCHECK, a numeric non-root USER); its
Debian packages looked up (apt-cache); its build stage run on this machine
in a scratch copy of the build context (.dockerignore applied) under strace,
each file the build opened traced to its Debian package, which the stage
must install (or the base image hold); every COPY source checked; then the
image's command run from the copied binary as the image's user with the
image's environment: it refuses to start without TENQ_ADMIN_TOKEN, starts
with it, keeps its data on the VOLUME, answers the HEALTHCHECK command,
survives a restart and stops on STOPSIGNAL within Docker's 10 s; the files
it opened again traced to packages the runtime stage installs.

Needs root for the user switches and apt-get (CI is root); installs strace,
systemd and shellcheck when missing.

    TENQ_BIN=build/tenq python3 tests/packaging/test_packaging.py [-v] [Class.test]
"""
import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from harness import BIN, free_port  # noqa: E402
# other files in their place (to see the test catch a broken one)
UNIT = os.environ.get("TENQ_UNIT") or os.path.join(SRC, "packaging", "tenq.service")
SYSUSERS = os.path.join(SRC, "packaging", "tenq.sysusers")
DOCKERFILE = os.environ.get("TENQ_DOCKERFILE") or os.path.join(SRC, "packaging", "Dockerfile")
DOCKERIGNORE = os.path.join(SRC, ".dockerignore")
ROOT = os.geteuid() == 0
TOKEN = "packaging-test-admin-token-0123456789"
KEEP = os.environ.get("TENQ_KEEP_TMP")  # keep the scratch folders, to look at them


# ---- tools --------------------------------------------------------------------------------------

def need(tool, package):
    """The tool, installed with apt-get when missing and we are root."""
    if shutil.which(tool):
        return
    if not ROOT:
        raise AssertionError("%s is missing: apt-get install %s (or run the test as root)" %
                             (tool, package))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", package]
    if subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=False)
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
    assert shutil.which(tool), tool


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 600)
    return subprocess.run(cmd, **kw)


def scratch(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    os.chmod(d, 0o755)  # the unprivileged users below go through it
    os.mkdir(os.path.join(d, "out"))
    os.chmod(os.path.join(d, "out"), 0o1777)  # and write their traces here
    return d


def read_log(f):
    f.flush()
    f.seek(0)
    return f.read()


def traced_child(pid, exe, timeout=10):
    """The process strace (pid) runs exe in: the signals go to it, not to
    strace (which also forks short-lived children of its own)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for f in glob.glob("/proc/%d/task/*/children" % pid):
            try:
                with open(f) as fh:
                    kids = [int(k) for k in fh.read().split()]
                for k in kids:
                    if os.path.realpath("/proc/%d/exe" % k) == os.path.realpath(exe):
                        return k
            except OSError:
                pass
        time.sleep(0.02)
    raise AssertionError("strace %d does not run %s" % (pid, exe))


def host_codename():
    with open("/etc/os-release") as f:
        for ln in f:
            if ln.startswith("VERSION_CODENAME="):
                return ln.split("=", 1)[1].strip().strip('"')
    return ""


# ---- Debian: which package a file comes from, what a package list brings ------------------------

def canon(path):
    """/lib/x and /usr/lib/x are one file on a merged-/usr system."""
    for top in ("/lib/", "/lib64/", "/bin/", "/sbin/"):
        if path.startswith(top):
            return "/usr" + path
    return path


_owners = {}


def owner(path):
    """The installed package that ships path (or its target), or None."""
    if not _owners:
        for lst in glob.glob("/var/lib/dpkg/info/*.list"):
            pkg = os.path.basename(lst)[:-5].split(":")[0]
            with open(lst, errors="replace") as f:
                for ln in f:
                    _owners.setdefault(canon(ln.rstrip("\n")), pkg)
    for p in (path, os.path.realpath(path)):
        pkg = _owners.get(canon(p))
        if pkg:
            return pkg
    return None


def closure(packages):
    """The packages and everything they depend on (alternatives all counted)."""
    p = run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
             "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"] + list(packages))
    assert p.returncode == 0, p.stderr
    return {ln.strip() for ln in p.stdout.splitlines()
            if ln and not ln.startswith(" ") and not ln.startswith("<")}


def base_image_packages():
    """What a debian image holds before any RUN (minbase: Essential and
    Priority required, and apt), as far as this machine has them."""
    p = run(["dpkg-query", "-W", "-f", "${Package}\t${Essential}\t${Priority}\n"])
    base = {"apt"}
    for ln in p.stdout.splitlines():
        name, essential, prio = (ln.split("\t") + ["", ""])[:3]
        if essential == "yes" or prio == "required":
            base.add(name)
    return closure(base)


# ---- strace ------------------------------------------------------------------------------------

STRACE_LINE = re.compile(r"^(\d+)\s+(?:<\.\.\. )?([a-z0-9_]+)(?:\(| resumed>)(.*)$")


def trace_calls(path):
    """(pid, syscall, rest of the line) of every call in an strace -f -o file."""
    out = []
    with open(path, errors="replace") as f:
        for ln in f:
            m = STRACE_LINE.match(ln)
            if m:
                out.append((int(m.group(1)), m.group(2), m.group(3)))
    return out


def opened_files(path):
    """The files successfully opened or executed in a trace."""
    files = set()
    for _, call, rest in trace_calls(path):
        if call not in ("open", "openat", "execve"):
            continue
        if re.search(r"= -1 ", rest):
            continue
        m = re.search(r'"((?:[^"\\]|\\.)*)"', rest)
        if m and m.group(1).startswith("/"):
            files.add(m.group(1))
    return files


# What a program finds by looking, not because the image needs it: settings
# (ld.so.conf.d, locale aliases) and plugins it loads when present (ld's
# bfd-plugins).  Their packages, and what those depend on, are this machine's.
OPPORTUNISTIC = ("/etc/", "/usr/lib/bfd-plugins/", "/usr/share/locale/", "/usr/lib/locale/")


def packages_used(files, ignore_under, excuse=True):
    """{package: example file} for the packaged files among files, less those
    of packages that only came with something found by looking (unless not
    excuse: every package one of whose files was opened for itself)."""
    used, incidental = {}, set()
    for f in sorted(files):
        if any(f == d or f.startswith(d.rstrip("/") + "/") for d in ignore_under):
            continue
        if not os.path.isfile(f):
            continue
        pkg = owner(f)
        if not pkg:
            continue
        if canon(os.path.normpath(f)).startswith(OPPORTUNISTIC):
            incidental.add(pkg)
        else:
            used.setdefault(pkg, f)
    excused = closure(incidental) if incidental and excuse else set()
    return {p: f for p, f in used.items() if p not in excused}


def syscall_groups():
    """systemd's named system call groups, each expanded to its calls."""
    p = run(["systemd-analyze", "syscall-filter"])
    groups, cur = {}, None
    for ln in p.stdout.splitlines():
        if ln.startswith("@"):
            cur = ln.strip()
            groups[cur] = []
        elif ln.startswith("    ") and cur and not ln.strip().startswith("#"):
            groups[cur].append(ln.strip())
        elif not ln.strip():
            cur = None

    def expand(name, seen=()):
        if not name.startswith("@"):
            return {name}
        out = set()
        for x in groups.get(name, []):
            if x not in seen:
                out |= expand(x, seen + (name,))
        return out
    return expand


# ---- the unit file ------------------------------------------------------------------------------

def parse_unit(path):
    """{section: [(key, value)]}, continuations joined, comments dropped."""
    secs, cur, pending = {}, None, ""
    with open(path) as f:
        for raw in f:
            ln = raw.rstrip("\n")
            if not pending and ln.lstrip().startswith(("#", ";")):
                continue
            if ln.endswith("\\"):
                pending += ln[:-1] + " "
                continue
            ln, pending = pending + ln, ""
            if not ln.strip():
                continue
            if ln.startswith("["):
                cur = ln.strip()[1:-1]
                secs.setdefault(cur, [])
                continue
            k, _, v = ln.partition("=")
            secs[cur].append((k.strip(), v.strip()))
    return secs


def unit_values(secs, section, key):
    return [v for k, v in secs.get(section, []) if k == key]


def unit_value(secs, section, key, default=None):
    vals = unit_values(secs, section, key)
    return vals[-1] if vals else default


def seconds(v):
    m = re.fullmatch(r"(\d+)\s*(ms|s|min)?", v)
    assert m, v
    n = int(m.group(1))
    return {"ms": n / 1000, "s": n, None: n, "min": n * 60}[m.group(2)]


# ---- the Dockerfile -----------------------------------------------------------------------------

KNOWN = {"FROM", "RUN", "COPY", "WORKDIR", "ENV", "ARG", "USER", "VOLUME", "EXPOSE",
         "HEALTHCHECK", "CMD", "ENTRYPOINT", "STOPSIGNAL", "LABEL"}


def parse_dockerfile(path):
    """[{"name", "base", "steps": [(INSTRUCTION, text, line)]}], one per stage."""
    steps, buf, start = [], "", 0
    with open(path) as f:
        lines = f.read().split("\n")
    for no, raw in enumerate(lines, 1):
        if raw.lstrip().startswith("#"):
            continue  # comments, within continuations too
        if not buf and not raw.strip():
            continue
        if not buf:
            start = no
        if raw.rstrip().endswith("\\"):
            buf += raw.rstrip()[:-1] + " "
            continue
        buf += raw
        instr, _, text = buf.strip().partition(" ")
        steps.append((instr.upper(), text.strip(), start))
        buf = ""
    assert not buf, "a continuation runs off the end of the file"
    stages = []
    for instr, text, no in steps:
        if instr not in KNOWN:
            raise AssertionError("Dockerfile:%d: unknown or unsupported instruction %s" %
                                 (no, instr))
        if instr == "FROM":
            words = text.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append({"name": name, "base": words[0], "steps": [], "line": no})
        else:
            assert stages, "Dockerfile:%d: %s before FROM" % (no, instr)
            stages[-1]["steps"].append((instr, text, no))
    return stages


def exec_form(text):
    """The JSON array of an exec-form instruction, or None for shell form."""
    if text.startswith("["):
        v = json.loads(text)
        assert isinstance(v, list) and all(isinstance(x, str) for x in v), text
        return v
    return None


def parse_env(text):
    words = shlex.split(text)
    if words and "=" not in words[0]:  # the legacy form: ENV KEY value words
        return {words[0]: " ".join(words[1:])}
    return dict(w.split("=", 1) for w in words)


def flags_and_rest(text):
    """--flag=value words at the front of COPY and HEALTHCHECK, and the rest."""
    flags, words = {}, text.split()
    while words and words[0].startswith("--"):
        k, _, v = words.pop(0)[2:].partition("=")
        flags[k] = v
    return flags, " ".join(words)


def apt_packages(script):
    """The packages of every `apt-get install` in a RUN's script."""
    pkgs = []
    for part in re.split(r"&&|;|\|\|", script):
        words = part.split()
        if "apt-get" in words and "install" in words:
            pkgs += [w for w in words[words.index("install") + 1:] if not w.startswith("-")]
    return pkgs


def dockerignore_rules():
    rules = []
    with open(DOCKERIGNORE) as f:
        for ln in f:
            ln = ln.strip()
            if not ln or ln.startswith("#"):
                continue
            neg = ln.startswith("!")
            pat = os.path.normpath(ln[1:] if neg else ln).lstrip("/")
            rx = ""
            i = 0
            while i < len(pat):
                if pat.startswith("**/", i):
                    rx += "(?:.*/)?"
                    i += 3
                elif pat.startswith("**", i):
                    rx += ".*"
                    i += 2
                elif pat[i] == "*":
                    rx += "[^/]*"
                    i += 1
                elif pat[i] == "?":
                    rx += "[^/]"
                    i += 1
                else:
                    rx += re.escape(pat[i])
                    i += 1
            rules.append((re.compile(rx + r"\Z"), neg))
    return rules


def ignored(rel, rules):
    """Docker's rule: the last pattern matching the path or a folder above it wins."""
    parts = rel.split("/")
    out = False
    for rx, neg in rules:
        for k in range(1, len(parts) + 1):
            if rx.match("/".join(parts[:k])):
                out = not neg
                break
    return out


def copy_context(dest):
    """The build context (the repository's folder) as Docker would send it."""
    rules = dockerignore_rules()
    n = 0
    for top, dirs, files in os.walk(SRC):
        rel_top = os.path.relpath(top, SRC)
        rel_top = "" if rel_top == "." else rel_top + "/"
        dirs[:] = [d for d in dirs if not ignored(rel_top + d, rules) or
                   any(neg for _, neg in rules)]
        for name in files:
            rel = rel_top + name
            if ignored(rel, rules):
                continue
            target = os.path.join(dest, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(os.path.join(top, name), target, follow_symlinks=False)
            n += 1
    return n


# =================================================================================================

class Unit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need("systemd-analyze", "systemd")
        need("strace", "strace")
        cls.secs = parse_unit(UNIT)
        cls.tmp = scratch("tenq-unit-")
        # the unit as installed, but with the binary built here: verify wants
        # ExecStart's program to exist
        cls.exec_start = shlex.split(unit_value(cls.secs, "Service", "ExecStart"))
        cls.bin = os.path.join(cls.tmp, "tenq")
        shutil.copy(BIN, cls.bin)
        with open(UNIT) as f:
            text = f.read()
        cls.copy = os.path.join(cls.tmp, "tenq.service")
        with open(cls.copy, "w") as f:
            f.write(text.replace("ExecStart=" + cls.exec_start[0], "ExecStart=" + cls.bin))

    @classmethod
    def tearDownClass(cls):
        if not KEEP:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_systemd_analyze_verify_finds_nothing(self):
        p = run(["systemd-analyze", "verify", self.copy])
        self.assertEqual((p.returncode, p.stdout + p.stderr), (0, ""))

    def test_sandbox_exposure_is_low(self):
        # systemd's own score of the sandbox, 0 (locked down) to 10 (none): at most 2
        p = run(["systemd-analyze", "security", "--offline=yes", "--threshold=20", self.copy])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_the_user_is_made_by_sysusers(self):
        root = scratch("tenq-sysusers-")
        self.addCleanup(shutil.rmtree, root, True)
        os.makedirs(os.path.join(root, "etc"))
        p = run(["systemd-sysusers", "--root=" + root, SYSUSERS])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(root, "etc", "passwd")) as f:
            users = {ln.split(":")[0]: ln.strip().split(":") for ln in f}
        with open(os.path.join(root, "etc", "group")) as f:
            groups = {ln.split(":")[0] for ln in f}
        user = unit_value(self.secs, "Service", "User")
        self.assertIn(user, users)
        self.assertIn(unit_value(self.secs, "Service", "Group"), groups)
        self.assertEqual(users[user][6], "/usr/sbin/nologin")
        self.assertNotEqual(users[user][2], "0")

    def test_exec_start_is_where_make_install_puts_tenq(self):
        p = run(["make", "-n", "-C", SRC, "install"])
        m = re.search(r'cmake --install \S+ --prefix "?([^"\s]+)', p.stdout)
        self.assertTrue(m, p.stdout + p.stderr)
        self.assertEqual(self.exec_start[0], m.group(1) + "/bin/tenq")
        self.assertEqual(self.exec_start[1], "serve")

    def test_runs_as_the_unit_runs_it_within_its_sandbox(self):
        svc = lambda k, d=None: unit_value(self.secs, "Service", k, d)  # noqa: E731
        self.assertEqual(svc("Type"), "simple")
        self.assertEqual(svc("NoNewPrivileges"), "yes")
        self.assertEqual(svc("ProtectSystem"), "strict")
        self.assertEqual(svc("KillSignal"), "SIGTERM")
        # what systemd gives the process: its StateDirectory (made, owned by
        # the user, StateDirectoryMode) in $STATE_DIRECTORY, the limits, the
        # umask, no new privileges, the environment file's settings
        state = os.path.join(self.tmp, "var-lib", svc("StateDirectory"))
        os.makedirs(state)
        os.chmod(os.path.dirname(state), 0o755)
        os.chmod(state, int(svc("StateDirectoryMode", "0755"), 8))
        uid = gid = None
        if ROOT:
            uid, gid = 65534, 65534  # as nobody: not root, no capabilities
            os.chown(state, uid, gid)
        nice = svc("LimitNICE")
        self.assertRegex(nice, r"^\d+$", "LimitNICE as a raw rlimit (20: nice 0)")
        port = free_port()
        env = {"PATH": "/usr/bin:/bin", "STATE_DIRECTORY": state,
               "TENQ_LISTEN": "127.0.0.1:%d" % port, "TENQ_ADMIN_TOKEN": TOKEN}
        trace = os.path.join(self.tmp, "out", "unit.strace")
        log = open(os.path.join(self.tmp, "unit.log"), "w+")
        self.addCleanup(log.close)
        # the limits first (raising them needs CAP_SYS_RESOURCE), then the user
        limits = []
        for flag in ("--nice=" + nice, "--nofile=" + svc("LimitNOFILE")):
            if run(["prlimit", flag, "true"]).returncode == 0:
                limits.append(flag)
            else:
                print("\n  (this machine may not raise that limit: %s not tried)" % flag,
                      file=sys.stderr)
        can_nice = "--nice=" + nice in limits
        wrap = ["prlimit"] + limits
        if ROOT:
            wrap += ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid, "--clear-groups",
                     "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
        cmd = wrap + ["sh", "-c", 'umask %s; exec "$@"' % svc("UMask"), "sh",
                      "strace", "-f", "-qq", "-o", trace, self.bin] + self.exec_start[1:]
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=log, cwd="/")
        server = traced_child(proc.pid, self.bin)
        self.addCleanup(lambda: proc.poll() is None and os.kill(server, signal.SIGKILL))
        url = "http://127.0.0.1:%d" % port
        deadline = time.time() + 30
        while run([self.bin, "health", "--server", url, "--timeout", "1s"]).returncode != 0:
            self.assertIsNone(proc.poll(), read_log(log))
            self.assertLess(time.time(), deadline, read_log(log))
            time.sleep(0.1)
        # some work: a submit, a lease, an ack
        def call(path, body):
            req = urllib.request.Request(url + path, json.dumps(body).encode(), method="POST")
            req.add_header("Authorization", "Bearer " + TOKEN)
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.loads(r.read())
        call("/v1/jobs", {"tenant": "t", "queue": "q", "type": "T"})
        job = call("/v1/lease", {"worker": "w", "queues": ["q"], "max": 1})["jobs"][0]
        call("/v1/jobs/%d/ack" % job["id"], {"token": job["token"]})
        t0 = time.time()
        os.kill(server, signal.SIGTERM)
        rc = proc.wait(seconds(svc("TimeoutStopSec")))  # strace exits as its tracee did
        took = time.time() - t0
        text = read_log(log)
        self.assertEqual(rc, 0, text)
        self.assertLess(took, 5, "a stop should take about a second; TimeoutStopSec is the ceiling")
        self.assertIn("data-dir=%s\n" % state, text)
        if can_nice:
            self.assertIn("writer=idle-when-quiet", text, "LimitNICE should let the writer idle")
        db = os.path.join(state, "tenq.db")
        self.assertEqual(os.stat(db).st_mode & 0o777, 0o600, "UMask")
        if ROOT:
            self.assertEqual(os.stat(db).st_uid, uid)

        calls = trace_calls(trace)
        self.assertGreater(len(calls), 200)
        # SystemCallFilter: every call the server made is allowed
        expand = syscall_groups()
        allowed = set()
        for v in unit_values(self.secs, "Service", "SystemCallFilter"):
            names = set().union(*[expand(w) for w in v.lstrip("~").split()])
            allowed = allowed - names if v.startswith("~") else allowed | names
        made = {c for _, c, _ in calls if c not in ("exit", "exit_group", "rt_sigreturn")}
        self.assertEqual(made - allowed, set(), "calls outside SystemCallFilter")
        # RestrictAddressFamilies
        families = set(svc("RestrictAddressFamilies").split())
        for _, c, rest in calls:
            if c == "socket":
                fam = rest.split(",")[0]
                self.assertIn(fam, families, "socket(%s" % rest)
        # MemoryDenyWriteExecute
        for _, c, rest in calls:
            if c in ("mmap", "mprotect", "pkey_mprotect"):
                self.assertFalse("PROT_WRITE" in rest and "PROT_EXEC" in rest, c + rest)
        # ProtectSystem=strict (+ PrivateTmp, PrivateDevices, ProtectHome): it
        # writes in its StateDirectory only, and opens no device but the harmless
        writable = [state + "/", "/tmp/", "/var/tmp/", "/dev/null", "/proc/self/",
                    "/proc/thread-self/"]
        for _, c, rest in calls:
            if "= -1 " in rest:
                continue
            m = re.search(r'"([^"]*)"', rest)
            if not m:
                continue
            path = m.group(1)
            writes = (c in ("open", "openat") and re.search(r"O_WRONLY|O_RDWR|O_CREAT", rest)) or \
                c in ("mkdir", "mkdirat", "rename", "renameat", "renameat2", "unlink", "unlinkat")
            if writes and path.startswith("/"):
                self.assertTrue(any(path.startswith(w) or path == w.rstrip("/")
                                    for w in writable), "%s%s" % (c, rest))
            if c in ("open", "openat") and path.startswith("/dev/"):
                self.assertIn(path, ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"))
            self.assertFalse(path.startswith(("/home/", "/root/", "/run/user/")), c + rest)


# =================================================================================================

class Dockerfile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        need("strace", "strace")
        need("shellcheck", "shellcheck")
        cls.stages = parse_dockerfile(DOCKERFILE)
        cls.build, cls.final = cls.stages[0], cls.stages[-1]
        cls.tmp = scratch("tenq-docker-")
        cls.roots = {}
        cls.built = None  # the build stage's run, once

    @classmethod
    def tearDownClass(cls):
        if not KEEP:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def steps(self, stage, instr):
        return [(t, no) for i, t, no in stage["steps"] if i == instr]

    def one(self, stage, instr):
        s = self.steps(stage, instr)
        self.assertEqual(len(s), 1, "%s: %d" % (instr, len(s)))
        return s[0][0]

    def env_of(self, stage):
        env = {}
        for text, _ in self.steps(stage, "ENV"):
            env.update(parse_env(text))
        return env

    # ---- the text ----

    def test_lint(self):
        self.assertEqual(len(self.stages), 2, "a build stage and a runtime stage")
        self.assertEqual(self.build["base"], "debian:bookworm")
        self.assertEqual(self.final["base"], "debian:bookworm-slim")
        self.assertTrue(self.build["name"], "the build stage is named for COPY --from")
        for st in self.stages:
            self.assertNotIn("ADD", [i for i, _, _ in st["steps"]])
            for text, no in self.steps(st, "RUN"):
                self.assertIsNone(exec_form(text), "RUN at line %d: shell form" % no)
                if "apt-get install" in text:
                    self.assertRegex(text, r"apt-get update\s*&&", "line %d" % no)
                    self.assertIn("--no-install-recommends", text, "line %d" % no)
                    self.assertRegex(text, r"install -y|install\s+-[a-z]*y", "line %d" % no)
                    self.assertRegex(text, r"rm -rf /var/lib/apt/lists/\*", "line %d" % no)
                # Docker runs it with /bin/sh -c
                p = run(["shellcheck", "--shell=sh", "-"], input=text + "\n")
                self.assertEqual(p.returncode, 0, "RUN at line %d:\n%s" % (no, p.stdout))
        for instr in ("CMD", "ENTRYPOINT"):
            self.assertIsNotNone(exec_form(self.one(self.final, instr)), instr)
        # the user: numeric, not root
        user = self.one(self.final, "USER")
        self.assertRegex(user, r"^\d+(:\d+)?$")
        self.assertNotEqual(int(user.split(":")[0]), 0)
        # ports: EXPOSE, the listen address and the health check's server agree
        env = self.env_of(self.final)
        port = self.one(self.final, "EXPOSE").split("/")[0]
        self.assertTrue(env["TENQ_LISTEN"].startswith("0.0.0.0:"), env)
        self.assertEqual(env["TENQ_LISTEN"].rsplit(":", 1)[1], port)
        self.assertEqual(env["TENQ_SERVER"], "http://127.0.0.1:" + port)
        # the data: the volume is the data dir
        vol = exec_form(self.one(self.final, "VOLUME")) or self.one(self.final, "VOLUME").split()
        self.assertEqual(vol, [env["TENQ_DATA_DIR"]])
        # the health check: exec form, its own timeout inside Docker's
        flags, rest = flags_and_rest(self.one(self.final, "HEALTHCHECK"))
        self.assertTrue(rest.startswith("CMD "), rest)
        check = exec_form(rest[4:])
        self.assertIsNotNone(check)
        self.assertEqual(check[:2], ["tenq", "health"])
        # liveness (/healthz: 200 while the process answers), never readiness
        # (/readyz: 503 on a standby and while a leader waits for its disk)
        self.assertNotIn("--ready", check)
        inner = seconds(check[check.index("--timeout") + 1])
        self.assertLess(inner, seconds(flags["timeout"]))
        self.assertEqual(self.one(self.final, "STOPSIGNAL"), "SIGTERM")

    def test_the_runtime_stage_makes_its_user_and_volume(self):
        # its RUN is not run here (it would make a user on this machine): what
        # it does is read instead, and given to the image's command below
        user = self.one(self.final, "USER")
        uid, _, gid = user.partition(":")
        script = " ".join(t for t, _ in self.steps(self.final, "RUN"))
        m = re.search(r"useradd\b([^&;]*)", script)
        self.assertTrue(m, "no useradd")
        ua = m.group(1).split()
        name = ua[-1]
        self.assertEqual(ua[ua.index("--uid") + 1], uid)
        self.assertIn("--no-log-init", ua)  # a high uid: no sparse lastlog of its size
        m = re.search(r"groupadd\b([^&;]*)", script)
        self.assertTrue(m, "no groupadd")
        self.assertEqual(m.group(1).split()[m.group(1).split().index("--gid") + 1], gid or uid)
        vol = self.env_of(self.final)["TENQ_DATA_DIR"]
        m = re.search(r"install -d -o (\S+) -g (\S+) -m (\d+) " + re.escape(vol) + r"\b", script)
        self.assertTrue(m, "the volume's folder made, owned by the user")
        self.assertEqual(m.group(1), name)
        self.assertEqual(m.group(3)[-3:], "700")

    def test_packages_are_debians(self):
        if host_codename() != "bookworm":
            self.skipTest("this machine is %s, the image bookworm" % host_codename())
        for st in self.stages:
            for text, no in self.steps(st, "RUN"):
                for pkg in apt_packages(text):
                    p = run(["apt-cache", "show", "--no-all-versions", pkg])
                    self.assertEqual(p.returncode, 0, "line %d: %s: %s" % (no, pkg, p.stderr))
                    self.assertIn("Package: " + pkg, p.stdout)

    # ---- the build, run ----

    def run_build_stage(self):
        """Runs the build stage's steps on this machine: WORKDIR and COPY into a
        scratch root, RUN with the stage's ENV (apt-get's RUNs are not run:
        their packages are checked instead).  Once; returns the stage root."""
        cls = type(self)
        if cls.built is not None:
            return cls.built
        root = os.path.join(self.tmp, "build-root")
        os.makedirs(root)
        workdir, env = "/", {"PATH": os.environ["PATH"], "HOME": self.tmp}
        traces = []
        for instr, text, no in self.build["steps"]:
            if instr == "WORKDIR":
                workdir = os.path.join(workdir, text)
                os.makedirs(root + workdir, exist_ok=True)
            elif instr in ("ENV", "ARG"):
                env.update(parse_env(text))
            elif instr == "COPY":
                flags, rest = flags_and_rest(text)
                srcs = rest.split()
                self.assertEqual(srcs, [".", "."], "line %d: the build copies the context" % no)
                self.assertNotIn("from", flags)
                n = copy_context(root + workdir)
                self.assertGreater(n, 100)
                self.assertFalse(os.path.exists(root + workdir + "/.git"))
                self.assertFalse(glob.glob(root + workdir + "/build*"))
            elif instr == "RUN":
                if apt_packages(text):
                    self.assertNotRegex(re.sub(r"/var/lib/apt/lists/\*", "", text), r"(^|\s)/",
                                        "line %d: only apt-get in this RUN" % no)
                    continue
                # the commands run on this machine: no absolute paths, which
                # would land outside the scratch root
                for w in shlex.split(text):
                    self.assertFalse(w.startswith("/") and w != "/dev/null",
                                     "line %d: %s: relative to WORKDIR, please" % (no, w))
                trace = os.path.join(self.tmp, "build-%d.strace" % no)
                traces.append(trace)
                p = run(["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=open,openat,execve",
                         "-e", "status=successful", "-o", trace, "sh", "-c", text],
                        cwd=root + workdir, env=env, timeout=1800)
                self.assertEqual(p.returncode, 0, "line %d:\n%s\n%s" % (
                    no, p.stdout[-3000:], p.stderr[-3000:]))
        cls.built = (root, traces)
        return cls.built

    def test_the_build_stage_builds_with_only_what_it_installs(self):
        root, traces = self.run_build_stage()
        files = set()
        for t in traces:
            files |= opened_files(t)
        used = packages_used(files, [root, self.tmp, "/proc", "/sys", "/dev", "/tmp"])
        stage_pkgs = [p for t, _ in self.steps(self.build, "RUN") for p in apt_packages(t)]
        self.assertIn("python3", stage_pkgs)  # CMake's find_package(Python3)
        have = closure(stage_pkgs) | base_image_packages()
        missing = {p: f for p, f in used.items() if p not in have}
        self.assertEqual(missing, {}, "the build opened these packages' files; the build "
                         "stage does not install them")

    def runtime_root(self):
        """The runtime stage's files: its COPYs, from the build stage's root."""
        cls = type(self)
        if "final" in cls.roots:
            return cls.roots["final"]
        build_root, _ = self.run_build_stage()
        root = os.path.join(self.tmp, "final-root")
        os.makedirs(root)
        for text, no in self.steps(self.final, "COPY"):
            flags, rest = flags_and_rest(text)
            self.assertEqual(flags.get("from"), self.build["name"], "line %d" % no)
            src, dst = rest.split()
            self.assertTrue(os.path.isfile(build_root + src), "line %d: no %s" % (no, src))
            os.makedirs(os.path.dirname(root + dst), exist_ok=True)
            shutil.copy2(build_root + src, root + dst)
        for d, _, _ in os.walk(root):
            os.chmod(d, 0o755)
        cls.roots["final"] = root
        return root

    def image_env(self, root, port):
        env = self.env_of(self.final)
        vol = env["TENQ_DATA_DIR"]
        env["TENQ_DATA_DIR"] = root + vol
        # debian's PATH, with the image's /usr/local/bin in the scratch root
        env["PATH"] = "%s/usr/local/bin:/usr/local/bin:/usr/bin:/bin" % root
        # as `docker run -e` would: a free port here rather than 7070
        env["TENQ_LISTEN"] = "0.0.0.0:%d" % port
        env["TENQ_SERVER"] = "http://127.0.0.1:%d" % port
        return env

    def as_image_user(self):
        user = self.one(self.final, "USER")
        uid, _, gid = user.partition(":")
        if not ROOT:
            return []
        return ["setpriv", "--reuid=" + uid, "--regid=" + (gid or uid), "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all"]

    def test_the_image_runs_serves_checks_its_health_and_stops(self):
        root = self.runtime_root()
        user = self.one(self.final, "USER")
        vol = root + self.env_of(self.final)["TENQ_DATA_DIR"]
        os.makedirs(vol, exist_ok=True)
        os.chmod(vol, 0o700)
        if ROOT:
            os.chown(vol, int(user.split(":")[0]), int(user.partition(":")[2] or user))
        port = free_port()
        env = self.image_env(root, port)
        cmd = exec_form(self.one(self.final, "ENTRYPOINT")) + exec_form(self.one(self.final, "CMD"))
        tenq = shutil.which(cmd[0], path=env["PATH"])
        self.assertEqual(tenq, root + "/usr/local/bin/tenq")
        argv = self.as_image_user() + [tenq] + cmd[1:]
        flags, rest = flags_and_rest(self.one(self.final, "HEALTHCHECK"))
        check = exec_form(rest[4:])
        check_argv = self.as_image_user() + [shutil.which(check[0], path=env["PATH"])] + check[1:]
        stop = getattr(signal, self.one(self.final, "STOPSIGNAL"))

        # `docker run --rm tenq serve --help`
        p = run(argv + ["--help"], env=env, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("--data-dir", p.stdout)
        # on 0.0.0.0 without a token it refuses to start, and says what to do
        p = run(argv, env=env, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("TENQ_ADMIN_TOKEN", p.stderr)
        self.assertEqual(run(check_argv, env=env, timeout=30).returncode, 1)

        env["TENQ_ADMIN_TOKEN"] = TOKEN  # docker run -e TENQ_ADMIN_TOKEN=...
        trace = os.path.join(self.tmp, "out", "image.strace")
        log = open(os.path.join(self.tmp, "image.log"), "w+")
        self.addCleanup(log.close)
        traced = argv[:len(self.as_image_user())] + [
            "strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=open,openat,execve",
            "-e", "status=successful", "-o", trace] + argv[len(self.as_image_user()):]
        job = None
        for start in range(2):
            proc = subprocess.Popen(traced if start == 0 else argv, env=env, stdout=log,
                                    stderr=log, cwd="/")
            server = traced_child(proc.pid, tenq) if start == 0 else proc.pid
            self.addCleanup(lambda p=proc, s=server: p.poll() is None and
                            os.kill(s, signal.SIGKILL))
            deadline = time.time() + float(seconds(flags["start-period"]))
            while True:
                p = run(check_argv, env=env, timeout=seconds(flags["timeout"]) + 5)
                if p.returncode == 0:
                    break
                self.assertIsNone(proc.poll(), read_log(log))
                self.assertLess(time.time(), deadline, p.stderr + read_log(log))
                time.sleep(0.2)
            self.assertRegex(p.stdout, r": ok, leader, term \d+\n$")
            cli = dict(env, TENQ_TOKEN=TOKEN)
            if start == 0:
                # `docker exec tenq tenq submit ...`: the CLI in the image reaches its server
                p = run(self.as_image_user() + [tenq, "submit", "--tenant", "t", "--queue", "q",
                                                "--type", "T"],
                        env=cli, timeout=30)
                self.assertEqual(p.returncode, 0, p.stderr)
                job = p.stdout.strip()
                # a schedule in a zone of its own: the server reads tzdata's files
                p = run(self.as_image_user() + [tenq, "schedule", "set", "nightly", "--cron",
                                                "0 3 * * *", "--timezone", "Europe/Berlin",
                                                "--tenant", "t", "--queue", "q", "--type", "N"],
                        env=cli, timeout=30)
                self.assertEqual(p.returncode, 0, p.stderr)
            else:
                # the job survived the restart: it is on the volume
                p = run(self.as_image_user() + [tenq, "status", job, "--json"], env=cli, timeout=30)
                self.assertEqual(json.loads(p.stdout)["state"], "ready", p.stdout + p.stderr)
            # docker stop: STOPSIGNAL, then SIGKILL after 10 s
            t0 = time.time()
            os.kill(server, stop)
            self.assertEqual(proc.wait(10), 0, read_log(log))
            self.assertLess(time.time() - t0, 10)
            self.assertEqual(run(check_argv, env=env, timeout=30).returncode, 1)
        text = read_log(log)
        self.assertIn("data-dir=%s\n" % vol, text)
        self.assertTrue(os.path.isfile(os.path.join(vol, "tenq.db")))
        if ROOT:
            self.assertEqual(os.stat(os.path.join(vol, "tenq.db")).st_uid, int(user.split(":")[0]))

        # the libraries it loaded come from packages the runtime stage installs
        used = packages_used(opened_files(trace), [root, self.tmp, "/proc", "/sys", "/dev",
                                                  "/tmp"])
        stage_pkgs = [p for t, _ in self.steps(self.final, "RUN") for p in apt_packages(t)]
        have = closure(stage_pkgs) | base_image_packages()
        missing = {p: f for p, f in used.items() if p not in have}
        self.assertEqual(missing, {}, "the server opened these packages' files; the runtime "
                         "stage does not install them")
        self.assertIn("libsqlite3-0", used)
        # and nothing more than it needs: each package it installs is used (tzdata too,
        # though /etc/localtime, found by looking, also leads to it)
        opened = packages_used(opened_files(trace), [root, self.tmp, "/proc", "/sys", "/dev",
                                                     "/tmp"], excuse=False)
        for pkg in stage_pkgs:
            self.assertIn(pkg, opened, "%s is installed but not used" % pkg)


if __name__ == "__main__":
    if not os.path.exists(BIN):
        sys.exit("set TENQ_BIN to the tenq binary")
    unittest.main(verbosity=2)
