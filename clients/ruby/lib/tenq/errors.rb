# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

# Errors: one class per error code of the protocol.
module Tenq
  # The root of every error this library raises. Errors the server answered
  # carry the HTTP status, the protocol's error code, the message and the
  # field the server named; local errors have a status of nil.
  class Error < StandardError
    # @return [Integer, nil] the HTTP status, nil when no answer came
    attr_reader :status
    # @return [String] the protocol's error word ("invalid", "not_found", ...)
    attr_reader :code
    # @return [String, nil] the field at fault, when one is
    attr_reader :field
    # @return [Float, nil] seconds the server asked to wait (Retry-After)
    attr_reader :retry_after

    def initialize(message = nil, status: nil, code: nil, field: nil, retry_after: nil)
      @status = status
      @code = code || self.class.code
      @field = field
      @retry_after = retry_after
      super(message || self.class.name)
    end

    class << self
      # The protocol's error word of this class.
      def code
        "error"
      end

      # The class of a protocol error word (unknown words map by status).
      # @return [Class]
      def for(code, status)
        CODES.fetch(code) do
          case status
          when 400 then InvalidError
          when 401 then UnauthenticatedError
          when 403 then ForbiddenError
          when 404 then NotFoundError
          when 409 then ConflictError
          when 413 then TooLargeError
          when 429 then RateLimitedError
          when 503 then UnavailableError
          when 504 then TimeoutError
          else ServerError
          end
        end
      end
    end
  end

  # Declares an error class with its protocol word.
  def self.define_error(name, word, parent = Error)
    klass = Class.new(parent) { define_singleton_method(:code) { word } }
    const_set(name, klass)
  end
  private_class_method :define_error

  define_error(:InvalidError, "invalid")
  define_error(:UnauthenticatedError, "unauthenticated")
  define_error(:ForbiddenError, "forbidden")
  define_error(:NotFoundError, "not_found")
  define_error(:ConflictError, "conflict")
  # Jobs added to a batch that is closed (its jobs all finished and its
  # callbacks were made): nothing was added.
  define_error(:BatchClosedError, "batch_closed", ConflictError)
  define_error(:TooLargeError, "too_large")
  # 429: the server asks the caller to come back later (+retry_after+);
  # nothing of the request was done. The base of every 429.
  define_error(:RateLimitedError, "rate_limited")
  # 429 overloaded: a submit while the server's jobs fill its memory
  # budget; nothing of it was made. A client's submits send it again after
  # the Retry-After for up to +backpressure_budget+ seconds, then raise it.
  define_error(:OverloadedError, "overloaded", RateLimitedError)
  # 429 quota_exceeded: a submit that would take a tenant or a queue past
  # its quota; +field+ names the limit ("max_queued" or
  # "max_queued_bytes"), the message the tenant or queue; nothing of it was
  # made. A client's submits wait for room as for {OverloadedError};
  # {Tx.submit} raises it for SQLSTATE TQ429 (the database's error as its
  # +cause+), and the transaction is then aborted.
  define_error(:QuotaExceededError, "quota_exceeded", RateLimitedError)
  define_error(:UnavailableError, "unavailable")
  define_error(:NotLeaderError, "not_leader", UnavailableError)
  define_error(:TimeoutError, "timeout")
  define_error(:ServerError, "internal")
  # No server could be reached (or the connection broke) within the
  # failover budget. An {UnavailableError}, so one rescue covers a server
  # that is away either way.
  define_error(:ConnectionError, "connection", UnavailableError)
  # An https server's certificate did not verify (an unknown CA, an expired
  # certificate, a name it does not hold), or the server refused this
  # client's certificate: configuration, raised at once, not retried.
  define_error(:TlsError, "tls", ConnectionError)
  # The answer was not the HTTP/JSON the protocol promises.
  define_error(:ProtocolError, "protocol")
  # A completion or failure in a database transaction ({Tx.complete},
  # {Tx.fail}) whose token is not the job's current, unexpired lease (or
  # whose queue's delivery is not exactly-once): the database refused it.
  define_error(:LeaseError, "conflict", ConflictError)

  # A job finished without success (dead, cancelled): raised by
  # {Handle#result}. {#job} is the job as the server last showed it.
  class JobFailed < Error
    # @return [JobInfo]
    attr_reader :job

    def initialize(job)
      @job = job
      super("job #{job.id} is #{job.state}#{": #{job.error}" if job.error}", code: "job_#{job.state}")
    end
  end

  # Raised by {Handle#result} when the job expired: it was not started by its
  # +expire_at+ (docs/SEMANTICS.md, "Expiry") and never ran.
  class JobExpired < JobFailed
  end

  # Raised by {Handle#result} when the job has not finished in time.
  class WaitTimeout < TimeoutError
    # @return [JobInfo]
    attr_reader :job

    def initialize(job, seconds)
      @job = job
      super("job #{job.id} is still #{job.state} after #{seconds} s")
    end
  end

  CODES = {
    "invalid" => InvalidError, "unauthenticated" => UnauthenticatedError,
    "forbidden" => ForbiddenError, "not_found" => NotFoundError, "conflict" => ConflictError,
    "batch_closed" => BatchClosedError,
    "too_large" => TooLargeError, "rate_limited" => RateLimitedError,
    "overloaded" => OverloadedError, "quota_exceeded" => QuotaExceededError, "unavailable" => UnavailableError,
    "not_leader" => NotLeaderError, "timeout" => TimeoutError, "internal" => ServerError,
    "tls" => TlsError, "protocol" => ProtocolError
  }.freeze
  private_constant :CODES
end
