# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # A queue or a tenant as the server shows it (GET /v1/queues/{name},
  # /v1/tenants/{name}): its settings (docs/SEMANTICS.md) and its counts
  # (docs/API.md). The fields are readers; {#[]} and {#to_h} give the raw
  # hash, so a field added to the protocol later is there too.
  class SettingsInfo
    # The counts both show. +held+: ready jobs held by a limit (slots, a
    # cap, a pause, a rate); +rate_limited_until+: only while a rate limit
    # of its own allows no start (milliseconds since the epoch); +waiting+:
    # jobs waiting for their parents (+depends_on+); +queued+ and
    # +queued_bytes+: the unfinished jobs and their args' bytes, what the
    # quotas count.
    COUNTS = %i[ready scheduled blocked waiting leased running dead queued queued_bytes eligible held
                rate_limited_until lag_ms submitted_total succeeded_total failed_total dead_total
                cancelled_total expired_total completed_per_s failed_per_s].freeze
    COUNTS.each { |f| define_method(f) { @data[f.to_s] } }

    # @param data [Hash{String => Object}] the JSON object
    def initialize(data)
      unless data.is_a?(Hash) && data["name"]
        raise ProtocolError, "the answer is not a #{kind}: #{data.inspect[0, 200]}"
      end

      @data = data
    end

    # @return [String]
    def name
      @data["name"]
    end

    # @return [Object] the raw field
    def [](field)
      @data[field.to_s]
    end

    # @return [Hash{String => Object}]
    def to_h
      @data.dup
    end

    def ==(other)
      other.instance_of?(self.class) && other.to_h == @data
    end

    def inspect
      "#<#{self.class.name} #{name}>"
    end

    private

    def kind
      "queue or tenant"
    end
  end

  # A queue: its settings (+timeout_ms+: 0 for none; +rate+ and
  # +tenant_rate+ per +rate_period_ms+ with bursts of +rate_burst+, nil for
  # no limit), its pauses and its counts.
  class QueueInfo < SettingsInfo
    SETTINGS = %i[order delivery lease_ms max_attempts backoff backoff_base_ms backoff_max_ms merge
                  dedup_window_ms retention_ms max_payload_bytes tenant_cap timeout_ms rate tenant_rate
                  rate_period_ms rate_burst max_queued max_queued_bytes concurrency_limit aging_ms
                  aging_cap].freeze
    SETTINGS.each { |f| define_method(f) { @data[f.to_s] } }

    # Paused whole.
    def paused?
      @data["paused"] == true
    end

    # @return [Array<String>] the tenants it is paused for (a tenant token sees only its own)
    def paused_tenants
      @data["paused_tenants"] || []
    end

    private

    def kind
      "queue"
    end
  end

  # A tenant: +slots+ (nil: unlimited; 0: paused in every queue), +weight+,
  # its +rate+ of starts in every queue together per +rate_period_ms+ with
  # bursts of +rate_burst+ (nil: no limit, the rate), and its counts.
  class TenantInfo < SettingsInfo
    SETTINGS = %i[slots weight in_use rate rate_period_ms rate_burst max_queued max_queued_bytes].freeze
    SETTINGS.each { |f| define_method(f) { @data[f.to_s] } }

    private

    def kind
      "tenant"
    end
  end
end
