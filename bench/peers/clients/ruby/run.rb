#!/usr/bin/env ruby
# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

# Runs W1 for the tenq gem and for Sidekiq, RUNS times each, interleaved,
# each run against fresh servers (a tenq on SQLite, a Redis without
# persistence) in a temporary folder, and prints every run's JSON line, then
# the medians and the ratios tenq / Sidekiq.
#
#   ruby run.rb [--runs 3] [--jobs 100000] [--concurrency 5]
#
# tenq-ruby is the gem's worker as it comes (prefetch :auto); tenq-ruby-prefetch0
# leases no more than its runners can take at once.
require "json"
require "optparse"
require "socket"
require "tmpdir"

opts = { runs: 3, jobs: 100_000, concurrency: 5 }
OptionParser.new do |o|
  %i[runs jobs concurrency].each { |k| o.on("--#{k} N", Integer) { |v| opts[k] = v } }
end.parse!(ARGV)
TENQ_BIN = ENV.fetch("TENQ_BIN", "/opt/tenq-snapshot/tenq")
DRIVER = File.expand_path("driver.rb", __dir__)

def free_port
  s = TCPServer.new("127.0.0.1", 0)
  s.addr[1]
ensure
  s&.close
end

def wait_for(what, deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 30)
  until yield
    raise "#{what} did not start" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

    sleep 0.02
  end
end

def with_server(kind, dir)
  if kind == :tenq
    port_file = File.join(dir, "port")
    pid = spawn(TENQ_BIN, "serve", "--store", "sqlite:#{dir}/tenq.db", "--listen", "127.0.0.1:0",
                "--port-file", port_file, out: File::NULL, err: File.join(dir, "tenq.log"))
    wait_for("tenq") { File.size?(port_file) }
    yield ["--server", "http://127.0.0.1:#{File.read(port_file).strip}"]
  else
    port = free_port
    pid = spawn("redis-server", "--port", port.to_s, "--save", "", "--appendonly", "no", "--dir", dir,
                out: File::NULL, err: File::NULL)
    wait_for("redis") { (TCPSocket.new("127.0.0.1", port).close || true) rescue false } # rubocop:disable Style/RescueModifier
    yield ["--redis", "redis://127.0.0.1:#{port}/0"]
  end
ensure
  if pid
    Process.kill("TERM", pid)
    Process.wait(pid)
  end
end

systems = [["tenq-ruby", :tenq, []], ["tenq-ruby-prefetch0", :tenq, ["--prefetch", "0"]], ["sidekiq", :redis, []]]
results = Hash.new { |h, k| h[k] = [] }
opts[:runs].times do
  systems.each do |name, kind, extra|
    Dir.mktmpdir("w1-ruby-") do |dir|
      system("sync")
      sleep 1
      with_server(kind, dir) do |where|
        cmd = [RbConfig.ruby, DRIVER, "--system", kind == :tenq ? "tenq" : "sidekiq", "--jobs", opts[:jobs].to_s,
               "--concurrency", opts[:concurrency].to_s, *where, *extra]
        line = IO.popen(cmd, &:read)
        raise "#{name}: the driver failed" unless $?.success? # rubocop:disable Style/SpecialGlobalVars

        puts line
        results[name] << JSON.parse(line)
      end
    end
  end
end

def median(runs, key)
  runs.map { |r| r[key] }.sort[runs.size / 2]
end

peer = results.fetch("sidekiq")
results.each do |name, runs|
  enq = median(runs, "enqueue_per_s")
  drain = median(runs, "drain_per_s")
  puts format("%<name>-22s enqueue %<enq>8d/s (x%<er>.2f)  drain %<drain>7d/s (x%<dr>.2f)",
              name: name, enq: enq, er: enq.fdiv(median(peer, "enqueue_per_s")),
              drain: drain, dr: drain.fdiv(median(peer, "drain_per_s")))
end
