# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # A job as GET /v1/jobs/{id} (and the wait and list calls) show it. The
  # fields of docs/API.md are readers; {#[]} and {#to_h} give the raw hash,
  # so a field added to the protocol later is there too.
  class JobInfo
    STATES = %w[scheduled blocked waiting ready leased running dead succeeded cancelled merged expired].freeze
    FINISHED = %w[succeeded cancelled merged expired dead].freeze
    # Why a job that is neither handed out nor finished waits: the "reason"
    # of {#waiting} (with "until" for scheduled, backoff and the rates).
    # concurrency_key: with "key", "active", "limit" and "held_by"; rate_key: with "key" and "until".
    WAITING_REASONS = %w[scheduled backoff lane tenant_slots tenant_cap queue_paused tenant_paused tenant_rate
                         queue_rate queue_tenant_rate worker no_worker parents sleep event child
                         concurrency_key rate_key].freeze

    FIELDS = %i[id tenant queue type key args payloads priority state attempts max_attempts run_at
                created_at ready_at leased_at started_at finished_at worker error result stats
                progress unique_key idempotency_key lease_until merged_into token traceparent timeout_ms
                waiting on_parent_failure batch batch_callback awaited_by expire_at debounce_until].freeze
    FIELDS.each { |f| define_method(f) { @data[f.to_s] } }

    # @param data [Hash{String => Object}] the job's JSON object
    def initialize(data)
      raise ProtocolError, "the answer is not a job: #{data.inspect[0, 200]}" unless data.is_a?(Hash) && data["id"]

      @data = data
    end

    # @return [Object] the raw field
    def [](name)
      @data[name.to_s]
    end

    # @return [Hash{String => Object}]
    def to_h
      @data.dup
    end

    # Its concurrency keys (docs/SEMANTICS.md), each {"key", "limit"?} ([] when none).
    # @return [Array<Hash{String => Object}>]
    def concurrency_keys
      Array(@data["concurrency_keys"])
    end

    # Its rate keys, each {"key", "cost", "rate"?, ...} ([] when none).
    # @return [Array<Hash{String => Object}>]
    def rate_keys
      Array(@data["rate_keys"])
    end

    # Submitted with +debounce_ms+: later submits of its lane replace it while pending.
    def debounced?
      @data["debounced"] == true
    end

    # Succeeded, cancelled, merged, expired or dead: what a wait waits for.
    def finished?
      FINISHED.include?(state)
    end

    def succeeded?
      state == "succeeded"
    end

    # @return [String, nil] why it waits (one of {WAITING_REASONS}), nil when it does not
    def waiting_reason
      w = @data["waiting"]
      w.is_a?(Hash) ? w["reason"] : nil
    end

    # The ids of the jobs it depends on, in the order given ([] when none).
    # @return [Array<Integer>]
    def parents
      Array(@data["parents"])
    end

    # The ids of the jobs that depend on it (the first 1,000).
    # @return [Array<Integer>]
    def children
      Array(@data["children"])
    end

    # How many jobs depend on it.
    # @return [Integer]
    def children_count
      @data["children_count"] || children.size
    end

    # How many durable steps its handler stored ({Client#steps}; 0 when none).
    # @return [Integer]
    def steps
      @data["steps"] || 0
    end

    def cancel_requested?
      @data["cancel_requested"] == true
    end

    def ==(other)
      other.is_a?(JobInfo) && other.to_h == @data
    end

    def inspect
      "#<Tenq::JobInfo id=#{id} type=#{type} state=#{state}>"
    end
  end
end
