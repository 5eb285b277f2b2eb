# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # A schedule (periodic job) as the server shows it (GET
  # /v1/schedules/{name}; docs/API.md, "Schedules"). The fields are readers
  # (times in milliseconds since the epoch); {#[]} and {#to_h} give the raw
  # hash, so a field added to the protocol later is there too.
  class Schedule
    # What a schedule does with ticks due while it could not run.
    MISSED = %w[skip once each].freeze
    FIELDS = %i[name cron timezone missed last_tick last_job next_tick last_error created_at updated_at].freeze
    FIELDS.each { |f| define_method(f) { @data[f.to_s] } }

    # @param data [Hash{String => Object}] the schedule's JSON object
    def initialize(data)
      unless data.is_a?(Hash) && data["name"].is_a?(String)
        raise ProtocolError, "the answer is not a schedule: #{data.inspect[0, 200]}"
      end

      @data = data
    end

    # Paused: no ticks until resumed ({#next_tick} is nil).
    def paused?
      @data["paused"] == true
    end

    # @return [ScheduleJob] the job each tick submits
    def job
      ScheduleJob.new(@data["job"].is_a?(Hash) ? @data["job"] : {})
    end

    # @return [Array<Integer>] the next ticks (five from {Client#schedule}, +runs:+ from {Client#schedules})
    def next_runs
      @data["next_runs"] || []
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
      other.is_a?(Schedule) && other.to_h == @data
    end

    def inspect
      "#<Tenq::Schedule #{name} #{cron.inspect}#{' paused' if paused?}>"
    end
  end

  # The job a schedule submits at each tick: a submit's fields
  # (+max_attempts+ and +timeout_ms+ nil: the queue's).
  class ScheduleJob
    FIELDS = %i[tenant queue type args key priority unique_key max_attempts timeout_ms].freeze
    FIELDS.each { |f| define_method(f) { @data[f.to_s] } }

    # @param data [Hash{String => Object}]
    def initialize(data)
      @data = data
    end

    def unique?
      @data["unique"] == true
    end

    # @return [Hash{String => Object}]
    def to_h
      @data.dup
    end
  end

  # One attempt of a job (GET /v1/jobs/{id}/attempts), oldest first:
  # +attempt+ (the job's attempt count at that lease), +token+ (admin and
  # worker tokens only), +worker+, +leased_at+ / +started_at+ /
  # +finished_at+ (nil while under way), +outcome+ (one of {OUTCOMES}),
  # +job_state+ (the state it left the job in), +error+ and +stats+;
  # {#steps}, the names of the durable steps it stored ("suspended": one
  # parked the job, not a failure).
  class Attempt
    OUTCOMES = %w[failed expired timed_out cancelled succeeded leased running suspended].freeze
    FIELDS = %i[attempt token worker leased_at started_at finished_at outcome job_state error stats].freeze
    FIELDS.each { |f| define_method(f) { @data[f.to_s] } }

    # @param data [Hash{String => Object}]
    def initialize(data)
      unless data.is_a?(Hash) && data["outcome"].is_a?(String)
        raise ProtocolError, "the answer is not an attempt: #{data.inspect[0, 200]}"
      end

      @data = data
    end

    # @return [Array<String>]
    def steps
      Array(@data["steps"])
    end

    # @return [Hash{String => Object}]
    def to_h
      @data.dup
    end

    def ==(other)
      other.is_a?(Attempt) && other.to_h == @data
    end

    def inspect
      "#<Tenq::Attempt #{attempt} #{outcome}>"
    end
  end
end
