# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "json"
require "uri"

module Tenq
  # Schedules (periodic jobs; docs/API.md, "Schedules") and a job's attempt
  # history. Included in {Client}. Each call may be sent again after a
  # broken connection: the same request sets the same state.
  module ScheduleCalls
    # The job fields a schedule takes (+run_at+, +idempotency_key+,
    # +traceparent+ and +score+ are not a schedule's).
    SCHEDULE_JOB_FIELDS = %i[tenant queue type args key priority unique_key unique max_attempts timeout_ms].freeze

    # PUT /v1/schedules/{name}: creates the schedule, or replaces it whole
    # (its +created_at+ and last tick stay). +cron+: five fields,
    # +@hourly+-style names or +@every 30s+, wall-clock times in +timezone+
    # (an IANA name, default UTC); +missed+: "skip" (default), "once" or
    # "each". +job+ fields are a submit's (+queue:+ and +tenant:+ default to
    # the client's).
    # @return [Schedule]
    # @raise [InvalidError] a bad expression, zone or job field, naming it
    #   ("cron", "timezone", "job.timeout_ms", ...); nothing changes
    def put_schedule(name, cron:, type:, timezone: nil, missed: nil, paused: nil, **job)
      unknown = job.keys - SCHEDULE_JOB_FIELDS
      raise InvalidError.new("unknown job field #{unknown.first}", field: "job.#{unknown.first}") unless unknown.empty?

      body = { "cron" => cron, "job" => schedule_job(type, job) }
      body["timezone"] = timezone unless timezone.nil?
      body["missed"] = missed.to_s unless missed.nil?
      body["paused"] = paused unless paused.nil?
      Schedule.new(transport.call("PUT", schedule_path(name), JSON.generate(body), retry_safe: true))
    end

    # GET /v1/schedules/{name}: the schedule with its next five runs.
    # @return [Schedule]
    # @raise [NotFoundError]
    def schedule(name)
      Schedule.new(transport.call("GET", schedule_path(name), nil, retry_safe: true))
    end

    # GET /v1/schedules: the schedules the token sees (of +tenant+), by
    # name, each with its next +runs+ ticks (0-5, default 1).
    # @return [Array<Schedule>]
    def schedules(tenant: nil, runs: nil)
      query = { "tenant" => tenant, "runs" => runs }.compact
      path = "/v1/schedules#{"?#{URI.encode_www_form(query)}" unless query.empty?}"
      list = transport.call("GET", path, nil, retry_safe: true)
      items = list.is_a?(Hash) ? list["schedules"] : nil
      raise ProtocolError, "the schedules answer has no list" unless items.is_a?(Array)

      items.map { |s| Schedule.new(s) }
    end

    # DELETE /v1/schedules/{name}: the jobs it made stay.
    # @return [true]
    # @raise [NotFoundError] when there was none
    def delete_schedule(name)
      ans = transport.call("DELETE", schedule_path(name), nil, retry_safe: true)
      ans.is_a?(Hash) && ans["deleted"] == true
    end

    # Stops the schedule's ticks until {#resume_schedule}.
    # @return [Schedule]
    def pause_schedule(name)
      Schedule.new(transport.call("POST", "#{schedule_path(name)}/pause", nil, retry_safe: true))
    end

    # Resumes a paused schedule; the ticks missed meanwhile follow its
    # +missed+ policy.
    # @return [Schedule]
    def resume_schedule(name)
      Schedule.new(transport.call("POST", "#{schedule_path(name)}/resume", nil, retry_safe: true))
    end

    # GET /v1/jobs/{id}/attempts: every attempt of the job, oldest first,
    # the one under way last; [] for a job never leased.
    # @return [Array<Attempt>]
    # @raise [NotFoundError]
    def attempts(id)
      ans = transport.call("GET", "/v1/jobs/#{Integer(id)}/attempts", nil, retry_safe: true)
      items = ans.is_a?(Hash) ? ans["attempts"] : nil
      raise ProtocolError, "the attempts answer has no list" unless items.is_a?(Array)

      items.map { |a| Attempt.new(a) }
    end

    private

    def schedule_path(name)
      "/v1/schedules/#{URI.encode_www_form_component(name.to_s)}"
    end

    def schedule_job(type, job)
      out = { "type" => type.to_s }
      out["queue"] = (job[:queue] || defaults[:queue])&.to_s
      raise InvalidError.new("a schedule's job needs a queue (or the client's)", field: "job.queue") unless out["queue"]

      tenant = job[:tenant] || defaults[:tenant]
      out["tenant"] = tenant.to_s if tenant
      out["args"] = JSONValue.check!(job.fetch(:args, nil) || {}, "job.args")
      (SCHEDULE_JOB_FIELDS - %i[tenant queue type args]).each do |f|
        out[f.to_s] = job[f] unless job[f].nil?
      end
      out
    end
  end
end
