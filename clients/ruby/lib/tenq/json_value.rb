# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # Checks that a value travels through JSON and comes back the same, before
  # anything is sent: nil, true, false, Integer, finite Float, String (valid
  # in its encoding), Array, and Hash with String or Symbol keys (Symbol keys
  # come back as strings). Anything else (a Time, a Symbol value, an object
  # whose to_json would be its inspect text) raises {InvalidError} naming the
  # field and the path inside it.
  #
  # A bulk submit checks every job's args, so the walk allocates nothing
  # while the value is good: the path in the message is worked out only
  # when something is wrong.
  module JSONValue
    DEEP = "nests deeper than 100 levels"
    private_constant :DEEP

    module_function

    # @param value [Object]
    # @param field [String] the field named in the error ("args", "result")
    # @return [Object] value
    # @raise [InvalidError]
    def check!(value, field)
      problem = walk(value, 0)
      raise InvalidError.new("#{field}#{path_text(problem[0])} #{problem[1]}", field: field) if problem

      value
    end

    # nil when the value is good, else [path (the keys and indexes, outermost
    # first), what is wrong with it].
    # @return [Array, nil]
    def walk(value, depth)
      case value
      when nil, true, false, Integer then nil
      when String then string_problem(value)
      when Float then value.finite? ? nil : [[], "is #{value}: JSON has no such number"]
      when Array then walk_array(value, depth)
      when Hash then walk_hash(value, depth)
      else
        [[], "is a #{value.class}, which is not JSON (use nil, true, false, numbers, strings, arrays and hashes)"]
      end
    end

    def walk_array(array, depth)
      return [[], DEEP] if depth >= 100 && !array.empty?

      array.each_with_index do |v, i|
        next if v.nil? || v.is_a?(Integer) || (v.is_a?(String) && v.valid_encoding? && v.encoding != Encoding::BINARY)

        problem = walk(v, depth + 1)
        return problem.tap { |p| p[0].unshift(i) } if problem
      end
      nil
    end

    def walk_hash(hash, depth)
      return [[], DEEP] if depth >= 100 && !hash.empty?

      hash.each_pair do |k, v|
        unless k.is_a?(String) || k.is_a?(Symbol)
          return [[], "has a #{k.class} key (#{k.inspect}); JSON keys are strings"]
        end
        next if v.nil? || v.is_a?(Integer) || (v.is_a?(String) && v.valid_encoding? && v.encoding != Encoding::BINARY)

        problem = walk(v, depth + 1)
        return problem.tap { |p| p[0].unshift(k.to_s) } if problem
      end
      nil
    end

    def string_problem(value)
      return nil if value.valid_encoding? && (value.encoding != Encoding::BINARY || value.ascii_only?)

      [[], "is not valid text (#{value.encoding}); JSON carries UTF-8"]
    end

    # "[0][\"to\"]" for the path [0, "to"]
    def path_text(path)
      path.map { |p| p.is_a?(Integer) ? "[#{p}]" : "[#{p.inspect}]" }.join
    end
    private_class_method :walk, :walk_array, :walk_hash, :string_problem, :path_text
  end
end
