# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "json"

module Tenq
  # Raised inside a handler by a step that parked its job: a durable sleep
  # ({Task#sleep_for}, {Task#sleep_until}), a wait for an event
  # ({Task#wait_for_event}) or for a child job ({Task#run_child}). The
  # attempt is over, without failing: the worker reports nothing, and the
  # job runs again (from the start, its stored steps answering at once) when
  # its wait is over. An Exception, as {Stopped} is, so that a bare +rescue+
  # (StandardError) lets it through: let it leave the handler.
  class Parked < Exception
    # @return [String] the kind of the step: "sleep", "event" or "child"
    attr_reader :kind
    # @return [String] its name
    attr_reader :name
    # @return [String] the job's state now: "scheduled" (a sleep) or "waiting"
    attr_reader :state

    def initialize(kind, name, state)
      @kind = kind
      @name = name
      @state = state
      super("parked: #{kind} #{name.inspect} (the job is #{state})")
    end
  end

  # {Task#wait_for_event} timed out: no event of its key came in time.
  class EventTimeoutError < TimeoutError
    # @return [String]
    attr_reader :key
    # @return [String] the wait's step name
    attr_reader :step_name

    def initialize(key, step_name)
      @key = key
      @step_name = step_name
      super("no event #{key.inspect} came before the wait #{step_name.inspect} timed out")
    end
  end

  # {Task#run_child}'s child job did not succeed: it died (+error+ is its
  # last error) or was cancelled. +child+ is its id, +state+ the state it
  # ended in.
  class ChildFailedError < Error
    # @return [Integer]
    attr_reader :child
    # @return [String, nil]
    attr_reader :state
    # @return [String, nil]
    attr_reader :error

    def self.code = "child_failed"

    def initialize(child, state, error)
      @child = child
      @state = state
      @error = error
      super("child job #{child} ended #{state || 'without succeeding'}: #{error}")
    end
  end

  # A step a job's handler stored (GET /v1/jobs/{id}/steps). +kind+: "step"
  # (code the handler ran: +result+ is what it returned), "sleep", "event"
  # (+result+: the event's payload; +error+ "timed out"), "child" (+result+:
  # the child's, or +error+). {#done?} is false while the job waits for it.
  class Step
    FIELDS = %i[pos name kind result error attempt token created_at finished_at event until child
                child_state].freeze
    FIELDS.each { |f| define_method(f) { @data[f.to_s] } }

    # @param data [Hash{String => Object}]
    def initialize(data)
      raise ProtocolError, "a step of the answer is not a step" unless data.is_a?(Hash) && data["name"].is_a?(String)

      @data = data
    end

    def done?
      @data["done"] == true
    end

    # @return [Hash{String => Object}]
    def to_h
      @data.dup
    end

    def [](name)
      @data[name.to_s]
    end

    def inspect
      "#<Tenq::Step #{pos} #{kind} #{name.inspect}#{' waiting' unless done?}>"
    end

    # @return [Array<Step>]
    def self.all(answer)
      items = answer.is_a?(Hash) ? answer["steps"] : nil
      raise ProtocolError, "the steps answer has no list" unless items.is_a?(Array)

      items.map { |s| new(s) }
    end
  end

  # The answer to an event (POST /v1/events): the jobs it woke
  # (+delivered+, +jobs+), or (+kept+) that none waited and it is kept until
  # +expires_at+ for the first job of the tenant that waits for its key.
  EventResult = Struct.new(:tenant, :key, :delivered, :jobs, :kept, :expires_at) do
    # @return [EventResult]
    def self.from_wire(ans)
      raise ProtocolError, "the event's answer is not an object" unless ans.is_a?(Hash)

      new(ans["tenant"], ans["key"], ans["delivered"].to_i, Array(ans["jobs"]), ans["kept"] == true,
          ans["expires_at"])
    end

    def kept?
      kept == true
    end
  end

  # Durable steps and events (docs/API.md, "Durable steps"). Included in
  # {Client}.
  module StepCalls
    # GET /v1/jobs/{id}/steps: the steps the job's handler stored, in order,
    # with their results.
    # @return [Array<Step>]
    # @raise [NotFoundError]
    def steps(id)
      Step.all(transport.call("GET", "/v1/jobs/#{Integer(id)}/steps", nil, retry_safe: true))
    end

    # POST /v1/events: every job of the tenant (the client's by default)
    # whose handler waits for +key+ goes on with +payload+ (JSON) as its
    # wait's result; when none waits the server keeps the event for its
    # --event-window. Sent under a request key, the same on every try: sent
    # again after a lost answer, it delivers nothing twice.
    # @return [EventResult]
    # @raise [InvalidError]
    def send_event(key, payload = nil, tenant: nil)
      unless key.is_a?(String) && !key.empty?
        raise InvalidError.new("an event needs a key (a non-empty String)", field: "key")
      end

      body = { "key" => key, "payload" => JSONValue.check!(payload, "payload") }
      t = tenant || defaults[:tenant]
      body["tenant"] = t if t
      ans = post_submit("/v1/events", JSON.generate(body), request_key)
      EventResult.from_wire(ans)
    end

    # @api private: POST /v1/jobs/{id}/steps (a worker's, under the body's
    # token). Safe to send again: a name is stored once a lease.
    # @return [Hash{String => Object}]
    def store_step(id, body)
      ans = transport.call("POST", "/v1/jobs/#{Integer(id)}/steps", JSON.generate(body), retry_safe: true)
      raise ProtocolError, "the step's answer is not an object" unless ans.is_a?(Hash)

      ans
    end
  end

  # The durable steps of a {Task} (docs/SEMANTICS.md, "Durable steps").
  # Outside a worker (the test modes) a step just runs, a sleep sleeps, and
  # a wait or a child is {InvalidError}.
  module TaskSteps
    # Runs the block once for the job: its result (JSON) is stored under
    # this attempt's lease before +step+ returns, and a later attempt gets
    # it back without running the block again. +name+ (1-256 bytes, no
    # control characters) must name the same work on every attempt. The
    # block may run again only when the worker dies (or loses its lease)
    # before the store answered: make it idempotent.
    # @return [Object] the block's result (JSON), or the one stored
    def step(name)
      raise ArgumentError, "step needs a block" unless block_given?

      got = stored_steps[name]
      return got.result if got

      value = yield
      return value unless steps_live?

      JSONValue.check!(value, "result")
      post_step({ "name" => name, "result" => value }, "step", name)
      remember_step(name, "step", value)
      value
    end

    # A durable sleep: the attempt ends ({Parked} leaves the handler; let
    # it), the job's slot goes back, and the job runs again after +seconds+,
    # its steps kept; there this call returns at once. (Not +sleep+: that
    # is Kernel's.) +name+ defaults to "sleep#N", N counting this run's
    # sleeps.
    # @return [void]
    def sleep_for(seconds, name: nil)
      raise InvalidError.new("sleep_for: seconds must be 0 or more", field: "duration_ms") unless seconds.to_f >= 0

      durable_sleep(name, { "duration_ms" => (seconds.to_f * 1000).round }, seconds.to_f)
    end

    # {#sleep_for} until a time (a Time, or seconds since the epoch).
    # @return [void]
    def sleep_until(time, name: nil)
      at = time.is_a?(Time) ? time.to_f : Float(time)
      durable_sleep(name, { "until" => [(at * 1000).round, 1].max }, at - Time.now.to_f)
    end

    # Waits for an event of the job's tenant with this +key+
    # ({Client#send_event}, POST /v1/events, {Tx.send_event}): its payload.
    # The job parks ({Parked}) until the event comes or +timeout+ seconds
    # pass (nil: no timeout); then it runs again and this call answers, or
    # raises {EventTimeoutError}. An event sent shortly before (within the
    # server's --event-window) is taken at once. +name+ defaults to
    # "event#N".
    # @return [Object] the event's payload
    def wait_for_event(key, timeout: nil, name: nil)
      name = auto_step_name("event", name)
      got = stored_steps[name]
      unless got
        raise InvalidError.new("wait_for_event needs a worker's job", field: "event") unless steps_live?

        body = { "name" => name, "kind" => "event", "event" => key }
        body["timeout_ms"] = [(timeout.to_f * 1000).round, 1].max if timeout
        ans = post_step(body, "event", name)
        raise park!("event", name, ans["state"]) if ans["parked"] == true

        got = ans["duplicate"] == true ? reread_step(name) : remember_step(name, "event", ans["result"])
      end
      raise EventTimeoutError.new(key, name) if got.error

      got.result
    end

    # Submits a child job (of this job's tenant; in +queue+, else this
    # job's) once, and waits for its end: its result, or {ChildFailedError}
    # when it died or was cancelled. The job parks ({Parked}) until the
    # child ends; cancelling it cancels the child. +fields+: a submit's
    # other fields (key:, priority:, max_attempts:, timeout_ms:, ...). A
    # refused submit raises its error ({QuotaExceededError} past a quota).
    # +name+ defaults to "child#N".
    # @return [Object] the child's result
    def run_child(type, args = nil, queue: nil, name: nil, **fields)
      name = auto_step_name("child", name)
      got = stored_steps[name]
      unless got
        raise InvalidError.new("run_child needs a worker's job", field: "job") unless steps_live?

        ans = post_step({ "name" => name, "kind" => "child", "job" => child_job(type, args, queue, fields) }, "child",
                        name)
        raise park!("child", name, ans["state"]) if ans["parked"] == true

        raise ProtocolError, "child step #{name.inspect} neither parked nor was stored before"
      end
      if (got.child_state && got.child_state != "succeeded") || got.error
        raise ChildFailedError.new(got.child || 0, got.child_state, got.error)
      end

      got.result
    end

    # The steps of this job stored so far (by earlier attempts, then this
    # one), in order.
    # @return [Array<Step>]
    def steps
      stored_steps.values
    end

    # A step parked the job: this attempt is over (see {Parked}).
    def parked?
      @parked == true
    end

    private

    # A worker's job (a lease): steps are stored.
    def steps_live?
      !@worker.nil? && token.to_i != 0
    end

    def stored_steps
      @stored_steps ||=
        if steps_live? && @data["steps"].to_i.positive?
          client.steps(id).select(&:done?).to_h { |s| [s.name, s] }
        else
          {}
        end
    end

    # Sent again after a lost answer: the steps as the server has them.
    def reread_step(name)
      client.steps(id).each { |s| stored_steps[s.name] = s if s.done? }
      stored_steps[name] || raise(ProtocolError, "event step #{name.inspect} was stored, and is not in the steps")
    end

    def remember_step(name, kind, result)
      stored_steps[name] = Step.new({ "pos" => stored_steps.size, "name" => name, "kind" => kind, "done" => true,
                                      "result" => result, "attempt" => attempt, "token" => token })
    end

    # The child's fields as a submit takes them: of this job's tenant, in its queue unless named.
    def child_job(type, args, queue, fields)
      spec = fields.merge(type: type, queue: queue || self.queue, tenant: tenant)
      spec[:args] = args unless args.nil?
      JobFields.build(spec, {})
    end

    def auto_step_name(kind, name)
      @step_calls ||= Hash.new(0)
      @step_calls[kind] += 1
      name || "#{kind}##{@step_calls[kind]}"
    end

    def durable_sleep(name, body, inline_seconds)
      name = auto_step_name("sleep", name)
      return if stored_steps.key?(name)
      return Kernel.sleep([inline_seconds, 0].max) unless steps_live?

      ans = post_step(body.merge("name" => name, "kind" => "sleep"), "sleep", name)
      raise park!("sleep", name, ans["state"]) if ans["parked"] == true

      remember_step(name, "sleep", nil) # its time had passed
      nil
    end

    # POST /v1/jobs/{id}/steps under this attempt's lease. A parking step
    # whose answer was lost, sent again, finds its lease over (409 on the
    # token): the job is parked (or its lease lost), and the handler ends
    # either way.
    def post_step(body, kind, name)
      client.store_step(id, body.merge("token" => token))
    rescue ConflictError => e
      raise park!(kind, name, nil) if kind != "step" && e.field == "token"

      raise
    end

    def park!(kind, name, state)
      unless @parked
        @parked = true
        @worker&.parked(self)
      end
      Parked.new(kind, name, state.is_a?(String) ? state : "waiting")
    end
  end
end
