# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "lib/tenq/version"

Gem::Specification.new do |spec|
  spec.name = "tenq"
  spec.version = Tenq::VERSION
  spec.summary = "Client, worker and sync/async switch for tenq, the multi-tenant job queue"
  spec.description = <<~TEXT
    The Ruby library of tenq (HTTP/JSON protocol v1): a thread-safe client with keep-alive
    connections, bulk submits that are safe to send again (Idempotency-Key) and leader
    following; methods that run inline or as jobs (report.async.execute(42)); an in-process
    worker with concurrency, heartbeats, cancellation, timeouts, graceful stop and middleware;
    jobs submitted and completed in the application's own PostgreSQL transaction (Tenq::Tx);
    Sidekiq-style perform_async; an ActiveJob adapter and a Railtie (config/tenq.yml); the
    tenq-worker command; test modes; tracing hooks. Standard library only (ActiveJob and Rails
    when you use them).
  TEXT
  spec.authors = ["The tenq authors"]
  spec.license = "Apache-2.0"
  spec.required_ruby_version = ">= 3.1"
  spec.files = Dir[File.join(__dir__, "{lib,sig}/**/*.{rb,rbs}")].map { |f| f.delete_prefix("#{__dir__}/") } +
               %w[exe/tenq-worker README.md CHANGELOG.md tenq.gemspec]
  spec.bindir = "exe"
  spec.executables = ["tenq-worker"]
  spec.require_paths = ["lib"]
end
