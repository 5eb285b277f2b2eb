# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # Checks that a value travels through JSON and comes back the same, before
  # anything is sent: nil, true, false, Integer, finite Float, String (valid
  # in its encoding), Array, and Hash with String or Symbol keys (Symbol keys
  # come back as strings). Anything else (a Time, a Symbol value, an object
  # whose to_json would be its inspect text) raises {InvalidError} naming the
  # field and the path inside it.
  module JSONValue
    module_function

    # @param value [Object]
    # @param field [String] the field named in the error ("args", "result")
    # @return [Object] value
    # @raise [InvalidError]
    def check!(value, field)
      walk(value, field, field, 0)
      value
    end

    # @return [void]
    def walk(value, field, path, depth)
      raise InvalidError.new("#{path} nests deeper than 100 levels", field: field) if depth > 100

      case value
      when nil, true, false, Integer, String then check_string(value, field, path)
      when Float
        raise InvalidError.new("#{path} is #{value}: JSON has no such number", field: field) unless value.finite?
      when Array then value.each_with_index { |v, i| walk(v, field, "#{path}[#{i}]", depth + 1) }
      when Hash then walk_hash(value, field, path, depth)
      else
        raise InvalidError.new("#{path} is a #{value.class}, which is not JSON " \
                               "(use nil, true, false, numbers, strings, arrays and hashes)", field: field)
      end
    end

    def walk_hash(hash, field, path, depth)
      hash.each do |k, v|
        unless k.is_a?(String) || k.is_a?(Symbol)
          raise InvalidError.new("#{path} has a #{k.class} key (#{k.inspect}); JSON keys are strings",
                                 field: field)
        end
        walk(v, field, "#{path}[#{k.to_s.inspect}]", depth + 1)
      end
    end

    def check_string(value, field, path)
      return unless value.is_a?(String)
      return if value.valid_encoding? && (value.encoding != Encoding::BINARY || value.ascii_only?)

      raise InvalidError.new("#{path} is not valid text (#{value.encoding}); JSON carries UTF-8", field: field)
    end
    private_class_method :walk, :walk_hash, :check_string
  end
end
