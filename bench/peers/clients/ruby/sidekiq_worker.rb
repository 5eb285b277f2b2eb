# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

# Loaded by `sidekiq -r sidekiq_worker.rb` in W1: the blank job, and a server
# middleware that counts the jobs run and, when BENCH_TARGET are done, writes
# {"count", "seconds"} (first start to last end) to BENCH_OUT.
require "json"
require "sidekiq"

class BlankJob
  include Sidekiq::Worker
  sidekiq_options retry: false

  def perform(*_args); end
end

class BenchCounter
  TARGET = Integer(ENV.fetch("BENCH_TARGET"))
  OUT = ENV.fetch("BENCH_OUT")
  LOCK = Mutex.new
  @count = 0
  @first = nil

  class << self
    def done(start, finish)
      LOCK.synchronize do
        @first ||= start
        @count += 1
        next unless @count == TARGET

        File.write("#{OUT}.tmp", JSON.generate("count" => @count, "seconds" => finish - @first))
        File.rename("#{OUT}.tmp", OUT)
      end
    end
  end

  def call(_worker, _job, _queue)
    start = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    yield
    self.class.done(start, Process.clock_gettime(Process::CLOCK_MONOTONIC))
  end
end

Sidekiq.configure_server do |config|
  config.server_middleware { |chain| chain.add BenchCounter }
end
