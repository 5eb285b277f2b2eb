# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # Turns the fields of a submit (Symbol or String keys) into the job's
  # JSON object (String keys), checking each before anything is sent: a bad
  # field raises {InvalidError} naming it (and the job's index in a batch).
  # This runs once per job of a bulk submit, so it allocates little.
  module JobFields
    # Every field of a submit (docs/API.md, "Jobs").
    NAMES = %i[tenant queue type args key unique_key unique idempotency_key priority run_at
               max_attempts score traceparent timeout_ms depends_on on_parent_failure
               concurrency_keys rate_keys debounce_ms debounce_max_ms expire_at start_within_ms].freeze
    # The members of a concurrency key's and a rate key's Hash (besides +key+).
    # The fields that are integers or times (milliseconds).
    NUMBERS = %i[priority max_attempts timeout_ms run_at debounce_ms debounce_max_ms expire_at start_within_ms].freeze
    KEY_MEMBERS = { concurrency_keys: %w[limit], rate_keys: %w[cost rate rate_period_ms rate_burst] }.freeze
    POLICIES = %w[cancel run].freeze
    WIRE = NAMES.to_h { |n| [n, n.to_s.freeze] }.freeze
    BY_TEXT = NAMES.to_h { |n| [n.to_s.freeze, n] }.freeze
    private_constant :WIRE, :BY_TEXT

    module_function

    # @param fields [Hash{Symbol, String => Object}] the job's fields (nil: absent)
    # @param base [Hash{String => Object}] fields already built (defaults), copied
    # @param index [Integer, nil] the job's index in a batch, for the messages
    # @return [Hash{String => Object}]
    def build(fields, base = nil, index = nil)
      job = base ? Hash[base] : {} # a plain copy, cheaper than #dup
      fields.each_pair do |name, value|
        next if value.nil?

        put(job, name.is_a?(Symbol) ? name : BY_TEXT.fetch(name, name), value, index)
      end
      missing = job.key?("queue") ? ("type" unless job.key?("type")) : "queue"
      raise InvalidError.new("#{at(index)}#{missing} is required", field: missing) if missing

      job
    end

    # The defaults of a client, built once.
    # @return [Hash{String => Object}]
    def defaults(fields)
      job = {}
      fields.each { |name, value| put(job, name.to_sym, value, nil) unless value.nil? }
      job.freeze
    end

    def put(job, name, value, index)
      case name
      when :type then job["type"] = text(value, name, index)
      when :queue, :tenant, :key, :unique_key, :idempotency_key then job[WIRE[name]] = text(value, name, index)
      when :args then job["args"] = JSONValue.check!(value, "#{at(index)}args")
      when :unique then job["unique"] = true if value
      when *NUMBERS, :concurrency_keys, :rate_keys then job[WIRE[name]] = number_or_keys(name, value, index)
      when :score then job["score"] = score(value, index)
      when :traceparent then job["traceparent"] = Traceparent.check!(value, at(index))
      when :depends_on, :on_parent_failure then job[WIRE[name]] = workflow(name, value, index)
      else raise InvalidError.new("unknown field #{at(index)}#{name}", field: name.to_s)
      end
    end

    def at(index)
      index ? "jobs[#{index}]." : ""
    end

    def text(value, name, index)
      return value if value.is_a?(String) && !value.empty?
      return value.to_s if value.is_a?(Symbol)

      raise InvalidError.new("#{at(index)}#{name} must be a non-empty string, not #{value.inspect[0, 80]}",
                             field: name.to_s)
    end

    def time_ms(value, index, name = :run_at)
      return (value.to_r * 1000).round if value.is_a?(Time)
      return value if value.is_a?(Integer)

      raise InvalidError.new("#{at(index)}#{name} must be a Time or milliseconds since the epoch, " \
                             "not #{value.inspect}", field: name.to_s)
    end

    # An integer, a time (run_at, expire_at) or a list of keys.
    def number_or_keys(name, value, index)
      case name
      when :concurrency_keys, :rate_keys then keys(value, name, index)
      when :run_at, :expire_at then time_ms(value, index, name)
      else integer(value, name, index)
      end
    end

    # Keys (docs/SEMANTICS.md, "Concurrency keys", "Rate keys"): each a key
    # alone (String or Symbol) or a Hash with +key+ and its members; the
    # server checks the values, naming the field.
    def keys(value, name, index)
      raise InvalidError.new("#{at(index)}#{name} must be an Array of keys", field: name.to_s) unless value.is_a?(Array)

      members = KEY_MEMBERS.fetch(name)
      value.each_with_index.map do |k, i|
        next k.to_s if k.is_a?(String) || k.is_a?(Symbol)
        next key_hash(k, members, "#{name}[#{i}]", index) if k.is_a?(Hash)

        raise InvalidError.new("#{at(index)}#{name}[#{i}] must be a key or a Hash with key:", field: "#{name}[#{i}]")
      end
    end

    def key_hash(hash, members, field, index)
      out = {}
      hash.each_pair do |m, v|
        m = m.to_s
        unless m == "key" || members.include?(m)
          raise InvalidError.new("#{at(index)}#{field}: unknown member #{m}", field: "#{field}.#{m}")
        end

        out[m] = v unless v.nil?
      end
      out
    end

    def score(value, index)
      f = Float(value)
      return f if f.finite?

      raise InvalidError.new("#{at(index)}score must be a finite number", field: "score")
    rescue ArgumentError, TypeError
      raise InvalidError.new("#{at(index)}score must be a number, not #{value.inspect}", field: "score")
    end

    def workflow(name, value, index)
      name == :depends_on ? depends_on(value, index) : policy(value, index)
    end

    # Parents: ids, handles (anything with an Integer #id), and earlier jobs
    # of the same request as Tenq.index(i) (or { index: i }).
    def depends_on(value, index)
      unless value.is_a?(Array)
        raise InvalidError.new("#{at(index)}depends_on must be an Array of job ids, handles or Tenq.index(i)",
                               field: "depends_on")
      end

      value.map { |d| dependency(d, index) }
    end

    def dependency(dep, index)
      return dep if dep.is_a?(Integer)
      return { "index" => dep.index } if dep.is_a?(Index)

      if dep.is_a?(Hash)
        i = dep[:index] || dep["index"]
        return { "index" => i } if i.is_a?(Integer) && dep.size == 1
      elsif dep.respond_to?(:id) && dep.id.is_a?(Integer)
        return dep.id
      end
      raise InvalidError.new("#{at(index)}depends_on holds job ids, handles or Tenq.index(i), not " \
                             "#{dep.inspect[0, 80]}", field: "depends_on")
    end

    def policy(value, index)
      v = value.to_s
      return v if POLICIES.include?(v)

      raise InvalidError.new("#{at(index)}on_parent_failure must be :cancel or :run, not #{value.inspect}",
                             field: "on_parent_failure")
    end

    def integer(value, name, index)
      return value if value.is_a?(Integer)

      raise InvalidError.new("#{at(index)}#{name} must be an integer, not #{value.inspect}", field: name.to_s)
    end
    private_class_method :put, :at, :text, :time_ms, :score, :integer, :workflow, :depends_on, :dependency, :policy,
                         :number_or_keys, :keys, :key_hash
  end
end
