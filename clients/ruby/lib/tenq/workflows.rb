# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "json"
require "uri"

module Tenq
  # An earlier job of the same +submit_many+ or +create_batch+ list, by its
  # position, as a parent in +depends_on:+ (sent as {"index": i}).
  Index = Struct.new(:index)

  # A parent of a job (GET /v1/jobs/{id}/parents): its state, and its
  # result once it succeeded ("gone": pruned, the result is nil).
  ParentInfo = Struct.new(:id, :state, :result)
  # A job that depends on another, with its state.
  ChildInfo = Struct.new(:id, :state)

  # A job's dependencies: its parents in the order it named them, and its
  # children (the first 1,000) with their count.
  Parents = Struct.new(:id, :state, :parents, :children, :children_count) do
    # @return [Parents]
    def self.from_wire(data)
      raise ProtocolError, "the answer is not a job's parents" unless data.is_a?(Hash) && data["id"].is_a?(Integer)

      ps = Array(data["parents"]).map { |p| ParentInfo.new(p["id"], p["state"], p["result"]) }
      cs = Array(data["children"]).map { |c| ChildInfo.new(c["id"], c["state"]) }
      new(data["id"], data["state"], ps, cs, data["children_count"] || cs.size)
    end

    # The parents' results, in order.
    # @return [Array<Object>]
    def results
      parents.map(&:result)
    end
  end

  # A batch's status (GET /v1/batches/{id}): readers for its fields,
  # {#[]} and {#to_h} for the raw hash.
  class BatchInfo
    FIELDS = %i[id tenant status created_at closed_at total pending finished progress counts].freeze
    FIELDS.each { |f| define_method(f) { @data[f.to_s] } }
    CALLBACKS = %w[on_complete on_success on_death].freeze

    # @param data [Hash{String => Object}]
    def initialize(data)
      raise ProtocolError, "the answer is not a batch: #{data.inspect[0, 200]}" unless data.is_a?(Hash) && data["id"]

      @data = data
    end

    # Every job finished and the callbacks were made: no job may be added
    # any more ({BatchClosedError}).
    def closed?
      status == "closed"
    end

    def open?
      status == "open"
    end

    # The callbacks given, by name ("on_complete", "on_success",
    # "on_death"): their spec, and "job", the id of the job each made (nil:
    # not yet, or never).
    # @return [Hash{String => Hash}]
    def callbacks
      @data["callbacks"] || {}
    end

    # The id of the job a callback made (nil: not yet, never, or no such callback).
    # @return [Integer, nil]
    def callback_job(name)
      cb = callbacks[name.to_s]
      cb.is_a?(Hash) ? cb["job"] : nil
    end

    def [](name)
      @data[name.to_s]
    end

    def to_h
      @data.dup
    end

    def inspect
      "#<Tenq::BatchInfo id=#{id} status=#{status} total=#{total} pending=#{pending}>"
    end
  end

  # The answer of {WorkflowCalls#create_batch}: the batch's id and a handle
  # per job, in order.
  BatchCreated = Struct.new(:id, :jobs)
  # A page of {WorkflowCalls#batches}, newest first: pass +next_before+ as
  # +before:+ for the next (nil: the last page).
  BatchPage = Struct.new(:batches, :next_before)

  # Dependencies and batches (docs/API.md, "Jobs" and "Batches"). Included
  # in {Client}.
  module WorkflowCalls
    # The fields a batch's callback takes.
    CALLBACK_FIELDS = %i[queue type args key priority max_attempts timeout_ms traceparent].freeze
    NOT_IN_BATCH = %w[unique unique_key idempotency_key].freeze

    # GET /v1/jobs/{id}/parents: the job's parents in the order it named
    # them, each with its state and result, and its children.
    # @return [Parents]
    # @raise [NotFoundError]
    def parents(id)
      Parents.from_wire(transport.call("GET", "/v1/jobs/#{Integer(id)}/parents", nil, retry_safe: true))
    end

    # POST /v1/batches: a batch of +jobs+ (Hashes with the fields of
    # {Client#submit}; 1 to 10,000; +depends_on+ may name earlier ones by
    # Tenq.index(i)) and its callbacks (Hashes: +type:+, +queue:+ (the
    # client's by default), +args:+, +key:+, +priority:+, +max_attempts:+,
    # +timeout_ms:+), jobs the server submits once: +on_complete+ when every
    # job finished, +on_success+ when every job succeeded, +on_death+ at the
    # first death. Everything is checked before anything is made.
    # @return [BatchCreated]
    # @raise [InvalidError, NotFoundError] naming the field ("jobs[3].type", "on_death.queue")
    def create_batch(jobs, on_complete: nil, on_success: nil, on_death: nil, tenant: nil)
      body = { "jobs" => batch_jobs(jobs) }
      t = tenant || defaults[:tenant]
      body["tenant"] = t if t
      { "on_complete" => on_complete, "on_success" => on_success, "on_death" => on_death }.each do |name, spec|
        body[name] = callback_body(name, spec) if spec
      end
      if Testing.active?
        id = Testing.store.new_batch
        return BatchCreated.new(id, body["jobs"].map { |j| Testing.submit(j.merge("batch" => id)) })
      end

      ans = post_keyed("/v1/batches", body)
      raise ProtocolError, "the batch answer has no id" unless ans["id"].is_a?(Integer)

      BatchCreated.new(ans["id"], Array(ans["jobs"]).map { |j| Handle.new(self, SubmitResult.from_answer(j)) })
    end

    # POST /v1/batches/{id}/jobs: adds jobs (1 to 10,000) to an open batch
    # (fan-out, typically from one of its running jobs: {Task#add_to_batch}).
    # @return [Array<Handle>]
    # @raise [BatchClosedError] the batch is closed; nothing was added
    # @raise [NotFoundError] there is no such batch
    def add_to_batch(batch_id, jobs)
      built = batch_jobs(jobs)
      return built.map { |j| Testing.submit(j.merge("batch" => Integer(batch_id))) } if Testing.active?

      ans = post_keyed("/v1/batches/#{Integer(batch_id)}/jobs", { "jobs" => built })
      Array(ans["jobs"]).map { |j| Handle.new(self, SubmitResult.from_answer(j)) }
    end

    # GET /v1/batches/{id}: the batch's status, counts, progress and callbacks.
    # @return [BatchInfo]
    # @raise [NotFoundError]
    def batch(id)
      BatchInfo.new(transport.call("GET", "/v1/batches/#{Integer(id)}", nil, retry_safe: true))
    end
    alias get_batch batch

    # GET /v1/batches: a page of batches, newest first (+limit+ 1-1,000).
    # @return [BatchPage]
    def batches(tenant: nil, limit: nil, before: nil)
      query = { "tenant" => tenant, "limit" => limit, "before" => before }.compact
      ans = transport.call("GET", "/v1/batches#{"?#{URI.encode_www_form(query)}" unless query.empty?}", nil,
                           retry_safe: true)
      items = ans.is_a?(Hash) ? ans["batches"] : nil
      raise ProtocolError, "the batches answer has no list" unless items.is_a?(Array)

      BatchPage.new(items.map { |b| BatchInfo.new(b) }, ans["next_before"])
    end
    alias list_batches batches

    private

    def batch_jobs(jobs)
      raise InvalidError.new("a batch needs at least one job", field: "jobs") if jobs.nil? || jobs.empty?

      jobs.each_with_index.map do |j, i|
        built = JobFields.build(j, job_defaults, i)
        bad = NOT_IN_BATCH.find { |f| built.key?(f) }
        raise InvalidError.new("jobs[#{i}].#{bad}: a batch's job takes none", field: "jobs[#{i}].#{bad}") if bad

        built
      end
    end

    def callback_body(name, spec)
      spec = spec.transform_keys(&:to_sym)
      unknown = spec.keys - CALLBACK_FIELDS
      unless unknown.empty?
        raise InvalidError.new("#{name} takes no #{unknown.first}", field: "#{name}.#{unknown.first}")
      end

      built = JobFields.build(spec, job_defaults)
      built.slice(*CALLBACK_FIELDS.map(&:to_s))
    end

    def post_keyed(path, body)
      post_submit(path, JSON.generate(body), request_key)
    end
  end
end
