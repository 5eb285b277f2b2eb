# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

# The blank ActiveJob job of W1's ActiveJob path, for both queues: it
# counts its runs; ActiveJob's logging is off (its log subscriber would
# format two lines a job), as the peers' blank jobs log nothing.
require "active_job"
require "logger"

ActiveJob::Base.logger = Logger.new(nil, level: Logger::WARN)

class BlankJob < ActiveJob::Base
  queue_as "bench"

  @ran = 0
  @lock = Mutex.new

  class << self
    def ran
      @lock.synchronize { @ran }
    end

    def ran!
      @lock.synchronize { @ran += 1 }
    end
  end

  def perform
    self.class.ran!
  end
end
