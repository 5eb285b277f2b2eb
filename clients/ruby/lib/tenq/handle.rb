# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # A submitted job: its id, what the submit answered, and a way to wait
  # for its result. Returned by {Client#submit}, {Client#submit_many} and
  # the async switch (+report.async.execute(42)+).
  class Handle
    # @return [SubmitResult]
    attr_reader :submitted

    # @param backend [#wait_job, #job, #cancel] the client (or the test mode's store)
    # @param submitted [SubmitResult]
    def initialize(backend, submitted)
      @backend = backend
      @submitted = submitted
    end

    # @return [Integer, nil] nil when the server refused the job (batches)
    def id
      @submitted.id
    end

    # @return [Error, nil] why the server refused this job of a batch
    def error
      @submitted.error
    end

    def ok?
      @submitted.ok?
    end

    def created?
      @submitted.created?
    end

    def duplicate?
      @submitted.duplicate?
    end

    def merged?
      @submitted.merged?
    end

    def replayed?
      @submitted.replayed?
    end

    def debounced?
      @submitted.debounced?
    end

    # Waits until the job finishes and returns its result (the handler's
    # return value, as JSON gave it back). A merged job is followed to the
    # job that took its payload.
    # @param timeout [Numeric] seconds
    # @return [Object]
    # @raise [JobFailed] the job ended dead or cancelled ({JobExpired}: expired)
    # @raise [WaitTimeout] it had not finished within the timeout
    def wait(timeout: 60)
      info = wait_job(timeout: timeout)
      raise WaitTimeout.new(info, timeout) unless info.finished?
      raise JobExpired, info if info.state == "expired"
      raise JobFailed, info unless info.succeeded?

      info.result
    end
    alias result wait

    # Waits up to +timeout+ seconds and returns the job as it is then.
    # @return [JobInfo]
    def wait_job(timeout: 60)
      check!
      @backend.wait_job(id, timeout: timeout)
    end

    # The job now.
    # @return [JobInfo]
    def job
      check!
      @backend.job(id)
    end

    # Cancels the job (see {Client#cancel}).
    # @return [JobInfo]
    def cancel
      check!
      @backend.cancel(id)
    end

    def inspect
      "#<Tenq::Handle #{@submitted.inspect}>"
    end

    private

    def check!
      raise error if error
    end
  end
end
