# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # The server's answer for one submitted job: {"id", "state", "duplicate",
  # "merged", "replayed"}. In a batch, a job the server refused has {#error}
  # set (an {Error} naming the field) and no id.
  class SubmitResult
    # @return [Error, nil] why this job was refused (batches only)
    attr_reader :error

    # @param data [Hash{String => Object}, ColumnRow]
    def self.from_answer(data)
      raise ProtocolError, "the submit answer is not an object" unless data.is_a?(Hash) || data.is_a?(ColumnRow)

      if (e = data["error"])
        e = {} unless e.is_a?(Hash)
        error = Error.for(e["code"], 400).new(e["message"], status: 400, code: e["code"], field: e["field"])
        return new({}, error)
      end
      raise ProtocolError, "the submit answer has no id" unless data["id"].is_a?(Integer)

      new(data)
    end

    # @param data [Hash{String => Object}, ColumnRow] the answer ("id", "state", "duplicate", ...)
    # @param error [Error, nil]
    def initialize(data, error = nil)
      @data = data
      @error = error
    end

    # @return [Integer, nil]
    def id
      @data["id"]
    end

    # @return [String, nil] the job's state when the submit was answered
    def state
      @data["state"]
    end

    # An unfinished job with the same unique key answered; nothing was made.
    def duplicate?
      @data["duplicate"] == true
    end

    # The payload joined job {#id} (merging queues).
    def merged?
      @data["merged"] == true
    end

    # The answer of an earlier submit with the same idempotency key.
    def replayed?
      @data["replayed"] == true
    end

    # A new job was made.
    def created?
      !@error && !duplicate? && !merged? && !replayed?
    end

    def ok?
      @error.nil?
    end

    def inspect
      return "#<Tenq::SubmitResult error=#{@error.message.inspect}>" if @error

      "#<Tenq::SubmitResult id=#{id} state=#{state}#{' duplicate' if duplicate?}" \
        "#{' merged' if merged?}#{' replayed' if replayed?}>"
    end
  end
end
