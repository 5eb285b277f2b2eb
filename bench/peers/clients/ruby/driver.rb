#!/usr/bin/env ruby
# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

# The tenq-ruby driver of the peer benchmark (bench/peers/README.md, "The
# driver contract"): W1 with the Ruby library, blank jobs enqueued in bulk
# with Tenq::Client#submit_many (timed: enqueue jobs/s), then drained by a
# Tenq::Worker with concurrency C (timed: drain jobs/s), against a tenq
# server the runner started. Every job is checked to have run once.
#
#   driver.rb --system tenq-ruby --workload W1 --url http://127.0.0.1:PORT --concurrency 5 --jobs 100000
#             [--prefetch N]   (the worker's default is :auto)
#
# Prints one JSON line and exits 0; exits 1 when something failed or a job
# did not run, 2 for a workload other than W1 (this driver has only W1).
require "json"
require "optparse"

opts = { "system" => "tenq-ruby", "jobs" => 100_000, "concurrency" => 5 }
OptionParser.new do |o|
  %w[system workload url].each { |k| o.on("--#{k} V", String) { |v| opts[k] = v } }
  %w[jobs concurrency prefetch].each { |k| o.on("--#{k} N", Integer) { |v| opts[k] = v } }
end.parse!(ARGV)

unless opts["workload"] == "W1"
  warn "driver.rb: #{opts['system']} runs W1 only, not #{opts['workload'].inspect} " \
       "(the Ruby library's W2-W5 and MEM are those of tenq-sqlite: the same server)"
  exit 2
end

begin
  raise ArgumentError, "--url http://HOST:PORT is required" unless opts["url"]

  require_relative "tenq_w1"
  puts JSON.generate(TenqW1.new(opts).run)
rescue StandardError, ScriptError => e
  warn "driver.rb: #{e.class}: #{e.message}"
  exit 1
end
