# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "securerandom"

module Tenq
  # The keys of the Idempotency-Key header a client puts on every POST
  # /v1/jobs: one a request, made before its first attempt and sent again
  # with every retry, so that the server answers a retry with the first
  # answer and makes nothing. Time-ordered: "tq1", 11 hex digits of the Unix
  # clock in milliseconds, 8 random hex digits of this generator (drawn
  # again in a forked child), 8 hex digits of a counter. Thread-safe.
  class IdempotencyKeys
    def initialize
      @mutex = Mutex.new
      @pid = nil
      @counter = 0
    end

    # @return [String]
    def next_key
      ms = Process.clock_gettime(Process::CLOCK_REALTIME, :millisecond)
      @mutex.synchronize do
        reseed unless @pid == Process.pid
        @counter = (@counter + 1) & 0xffff_ffff
        format("tq1%<ms>011x%<own>s%<n>08x", ms: ms & 0xfff_ffff_ffff, own: @own, n: @counter)
      end
    end

    private

    def reseed
      @pid = Process.pid
      @own = SecureRandom.hex(4)
    end
  end
end
