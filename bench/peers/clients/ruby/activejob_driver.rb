#!/usr/bin/env ruby
# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

# W1 through ActiveJob (Rails 6.1's, Debian's ruby-activejob), the driver
# contract of bench/peers/README.md: N blank ActiveJob jobs enqueued (timed:
# enqueue jobs/s), then drained with concurrency C (timed: drain jobs/s).
#
#   tenq-ruby-activejob       queue_adapter :tenq, BlankJob.perform_later one by one; a Tenq::Worker
#   tenq-ruby-activejob-bulk  the same, enqueued by Tenq::ActiveJob.perform_all_later (submit_many)
#   sidekiq-activejob         queue_adapter :sidekiq (ActiveJob's own adapter, Sidekiq::Client.push a job),
#                             one `sidekiq -c C` process; first start to last end, taken in it
#
#   activejob_driver.rb --system NAME --workload W1 --url URL --concurrency 5 --jobs 100000
#
# Prints one JSON line; exits 1 when something failed or a job did not
# run once, 2 for a workload other than W1.
require "json"
require "optparse"

opts = { "jobs" => 100_000, "concurrency" => 5, "timeout" => 1800 }
OptionParser.new do |o|
  %w[system workload url].each { |k| o.on("--#{k} V", String) { |v| opts[k] = v } }
  %w[jobs concurrency timeout].each { |k| o.on("--#{k} N", Integer) { |v| opts[k] = v } }
end.parse!(ARGV)

unless opts["workload"] == "W1"
  warn "activejob_driver.rb: #{opts['system']} runs W1 only, not #{opts['workload'].inspect}"
  exit 2
end

begin
  raise ArgumentError, "--url is required" unless opts["url"]

  case opts["system"]
  when "tenq-ruby-activejob", "tenq-ruby-activejob-bulk"
    require_relative "activejob_tenq"
    puts JSON.generate(ActiveJobTenq.new(opts).run)
  when "sidekiq-activejob"
    require_relative "activejob_sidekiq"
    puts JSON.generate(ActiveJobSidekiq.new(opts).run)
  else
    raise ArgumentError, "unknown system #{opts['system'].inspect}"
  end
rescue StandardError, ScriptError => e
  warn "activejob_driver.rb: #{e.class}: #{e.message}"
  exit 1
end
