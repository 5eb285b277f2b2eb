#!/usr/bin/env ruby
# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

# W1 (blank jobs) for the Ruby client library: N jobs enqueued in bulk
# (timed: enqueue jobs/s), then drained with concurrency C (timed: drain
# jobs/s), on tenq through the tenq gem, or on Sidekiq over Redis.
#
#   driver.rb --system tenq --jobs 100000 --concurrency 5 --server http://127.0.0.1:PORT [--prefetch 0]
#   driver.rb --system sidekiq --jobs 100000 --concurrency 5 --redis redis://127.0.0.1:PORT/0
#
# Prints one JSON line {"system", "jobs", "enqueue_per_s", "drain_per_s"}
# and exits 0; exits 1 with a message when something failed or a job did
# not run. README.md beside this file says how the numbers were taken.
require "json"
require "optparse"

opts = { jobs: 100_000, concurrency: 5 }
OptionParser.new do |o|
  o.on("--system NAME", %w[tenq sidekiq]) { |v| opts[:system] = v }
  o.on("--jobs N", Integer) { |v| opts[:jobs] = v }
  o.on("--concurrency N", Integer) { |v| opts[:concurrency] = v }
  o.on("--server URL", String) { |v| opts[:server] = v }
  o.on("--redis URL", String) { |v| opts[:redis] = v }
  o.on("--queue NAME", String) { |v| opts[:queue] = v }
  o.on("--prefetch N", Integer, "tenq: jobs leased ahead of free runners (default: the worker's :auto)") do |v|
    opts[:prefetch] = v
  end
end.parse!(ARGV)

begin
  case opts[:system]
  when "tenq"
    raise ArgumentError, "--server URL is required" unless opts[:server]

    require_relative "tenq_w1"
    result = TenqW1.new(opts).run
  when "sidekiq"
    raise ArgumentError, "--redis URL is required" unless opts[:redis]

    require_relative "sidekiq_w1"
    result = SidekiqW1.new(opts).run
  else
    raise ArgumentError, "--system tenq|sidekiq is required"
  end
  puts JSON.generate(result)
rescue StandardError, ScriptError => e
  warn "driver: #{e.class}: #{e.message}"
  exit 1
end
