# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "json"
require "uri"

module Tenq
  # The tenq HTTP/JSON API (docs/API.md): submit one job or many, read,
  # wait for, cancel and list jobs, the morgue; the worker's calls
  # ({WorkerCalls}); and {#request} for everything else. Thread-safe:
  # threads share a client, each request takes a kept connection of its
  # own from a small pool.
  #
  # Every submit request carries an Idempotency-Key header, made here once
  # before its first attempt and sent again with every retry (to the same
  # server or another), so the retries after a broken connection or a change
  # of leader never make two jobs: the server answers a request it has seen
  # with its first answer. A job's own +idempotency_key+ is sent only when
  # the caller gives one.
  #
  # A submit request refused with 429 overloaded (the server's memory
  # budget) or quota_exceeded (a tenant's or a queue's +max_queued+ /
  # +max_queued_bytes+) made nothing: it is sent again, under the same key,
  # after the server's Retry-After (1 s), until +backpressure_budget+
  # seconds have passed since its first refusal, and then raises
  # {OverloadedError} / {QuotaExceededError} ({Backpressure}): {#submit},
  # each request of {#submit_many}, {#create_batch} and {#add_to_batch}.
  class Client
    include WorkerCalls
    include QueueCalls
    include KeyCalls
    include ScheduleCalls
    include WorkflowCalls
    include StepCalls

    DEFAULT_SERVER = "http://127.0.0.1:7070"
    BATCH_MAX = 10_000
    JOB_FIELDS = JobFields::NAMES
    WAIT_SLICE = 60 # seconds a single wait request asks for; the server caps it at --max-wait
    # Seconds {#wait} takes "not found" for a job made in a transaction (an
    # odd id) to mean "not taken in yet": the leader takes a committed job
    # in within milliseconds; one whose transaction rolled back never comes.
    TX_TAKE_IN = 5.0

    # @return [Transport]
    attr_reader :transport
    # @return [Hash{Symbol => Object}] submit fields used when a job names none
    attr_reader :defaults
    # @return [Middleware::Chain, nil] around each submit
    attr_reader :middleware
    # @return [Float] seconds a submit refused with 429 overloaded or
    #   quota_exceeded keeps being sent again
    attr_reader :backpressure_budget

    # @param servers [Array<String>, String, nil] base URLs; default TENQ_SERVER
    #   (comma-separated), then http://127.0.0.1:7070
    # @param token [String, nil] default TENQ_TOKEN
    # @param failover_budget [Numeric] seconds a call keeps trying servers
    # @param backpressure_budget [Numeric] seconds a submit refused with 429
    #   overloaded or quota_exceeded keeps being sent again (0: raise at once)
    # @param trace [#call, nil] returns the current traceparent (or nil); put on
    #   every submit that names none
    # @param middleware [Middleware::Chain, nil] around each submit
    # @param ca_file [String, nil] https: PEM CAs trusted instead of the system's; default TENQ_CA_FILE
    # @param client_cert [String, nil] https: a client certificate (PEM, mutual TLS); default TENQ_CLIENT_CERT
    # @param client_key [String, nil] its key (PEM, no passphrase); default TENQ_CLIENT_KEY
    # @param defaults [Hash] submit fields for jobs that name none (tenant:, queue:, ...)
    def initialize(servers: nil, token: nil, failover_budget: 15.0, connect_timeout: 5.0, request_timeout: 30.0,
                   backpressure_budget: Backpressure::DEFAULT_BUDGET, trace: nil, middleware: nil,
                   ca_file: nil, client_cert: nil, client_key: nil, **defaults)
      unknown = defaults.keys - JOB_FIELDS
      raise ArgumentError, "unknown option(s): #{unknown.join(', ')}" unless unknown.empty?

      @backpressure_budget = Backpressure.check!(backpressure_budget)
      tls = { ca_file: ca_file || env("TENQ_CA_FILE"), cert_file: client_cert || env("TENQ_CLIENT_CERT"),
              key_file: client_key || env("TENQ_CLIENT_KEY") }.compact
      @transport = Transport.new(servers: self.class.server_list(servers), token: token || env("TENQ_TOKEN"),
                                 connect_timeout: connect_timeout, request_timeout: request_timeout,
                                 failover_budget: failover_budget, tls: tls)
      @defaults = defaults.freeze
      @default_job = JobFields.defaults(defaults)
      @keys = IdempotencyKeys.new
      @columns = true # a batch's answer as columns (submit_batches)
      @trace = trace
      @middleware = middleware
    end

    # The servers from an argument, TENQ_SERVER or the default.
    # @return [Array<String>]
    def self.server_list(servers)
      list = servers || ENV.fetch("TENQ_SERVER", "")
      list = list.split(",") if list.is_a?(String)
      list = list.map { |s| s.to_s.strip }.reject(&:empty?)
      list.empty? ? [DEFAULT_SERVER] : list
    end

    # @return [Array<String>] the servers, the one tried first at the front
    def servers
      @transport.servers
    end

    # Submits one job. A client middleware that does not yield stops the
    # submit: then nil is returned.
    # @return [Handle, nil]
    # @raise [InvalidError] a bad field (before anything is sent, or from the server)
    def submit(type:, **fields)
      fields[:type] = type
      job = JobFields.build(fields, @default_job)
      add_trace(job, current_trace)
      return send_one(job) unless @middleware && !@middleware.empty?

      out = @middleware.invoke(job) { send_one(job) }
      out.is_a?(Handle) ? out : nil
    end

    # Submits many jobs (Hashes with the fields of {#submit}), 10,000 a
    # request, in order (the next request is written while the server works
    # on the last). A job the server refuses fails alone: its handle has an
    # {Handle#error} and no id. A job that is not valid here raises
    # {InvalidError} (naming its index) before anything is sent. Jobs a
    # client middleware stops are left out of the answer. When a request
    # fails, the error is raised and the requests before it stand (their
    # jobs were made). Each request has an Idempotency-Key of its own.
    #
    # A job's +depends_on+ may name an earlier job of the list by
    # +Tenq.index(i)+: within a request it goes as {"index": i}, and into an
    # earlier request as that job's id (a job naming one the server refused
    # is refused too, with a {ConflictError} on +depends_on+).
    # @param jobs [Array<Hash>]
    # @return [Array<Handle>]
    def submit_many(jobs)
      built = build_all(jobs)
      built = through_middleware(built) if @middleware && !@middleware.empty?
      return Testing.submit_all(built) if Testing.active?
      return submit_indexed(built) if built.any? { |j| index_refs?(j) }

      submit_batches(built)
    end

    # The job.
    # @return [JobInfo]
    # @raise [NotFoundError]
    def job(id)
      JobInfo.new(get_json("/v1/jobs/#{Integer(id)}"))
    end
    alias get job

    # Waits up to +timeout+ seconds for the job to finish (in long polls of
    # the server's --max-wait) and returns it as it is then: see
    # {JobInfo#finished?}. A merged job is followed to the job that took
    # its payload.
    #
    # A job made in a transaction ({Tx.submit}: an odd id) exists on the
    # server once the leader has taken it in, a few milliseconds after the
    # commit: until then the server answers "not found", and +wait+ asks
    # again, every 20 ms for up to {TX_TAKE_IN} seconds (within +timeout+),
    # before it raises {NotFoundError}. Ids the server made (even) are not
    # asked again.
    # @return [JobInfo]
    # @raise [NotFoundError] no such job (for an odd id: none taken in within 5 s)
    def wait(id, timeout: 60)
      start = now
      deadline = start + timeout
      id = Integer(id)
      first = id
      loop do
        info = begin
          wait_once(id, deadline)
        rescue NotFoundError
          raise unless id == first && id.odd? && now < [start + TX_TAKE_IN, deadline].min

          sleep(0.02)
          next
        end
        if info.state == "merged" && info.merged_into
          id = info.merged_into
          next
        end
        return info if info.finished? || now >= deadline
      end
    end
    alias wait_job wait

    # Cancels a job: cancelled at once, or (leased or running) marked
    # cancel_requested for its worker. Finished and dead jobs: ConflictError.
    # @return [JobInfo] with id, state and cancel_requested
    def cancel(id)
      JobInfo.new(@transport.call("POST", "/v1/jobs/#{Integer(id)}/cancel", "{}", retry_safe: true))
    end

    # One page of jobs, newest first; pass the page's +next+ as +after_id+.
    # @return [Page]
    def list(tenant: nil, queue: nil, type: nil, state: nil, key: nil, after_id: nil, limit: nil)
      page("/v1/jobs", tenant: tenant, queue: queue, type: type, state: state, key: key, after_id: after_id,
                       limit: limit)
    end

    # Every job matching the filters, page after page.
    # @return [Enumerator<JobInfo>]
    def each_job(limit: 1000, **filters, &block)
      return enum_for(:each_job, limit: limit, **filters) unless block

      after = nil
      loop do
        p = list(**filters, limit: limit, after_id: after)
        p.jobs.each(&block)
        break if p.jobs.empty? || p.next.nil?

        after = p.next
      end
    end

    # One page of the morgue (dead jobs), newest death first; pass the
    # page's +next+ as +after+.
    # @return [Page]
    def morgue(tenant: nil, queue: nil, type: nil, sort: nil, after: nil, limit: nil)
      page("/v1/morgue", tenant: tenant, queue: queue, type: type, sort: sort, after: after, limit: limit)
    end

    # Puts a dead job back (attempts reset, run_at now).
    # @return [Hash{String => Object}] "id" and "state"
    def requeue(id)
      @transport.call("POST", "/v1/morgue/#{Integer(id)}/requeue", "{}", retry_safe: false)
    end

    # Any request: METHOD path (with its query), a body (a Hash or JSON
    # text), headers of its own (e.g. an Idempotency-Key).
    # @return [Hash{String => Object}]
    def request(method, path, body = nil, retry_safe: nil, headers: nil)
      method = method.to_s.upcase
      body = JSON.generate(body) unless body.nil? || body.is_a?(String)
      retry_safe = %w[GET HEAD PUT DELETE].include?(method) if retry_safe.nil?
      @transport.call(method, path, body, retry_safe: retry_safe, headers: headers)
    end

    # GET /healthz of one server (the one tried first when none is named).
    # @return [Hash{String => Object}]
    def health(server = nil)
      return get_json("/healthz") unless server

      Transport.new(servers: [server], failover_budget: 0).call("GET", "/healthz")
    end

    # Closes the kept connections.
    # @return [void]
    def close
      @transport.close
    end

    # A page of {#list} or {#morgue}: its jobs and the cursor of the next page.
    Page = Struct.new(:jobs, :next)

    private

    def env(name)
      v = ENV.fetch(name, "")
      v.empty? ? nil : v
    end

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    def get_json(path)
      @transport.call("GET", path, nil, retry_safe: true)
    end

    def page(path, **query)
      query.compact!
      data = get_json(query.empty? ? path : "#{path}?#{URI.encode_www_form(query)}")
      Page.new(Array(data["jobs"]).map { |j| JobInfo.new(j) }, data["next"])
    end

    def send_one(job)
      return Testing.submit(job) if Testing.active?

      answer = post_jobs(JSON.generate(job))
      Handle.new(self, SubmitResult.from_answer(answer))
    end

    def wait_once(id, deadline)
      left = [deadline - now, 0].max
      slice = [left, WAIT_SLICE].min
      t0 = now
      info = JobInfo.new(@transport.call("GET", "/v1/jobs/#{id}/wait?timeout_ms=#{(slice * 1000).round}", nil,
                                         retry_safe: true, wait: slice))
      # an early answer for an unfinished job (the server's cap): do not spin
      sleep(0.05) if !info.finished? && now - t0 < 0.05 && now < deadline
      info
    end

    def build_all(jobs)
      built = Array.new(jobs.size)
      jobs.each_with_index { |j, i| built[i] = JobFields.build(j, @default_job, i) }
      if (trace = current_trace)
        built.each { |j| add_trace(j, trace) }
      end
      built
    end

    def through_middleware(jobs)
      kept = []
      jobs.each { |job| @middleware.invoke(job) { kept << job } }
      kept
    end

    # One request at a time, so that the jobs are made in order, each under
    # a key of its own. The server is kept busy: the body of the next
    # request is generated while it works on one, and sent as soon as that
    # one is answered, before the answer is read into handles (its text is
    # taken raw, and parsed while the server makes the next batch). The
    # answers come as columns, which JSON.parse reads in a quarter of the
    # time; a server that does not know "columns" refuses it (400, nothing
    # made) and is asked without it from then on.
    def submit_batches(jobs)
      handles = []
      pending = nil
      jobs.each_slice(BATCH_MAX) do |slice|
        asked = @columns
        body = batch_body(slice, asked)
        answered = pending && [pending[0], answer_text(pending)]
        body = batch_body(slice, asked = false) if asked && !@columns # refused meanwhile
        pending = [slice, post_async(body), asked]
        handles.concat(batch_handles(answered[0].size, answered[1])) if answered
      end
      handles.concat(batch_handles(pending[0].size, answer_text(pending))) if pending
      pending = nil
      handles
    ensure
      finish_pending(pending)
    end

    def batch_body(slice, columns)
      columns ? JSON.generate("jobs" => slice, "columns" => true) : JSON.generate("jobs" => slice)
    end

    # The answer's text of a request in flight ([slice, thread, whether it
    # asked for columns]); the slice sent again without "columns" if the
    # server refused them.
    def answer_text(pending)
      pending[1].value
    rescue InvalidError => e
      raise unless pending[2] && e.field == "columns"

      @columns = false
      post_jobs(batch_body(pending[0], false), raw: true)
    end

    # A request still out when something failed is over before the error
    # leaves submit_many (its own error, if any, is not the one raised).
    def finish_pending(pending)
      pending&.[](1)&.join
    rescue StandardError
      nil
    end

    # POST /v1/jobs of a batch in a thread of its own, under a key made now:
    # the thread's value is the answer's text. It returns once the request
    # is written (or failed): else the caller, which goes on to read the
    # last answer into handles, would hold the interpreter lock for that
    # while the request waited for it, and the server would idle.
    def post_async(body)
      key = @keys.next_key
      written = Queue.new
      thread = Thread.new do
        Thread.current.report_on_exception = false # its error is raised by #value
        post_jobs(body, key, raw: true, sent: -> { written << true })
      ensure
        written << false
      end
      written.pop
      thread
    end

    # One POST /v1/jobs under one key, the same for every attempt.
    def post_jobs(body, key = @keys.next_key, raw: false, sent: nil)
      post_submit("/v1/jobs", body, key, raw: raw, sent: sent)
    end

    # A submit request under one key, the same for every attempt: sent
    # again after a 429 overloaded or quota_exceeded ({Backpressure}).
    def post_submit(path, body, key, raw: false, sent: nil)
      Backpressure.retrying(@backpressure_budget) do
        @transport.call("POST", path, body, retry_safe: true, headers: { "Idempotency-Key" => key }, raw: raw,
                                            sent: sent)
      end
    end

    def batch_handles(count, text)
      answer = Transport.parse(text, freeze: true)
      if (columns = answer["columns"])
        return SubmitResult.all_from_columns(columns, count).map! { |r| Handle.new(self, r) }
      end

      answers = answer["jobs"]
      unless answers.is_a?(Array) && answers.size == count
        raise ProtocolError, "the batch answer does not hold #{count} results"
      end

      answers.map { |a| Handle.new(self, SubmitResult.from_answer(a)) }
    end

    def job_defaults
      @default_job
    end

    def request_key
      @keys.next_key
    end

    def index_refs?(job)
      deps = job["depends_on"]
      deps.is_a?(Array) && deps.any?(Hash)
    end

    # submit_many of jobs that name earlier ones by index: one request after
    # another, an index into an earlier request sent as that job's id.
    def submit_indexed(jobs)
      handles = []
      jobs.each_slice(BATCH_MAX).with_index do |slice, n|
        start = n * BATCH_MAX
        sent = []
        here = {} # a position in the list => in the request
        slice.each_with_index do |job, k|
          job = resolve_indexes(job, start + k, here, handles)
          next handles[start + k] = job if job.is_a?(Handle)

          here[start + k] = sent.size
          sent << [start + k, job]
        end
        send_indexed(sent, handles) unless sent.empty?
      end
      handles
    end

    def send_indexed(sent, handles)
      answers = Transport.parse(post_jobs(JSON.generate("jobs" => sent.map(&:last)), raw: true), freeze: true)["jobs"]
      raise ProtocolError, "the batch answer does not hold #{sent.size} results" unless answers&.size == sent.size

      sent.each_with_index { |(i, _), k| handles[i] = Handle.new(self, SubmitResult.from_answer(answers[k])) }
    end

    def resolve_indexes(job, pos, here, handles)
      return job unless index_refs?(job)

      deps = job["depends_on"].map do |d|
        next d unless d.is_a?(Hash)

        j = d["index"]
        next { "index" => here[j] } if j < pos && here.key?(j)
        next handles[j].id if j < pos && handles[j]&.ok?

        return refused(j, pos)
      end
      job.merge("depends_on" => deps)
    end

    def refused(index, pos)
      err = if index >= pos || index.negative?
              InvalidError.new("jobs[#{pos}].depends_on: index #{index} names no earlier job",
                               status: 400, field: "depends_on")
            else
              ConflictError.new("jobs[#{pos}].depends_on: index #{index} names a job that was refused",
                                status: 409, field: "depends_on")
            end
      Handle.new(self, SubmitResult.new({}, err))
    end

    def current_trace
      return nil unless @trace

      tp = @trace.call
      tp.nil? ? nil : Traceparent.check!(tp)
    end

    def add_trace(job, traceparent)
      job["traceparent"] ||= traceparent if traceparent
      job
    end
  end
end
