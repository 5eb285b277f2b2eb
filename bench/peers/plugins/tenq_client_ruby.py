# SPDX-License-Identifier: Apache-2.0
"""The Ruby client library as a system of the peer benchmark: tenq-ruby, the
tenq gem (clients/ruby/lib) against `tenq serve` on SQLite, W1 only; beside
it the `sidekiq` system of run.py, the queue Ruby people use.

tenq-ruby is tenq-sqlite's server (the same start, stop and durability) with
another driver: bench/peers/clients/ruby/driver.rb (Client#submit_many, then
a Tenq::Worker with concurrency 5). tenq-ruby-prefetch0 is the same with the
worker's prefetch 0 (it leases no more jobs than it has free runners), run
only when named (--only).

W1's ActiveJob path (issue #43): tenq-ruby-activejob is the same server
with bench/peers/clients/ruby/activejob_driver.rb (ActiveJob 6.1,
queue_adapter :tenq, BlankJob.perform_later one job a call, drained by a
Tenq::Worker through ActiveJob::Base.execute); tenq-ruby-activejob-bulk
enqueues by Tenq::ActiveJob.perform_all_later (submit_many);
sidekiq-activejob is run.py's Sidekiq system (a private Redis) with the same
driver on ActiveJob's own :sidekiq adapter, drained by one `sidekiq -c 5`.

The drivers have W1 only: a system lists its workloads in `workloads`, and
until run.py skips the others the systems are left out of the default run
(by_default False), so that `make bench-peers-quick` does not fail on W2.
"""
import os
import re
import shutil
import subprocess

DRIVER = ("clients", "ruby", "driver.rb")
ACTIVEJOB_DRIVER = ("clients", "ruby", "activejob_driver.rb")


def register_systems(register, base):
    class TenqRuby(base.Tenq):
        workloads = ("W1",)

        def __init__(self, name, prefetch=None):
            super().__init__(name, "sqlite")
            self.prefetch = prefetch
            self.by_default = False

        def available(self):
            if not os.access(self.bin(), os.X_OK):
                return f"{self.bin()} is not built (make)"
            if not shutil.which("ruby"):
                return "ruby is not installed (apt-get install ruby)"
            return None

        def versions(self):
            v = super().versions()
            v["ruby"] = base.dpkg_version("ruby3.1") or ruby_version()
            v["tenq gem"] = gem_version(base.REPO)
            return v

        def driver(self):
            cmd = ["ruby", os.path.join(base.HERE, *DRIVER), "--system", self.name]
            if self.prefetch is not None:
                cmd += ["--prefetch", str(self.prefetch)]
            return cmd

    class TenqRubyActiveJob(TenqRuby):
        def versions(self):
            v = super().versions()
            v["ruby-activejob"] = base.dpkg_version("ruby-activejob")
            return v

        def driver(self):
            return ["ruby", os.path.join(base.HERE, *ACTIVEJOB_DRIVER), "--system", self.name]

    class SidekiqActiveJob(base.Sidekiq):
        name = "sidekiq-activejob"
        workloads = ("W1",)
        by_default = False

        def versions(self):
            v = super().versions()
            v["ruby-activejob"] = base.dpkg_version("ruby-activejob")
            return v

        def driver(self):
            return ["ruby", os.path.join(base.HERE, *ACTIVEJOB_DRIVER), "--system", self.name]

    register(TenqRuby("tenq-ruby"))
    register(TenqRuby("tenq-ruby-prefetch0", prefetch=0))
    register(TenqRubyActiveJob("tenq-ruby-activejob"))
    register(TenqRubyActiveJob("tenq-ruby-activejob-bulk"))
    register(SidekiqActiveJob())


def ruby_version():
    try:
        return subprocess.run(["ruby", "-e", "print RUBY_VERSION"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def gem_version(repo):
    try:
        with open(os.path.join(repo, "clients", "ruby", "lib", "tenq", "version.rb")) as f:
            m = re.search(r'VERSION\s*=\s*"([^"]+)"', f.read())
        return m.group(1) if m else None
    except OSError:
        return None
