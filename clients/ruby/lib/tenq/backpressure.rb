# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # Backpressure: a submit request the server refused with 429 +overloaded+
  # (its memory budget) or +quota_exceeded+ (a tenant's or a queue's
  # +max_queued+ / +max_queued_bytes+) made nothing, so it is sent again,
  # unchanged and under the same Idempotency-Key, after the server's
  # Retry-After, until the client's +backpressure_budget+ seconds have
  # passed since its first refusal (the last try when they run out); then
  # the refusal is raised (docs/SEMANTICS.md, "Quotas and backpressure").
  module Backpressure
    # Seconds a submit request keeps being sent again after such refusals.
    DEFAULT_BUDGET = 60.0
    # The pause when the server names none (it sends Retry-After: 1).
    PAUSE = 1.0
    # The least pause, whatever the server says.
    PAUSE_MIN = 0.05

    module_function

    # +budget+ as seconds (0 or more).
    # @return [Float]
    # @raise [InvalidError] naming +backpressure_budget+
    def check!(budget)
      return budget.to_f if budget.is_a?(Numeric) && budget.to_f >= 0

      raise InvalidError.new("backpressure_budget must be 0 or more seconds, not #{budget.inspect}",
                             field: "backpressure_budget")
    end

    # Runs the block (one try of a submit request) again after each
    # {OverloadedError} or {QuotaExceededError} it raises, for up to
    # +budget+ seconds from the first; the block's value.
    def retrying(budget)
      deadline = nil
      begin
        yield
      rescue OverloadedError, QuotaExceededError => e
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        deadline ||= now + budget
        left = deadline - now
        raise if left <= 0

        sleep([[e.retry_after || PAUSE, PAUSE_MIN].max, left].min)
        retry
      end
    end
  end
end
