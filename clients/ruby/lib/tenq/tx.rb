# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "json"
require "time"

module Tenq
  # Jobs made and finished in the application's own PostgreSQL transaction,
  # through the SQL functions a tenq server on PostgreSQL installs in schema
  # +tenq+ (tenq.submit, tenq.submit_many, tenq.complete, tenq.fail,
  # tenq.send_event): a job
  # exists if and only if the transaction that submitted it commits, and a
  # job of an exactly-once queue succeeds together with the writes of the
  # transaction that completed it. The server's leader takes committed rows
  # in within milliseconds.
  #
  # Each method takes the application's connection, inside its transaction:
  # a PG::Connection (ActiveRecord's +connection.raw_connection+, Sequel's
  # +synchronize { |conn| ... }+) or anything with +exec_params(sql,
  # params)+. This library does not load +pg+ itself.
  #
  #   conn.transaction do
  #     conn.exec_params("INSERT INTO orders (id) VALUES ($1)", [7])
  #     Tenq::Tx.submit(conn, tenant: "acme", queue: "mail", type: "Mail.send", args: { "order" => 7 })
  #   end
  #
  # Fields are checked here first, as {Client#submit} checks them: a bad one
  # raises {InvalidError} before anything is sent, and the transaction goes
  # on. What the database refuses raises {InvalidError} (SQLSTATE 22023),
  # {LeaseError} (TQ002, a lease not held) or {QuotaExceededError} (TQ429,
  # a submit past a tenant's or a queue's +max_queued+ or
  # +max_queued_bytes+, which +field+ names: the class a client's submit
  # raises) with the database's error as its +cause+; the transaction is
  # then aborted and must be rolled back.
  #
  # In a test mode ({Testing}) the jobs stay in this process, as a client's
  # do, and completions and failures send nothing.
  module Tx
    SUBMIT_SQL = "SELECT tenq.submit($1::text, $2::text, $3::text, $4::jsonb, $5::text, $6::text, " \
                 "$7::boolean, $8::text, $9::timestamptz, $10::integer, $11::integer, " \
                 "$12::double precision, $13::text, $14::bigint)"
    # With keys, a debounce or an expiry (schema 26): sent only when one is
    # given, so that a database of an older schema takes the others.
    SUBMIT_KEYED_SQL = "SELECT tenq.submit($1::text, $2::text, $3::text, $4::jsonb, $5::text, $6::text, " \
                       "$7::boolean, $8::text, $9::timestamptz, $10::integer, $11::integer, " \
                       "$12::double precision, $13::text, $14::bigint, $15::jsonb, $16::jsonb, " \
                       "$17::timestamptz, $18::bigint, $19::bigint, $20::bigint)"
    KEYED = %w[concurrency_keys rate_keys expire_at start_within_ms debounce_ms debounce_max_ms].freeze
    SUBMIT_MANY_SQL = "SELECT tenq.submit_many($1::jsonb)"
    COMPLETE_SQL = "SELECT tenq.complete($1::bigint, $2::bigint, $3::jsonb)"
    FAIL_SQL = "SELECT tenq.fail($1::bigint, $2::bigint, $3::text, $4::bigint)"
    SEND_EVENT_SQL = "SELECT tenq.send_event($1::text, $2::text, $3::jsonb)"
    SQLSTATE = "C".ord # PG::PG_DIAG_SQLSTATE
    PRIMARY = "M".ord  # PG::PG_DIAG_MESSAGE_PRIMARY
    COLUMN = "c".ord   # PG::PG_DIAG_COLUMN_NAME
    # tenq's SQLSTATEs and the errors they raise.
    REFUSALS = { "22023" => InvalidError, "TQ002" => LeaseError, "TQ429" => QuotaExceededError }.freeze
    # The limits a quota refusal names (the longer first: one holds the other).
    QUOTA_FIELDS = %w[max_queued_bytes max_queued].freeze

    module_function

    # Submits one job in the connection's transaction.
    # @param conn [#exec_params] the application's connection, in its transaction
    # @param fields the fields of {Client#submit} (+tenant:+ and +queue:+ are required)
    # @return [Integer] the job's id (odd: the ids of transactions)
    # @raise [InvalidError]
    # @raise [QuotaExceededError] past a tenant's or a queue's quota
    def submit(conn, type:, **fields)
      fields[:type] = type
      job = build(fields)
      return Testing.submit(job).id if Testing.active?

      params = submit_params(job)
      return Integer(first_value(run(conn, SUBMIT_SQL, params))) unless KEYED.any? { |f| job.key?(f) }

      Integer(first_value(run(conn, SUBMIT_KEYED_SQL, params + keyed_params(job))))
    end

    # Submits many jobs (Hashes with the fields of {#submit}) in the
    # connection's transaction, in one statement.
    # @param conn [#exec_params]
    # @param jobs [Array<Hash>]
    # @return [Array<Integer>] their ids, in order
    # @raise [InvalidError] a bad job (naming its index); none is made
    # @raise [QuotaExceededError] past a tenant's or a queue's quota; none is made
    def submit_many(conn, jobs)
      built = jobs.each_with_index.map { |fields, i| build(fields, i) }
      return built.map { |job| Testing.submit(job).id } if Testing.active?
      return [] if built.empty?

      built.each do |job|
        %w[run_at expire_at].each { |f| job[f] = timestamp(job[f]) if job.key?(f) }
      end

      ids(first_value(run(conn, SUBMIT_MANY_SQL, [JSON.generate(built)])))
    end

    # Completes a leased job of an exactly-once queue in the connection's
    # transaction: it succeeds, with +result+, if and only if the
    # transaction commits, and is never delivered again. A {Task} (a
    # handler's job) carries its token; the worker's own ack afterwards
    # carries the same result and is answered as applied.
    # @param job [Task, Hash, Integer] the leased job ({Task}, or the lease's
    #   Hash with "id" and "token"), or its id with +token:+
    # @param token [Integer, nil] the lease's token (default: the job's)
    # @param result [Object] any JSON; nil keeps none
    # @return [void]
    # @raise [LeaseError] the token is not the job's current unexpired
    #   lease, or the queue's delivery is not exactly-once
    def complete(conn, job, token: nil, result: nil)
      id, token = lease_of(job, token)
      JSONValue.check!(result, "result")
      settling(job, Execution::Outcome.new(true, result)) do
        run(conn, COMPLETE_SQL, [id.to_s, token.to_s, result.nil? ? nil : JSON.generate(result)])
      end
    end

    # Fails the attempt of a leased job of an exactly-once queue in the
    # connection's transaction: if it commits, the server retries the job
    # (after +retry_in+ seconds, else by the queue's backoff) or buries it.
    # @param error [String, Exception] what went wrong (an exception: "Class: message")
    # @param retry_in [Numeric, nil] seconds until the retry
    # @return [void]
    # @raise [LeaseError]
    def fail(conn, job, error:, token: nil, retry_in: nil)
      id, token = lease_of(job, token)
      text = error.is_a?(Exception) ? Execution.describe(error) : error.to_s
      retry_ms = retry_in.nil? ? nil : (retry_in * 1000).round
      raise InvalidError.new("retry_in must be 0 or more seconds", field: "retry_in") if retry_ms&.negative?

      settling(job, Execution.failure(text, retry_in: retry_in)) do
        run(conn, FAIL_SQL, [id.to_s, token.to_s, text, retry_ms&.to_s])
      end
    end

    # Sends an event of +tenant+ in the connection's transaction
    # (tenq.send_event, docs/transactions.md): the jobs whose handler waits
    # for +key+ ({Task#wait_for_event}) go on with +payload+ (JSON) if and
    # only if the transaction commits.
    # @return [Integer] the event's number in the server's inbox
    # @raise [InvalidError] a bad tenant, key or payload
    def send_event(conn, tenant:, key:, payload: nil)
      raise InvalidError.new("tenant is required", field: "tenant") unless tenant.is_a?(String) && !tenant.empty?
      raise InvalidError.new("key is required", field: "key") unless key.is_a?(String) && !key.empty?

      JSONValue.check!(payload, "payload")
      Integer(first_value(run(conn, SEND_EVENT_SQL, [tenant, key, JSON.generate(payload)])))
    end

    # Runs the completion or failure (nothing in a test mode). A {Task}'s
    # worker sends no start or heartbeat for it from just before: the
    # statement locks the job's row until the transaction ends. The task
    # keeps the outcome, which its worker reports too.
    def settling(job, outcome)
      task = job.is_a?(Task) ? job : nil
      task&.quiet!
      yield unless Testing.active?
      task&.settle(outcome)
      nil
    rescue StandardError
      task&.unquiet!
      raise
    end

    # The arguments of tenq.submit's first form, as text.
    def submit_params(job)
      [job["tenant"], job["queue"], job["type"], JSON.generate(job.fetch("args", {})), job["key"],
       job["unique_key"], job["unique"] ? "t" : "f", job["idempotency_key"], timestamp(job["run_at"]),
       job.fetch("priority", 0).to_s, job["max_attempts"]&.to_s, job["score"]&.to_s, job["traceparent"],
       job["timeout_ms"]&.to_s]
    end

    # The arguments of schema 26 (keys as JSON, expire_at as a time).
    def keyed_params(job)
      keys = job.values_at("concurrency_keys", "rate_keys").map { |k| k && JSON.generate(k) }
      times = job.values_at("start_within_ms", "debounce_ms", "debounce_max_ms").map { |v| v&.to_s }
      keys + [timestamp(job["expire_at"])] + times
    end

    # The checked job, as the server's JSON (run_at in milliseconds).
    def build(fields, index = nil)
      job = JobFields.build(fields, nil, index)
      return job if job.key?("tenant")

      raise InvalidError.new("#{"jobs[#{index}]." if index}tenant is required", field: "tenant")
    end

    # ISO 8601 text of a time in milliseconds since the epoch (or nil).
    def timestamp(millis)
      millis && Time.at(millis / 1000r).utc.iso8601(3)
    end

    # [id, token] of a job given as a Task, a lease's Hash or an id.
    def lease_of(job, token)
      id = job
      if job.is_a?(Hash)
        id = job["id"] || job[:id]
        token ||= job["token"] || job[:token]
      elsif job.respond_to?(:token) && job.respond_to?(:id)
        id = job.id
        token ||= job.token
      end
      raise ArgumentError, "the lease's token is required (token:)" if token.nil?

      [Integer(id), Integer(token)]
    end

    # Runs the statement; the database's refusals of tenq become {Error}s.
    def run(conn, sql, params)
      conn.exec_params(sql, params)
    rescue StandardError => e
      translated = translate(e)
      raise translated if translated

      raise
    end

    # An {InvalidError}, {LeaseError} or {QuotaExceededError} for tenq's own
    # SQLSTATEs, else nil.
    def translate(error)
      klass = REFUSALS[error_field(error, SQLSTATE)]
      return nil unless klass

      message = error_field(error, PRIMARY) || error.message.sub(/\AERROR:\s+/, "").lines.first.to_s.strip
      return nil unless message.start_with?("tenq.")

      if klass == QuotaExceededError
        return QuotaExceededError.new(message, status: 429, field: quota_field(error, message))
      end

      klass.new(message, field: klass == LeaseError ? "token" : refused_field(message))
    end

    # The limit a quota refusal names: the error's column, else its message's.
    def quota_field(error, message)
      column = error_field(error, COLUMN)
      QUOTA_FIELDS.include?(column) ? column : QUOTA_FIELDS.find { |f| message.include?(f) }
    end

    # The argument a refusal names first ("tenq.submit: timeout_ms must be ...",
    # "tenq.submit_many: job 3: priority ..."), or nil.
    def refused_field(message)
      word = message[/\Atenq\.[a-z_]+: (?:job \d+: )?([a-z_]+)\b/, 1]
      word if word && (JobFields::NAMES.include?(word.to_sym) || %w[retry_in_ms payload].include?(word))
    end

    def error_field(error, field)
      result = error.respond_to?(:result) ? error.result : nil
      result.respond_to?(:error_field) ? result.error_field(field) : nil
    rescue StandardError
      nil
    end

    # The first column of the first row, whatever shape the result has.
    def first_value(result)
      return result.getvalue(0, 0) if result.respond_to?(:getvalue)

      row = (result.respond_to?(:values) ? result.values : result.to_a).first
      row.is_a?(Hash) ? row.values.first : Array(row).first
    end

    # bigint[] as Integers: an Array (a typed result) or its text "{1,3}".
    def ids(value)
      list = value.is_a?(Array) ? value : value.to_s.delete("{}").split(",")
      list.map { |v| Integer(v) }
    end
    private_class_method :build, :submit_params, :keyed_params, :timestamp, :lease_of, :settling, :run, :translate,
                         :refused_field, :quota_field, :error_field, :first_value, :ids
  end
end
