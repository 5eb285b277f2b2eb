# SPDX-License-Identifier: Apache-2.0
# Loaded by the Sidekiq process of the benchmark (sidekiq -r worker.rb -c 5).
# BlankJob is the blank worker class; the bookkeeping is a server middleware,
# kept in memory and written once, to BENCH_OUT, when BENCH_TARGET jobs are done.
require "sidekiq"
require "json"

class BlankJob
  include Sidekiq::Worker
  sidekiq_options queue: "bench", retry: false

  def perform(*_args); end
end

class BenchRecorder
  MUTEX = Mutex.new
  TARGET = Integer(ENV.fetch("BENCH_TARGET"))
  OUT = ENV.fetch("BENCH_OUT")

  @count = 0
  @first_start = nil
  @records = []

  class << self
    def now_ms
      Process.clock_gettime(Process::CLOCK_REALTIME, :float_millisecond)
    end

    def finished(args, t_start, t_end)
      MUTEX.synchronize do
        @first_start ||= t_start
        # W2/W3-B jobs carry [submit_ms]; W4 jobs carry [key, seq]
        @records << [*args, t_start, t_end] unless args.empty? || args[0] == "A"
        @count += 1
        if @count == TARGET
          File.write("#{OUT}.tmp", JSON.generate(
            "first_start_ms" => @first_start, "last_end_ms" => t_end, "records" => @records,
          ))
          File.rename("#{OUT}.tmp", OUT)
        end
      end
    end
  end

  def call(_worker, job, _queue)
    t_start = self.class.now_ms
    yield
    self.class.finished(job["args"], t_start, self.class.now_ms)
  end
end

Sidekiq.configure_server do |config|
  config.server_middleware { |chain| chain.add BenchRecorder }
end
