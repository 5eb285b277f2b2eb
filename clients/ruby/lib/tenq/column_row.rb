# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

module Tenq
  # @api private: one job of an answer given as columns (POST /v1/lease and
  # POST /v1/jobs with "columns": true: a list per field, the i-th entry of
  # each the i-th job's). It reads like the job's Hash; JSON.parse makes one
  # list per field rather than a Hash per job, a quarter of the time.
  class ColumnRow
    def initialize(columns, index)
      @columns = columns
      @index = index
    end

    # The field's value (nil: the job has none).
    def [](field)
      column = @columns[field]
      column[@index] if column
    end

    # The job as a Hash, as the answer would have held it as a list of
    # objects: an optional field the job lacks is left out ("key" is null).
    # @return [Hash{String => Object}]
    def to_h
      @columns.each_with_object({}) do |(field, column), h|
        v = column[@index]
        h[field] = v unless v.nil? && field != "key"
      end
    end

    # The rows of a "columns" object: as many as its lists are long (each
    # list is as long as the others; none when it holds no list).
    # @return [Array<ColumnRow>]
    # @raise [ProtocolError] a column that is not a list, or lists of two lengths
    def self.all(columns)
      raise ProtocolError, "the answer's columns are not an object" unless columns.is_a?(Hash)

      n = nil
      columns.each_value do |column|
        raise ProtocolError, "the answer's columns are not lists of one length" \
          unless column.is_a?(Array) && (n.nil? || column.size == n)

        n = column.size
      end
      Array.new(n || 0) { |i| new(columns, i) }
    end
  end
end
