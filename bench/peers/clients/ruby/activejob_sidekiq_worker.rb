# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

# Loaded by the Sidekiq process of W1's ActiveJob path
# (sidekiq -r activejob_sidekiq_worker.rb -c 5 -q bench): BlankJob on
# ActiveJob's :sidekiq adapter; a server middleware counts the jobs and
# writes the first start and the last end to BENCH_OUT once BENCH_TARGET
# jobs ran (and BlankJob ran as many times).
require "sidekiq"
require "json"
require_relative "activejob_blank"

ActiveJob::Base.queue_adapter = :sidekiq

class ActiveJobBenchRecorder
  TARGET = Integer(ENV.fetch("BENCH_TARGET"))
  OUT = ENV.fetch("BENCH_OUT")
  LOCK = Mutex.new

  @count = 0
  @first_start = nil

  class << self
    def now_ms = Process.clock_gettime(Process::CLOCK_REALTIME, :float_millisecond)

    def started
      t = now_ms
      LOCK.synchronize { @first_start ||= t }
    end

    def finished
      t = now_ms
      LOCK.synchronize do
        @count += 1
        return unless @count == TARGET
        raise "BlankJob ran #{BlankJob.ran} times for #{TARGET} jobs" unless BlankJob.ran == TARGET

        File.write("#{OUT}.tmp", JSON.generate("first_start_ms" => @first_start, "last_end_ms" => t))
        File.rename("#{OUT}.tmp", OUT)
      end
    end
  end

  def call(_worker, _job, _queue)
    self.class.started
    yield
    self.class.finished
  end
end

Sidekiq.configure_server do |config|
  config.server_middleware { |chain| chain.add ActiveJobBenchRecorder }
end
