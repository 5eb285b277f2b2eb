# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

# The library's error classes against the one table of error words,
# include/tenq/errors.h: every word the server (or the C library) may give
# maps to the class of that word.
class TestErrorTable < Minitest::Test
  ERRORS_H = File.expand_path("../../../include/tenq/errors.h", __dir__)

  def test_every_error_word_has_its_class
    table = File.read(ERRORS_H).scan(/XX\(\w+,\s*-?\d+,\s*(\d+),\s*"(\w+)"/).to_h { |status, word| [word, status.to_i] }
    assert_equal 429, table["quota_exceeded"]
    assert_operator table.size, :>=, 14
    table.each do |word, status|
      klass = Tenq::Error.for(word, status)
      refute_equal Tenq::Error, klass, word
      assert_equal word, klass.code, word
    end
    assert_operator Tenq::QuotaExceededError, :<, Tenq::RateLimitedError
    assert_operator Tenq::OverloadedError, :<, Tenq::RateLimitedError
  end
end
