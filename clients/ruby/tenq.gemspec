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
    test modes; tracing hooks. Standard library only.
  TEXT
  spec.authors = ["The tenq authors"]
  spec.license = "Apache-2.0"
  spec.required_ruby_version = ">= 3.1"
  spec.files = Dir[File.join(__dir__, "{lib,sig}/**/*.{rb,rbs}")].map { |f| f.delete_prefix("#{__dir__}/") } +
               %w[README.md tenq.gemspec]
  spec.require_paths = ["lib"]
end
