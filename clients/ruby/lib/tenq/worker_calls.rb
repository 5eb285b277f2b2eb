# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "json"

module Tenq
  # The worker's side of the protocol (docs/API.md, "Workers"): lease,
  # start, heartbeat, ack, fail and outcomes. Included in {Client}; the
  # {Worker} uses these, and a program with its own loop may too. Every
  # call but lease is fenced by the lease token, so it is sent again after
  # a broken connection.
  module WorkerCalls
    # An absent argument (nil is a value for progress).
    NONE = Object.new.freeze

    # POST /v1/lease, with the outcomes of the jobs run before (Hashes as
    # {#outcomes} takes them). Returns the answer: "jobs" (with +columns+,
    # "columns": a list per field, see {LeaseRow}) and, with outcomes, their
    # "results".
    # @param wait [Numeric] seconds to long-poll when nothing is eligible
    # @return [Hash{String => Object}]
    def lease(queues:, max: 1, wait: 0, worker: nil, types: nil, outcomes: nil, columns: false)
      body = { "queues" => Array(queues), "max" => max, "wait_ms" => (wait * 1000).round }
      body["columns"] = true if columns
      body["worker"] = worker if worker
      body["types"] = Array(types) if types && !Array(types).empty?
      body["outcomes"] = outcomes if outcomes && !outcomes.empty?
      transport.call("POST", "/v1/lease", JSON.generate(body), retry_safe: false, wait: wait)
    end

    # The handler began: the job is running.
    # @return [Hash{String => Object}]
    def start(id, token)
      fenced("/v1/jobs/#{Integer(id)}/start", "token" => token)
    end

    # Extends the lease, carrying progress (any JSON) when given.
    # @return [Hash{String => Object}] "lease_until" and "cancel"
    def heartbeat(id, token, progress: NONE)
      body = { "token" => token }
      body["progress"] = JSONValue.check!(progress, "progress") unless NONE.equal?(progress)
      fenced("/v1/jobs/#{Integer(id)}/heartbeat", body)
    end

    # The job succeeded with this result (any JSON).
    # @return [Hash{String => Object}]
    def ack(id, token, result: nil, stats: nil)
      body = { "token" => token, "result" => JSONValue.check!(result, "result") }
      body["stats"] = JSONValue.check!(stats, "stats") if stats
      fenced("/v1/jobs/#{Integer(id)}/ack", body)
    end

    # The attempt failed.
    # @param retry_in [Numeric, nil] seconds until the retry (else the queue's backoff)
    # @param no_retry [Boolean] true: to the morgue now
    # @param cancelled [Boolean] the handler stopped because the job was cancelled
    # @return [Hash{String => Object}]
    def fail(id, token, error: nil, retry_in: nil, no_retry: false, cancelled: false)
      body = { "token" => token }
      body["error"] = error.to_s if error
      body["retry_in_ms"] = (retry_in * 1000).round if retry_in
      body["retry"] = false if no_retry
      body["cancelled"] = true if cancelled
      fenced("/v1/jobs/#{Integer(id)}/fail", body)
    end

    # Acks and fails in one request: Hashes {"id", "token", "ok", "result"
    # | "error", "retry_in_ms", "retry", "cancelled", "stats"}.
    # @return [Array<Hash{String => Object}>] the results, in order
    def outcomes(list)
      answer = fenced("/v1/outcomes", "outcomes" => list)
      results = answer["results"]
      raise ProtocolError, "the outcomes answer holds no results" unless results.is_a?(Array)

      results
    end

    private

    def fenced(path, body)
      transport.call("POST", path, JSON.generate(body), retry_safe: true)
    end
  end
end
