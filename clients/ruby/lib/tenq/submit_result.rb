# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # The server's answer for one submitted job: {"id", "state", "duplicate",
  # "merged", "replayed", "debounced"}. In a batch, a job the server refused has {#error}
  # set (an {Error} naming the field) and no id.
  class SubmitResult
    # @return [Error, nil] why this job was refused (batches only)
    attr_reader :error

    # @param data [Hash{String => Object}]
    def self.from_answer(data)
      raise ProtocolError, "the submit answer is not an object" unless data.is_a?(Hash)

      return refused(data["error"]) if data["error"]
      raise ProtocolError, "the submit answer has no id" unless data["id"].is_a?(Integer)

      new(data)
    end

    # The results of a batch answered as columns ("columns": one list a
    # field, null where a job lacks the field), one a job, in order.
    # @param columns [Hash{String => Array}]
    # @param count [Integer] the jobs sent
    # @return [Array<SubmitResult>]
    # @raise [ProtocolError] lists that are not one a field, of +count+ entries
    def self.all_from_columns(columns, count)
      lists = columns.is_a?(Hash) ? FIELDS.map { |f| columns[f] || Array.new(count) } : []
      unless lists.size == FIELDS.size && lists.all? { |l| l.is_a?(Array) && l.size == count }
        raise ProtocolError, "the batch answer does not hold #{count} results"
      end

      ids, states, duplicate, merged, replayed, debounced, errors = lists
      Array.new(count) do |i|
        next refused(errors[i]) if errors[i]
        raise ProtocolError, "the submit answer has no id" unless ids[i].is_a?(Integer)

        allocate.send(:made, ids[i], states[i], [duplicate[i], merged[i], replayed[i], debounced[i]])
      end
    end

    FIELDS = %w[id state duplicate merged replayed debounced error].freeze
    private_constant :FIELDS

    def self.refused(wire)
      e = wire.is_a?(Hash) ? wire : {}
      new({}, Error.for(e["code"], 400).new(e["message"], status: 400, code: e["code"], field: e["field"]))
    end
    private_class_method :refused

    # @param data [Hash{String => Object}] the answer ("id", "state", "duplicate", ...)
    # @param error [Error, nil]
    def initialize(data, error = nil)
      made(data["id"], data["state"], data.values_at("duplicate", "merged", "replayed", "debounced"))
      @error = error
    end

    # @return [Integer, nil]
    attr_reader :id

    # @return [String, nil] the job's state when the submit was answered
    attr_reader :state

    # An unfinished job with the same unique key answered; nothing was made.
    def duplicate?
      @duplicate
    end

    # The payload joined job {#id} (merging queues).
    def merged?
      @merged
    end

    # The answer of an earlier submit with the same idempotency key.
    def replayed?
      @replayed
    end

    # The pending job of its key took it (+debounce_ms+): that job's args
    # were replaced and its start moved.
    def debounced?
      @debounced
    end

    # A new job was made.
    def created?
      !@error && !duplicate? && !merged? && !replayed? && !debounced?
    end

    def ok?
      @error.nil?
    end

    def inspect
      return "#<Tenq::SubmitResult error=#{@error.message.inspect}>" if @error

      "#<Tenq::SubmitResult id=#{id} state=#{state}#{' duplicate' if duplicate?}" \
        "#{' merged' if merged?}#{' replayed' if replayed?}#{' debounced' if debounced?}>"
    end

    private

    # +flags+: the answer's duplicate, merged, replayed and debounced (true when true).
    def made(id, state, flags)
      @id = id
      @state = state
      @duplicate, @merged, @replayed, @debounced = flags.map { |f| f == true }
      @error = nil
      self
    end
  end
end
