# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"
require "json"
require "net/http"

# The library's lists against the protocol the server exports (GET
# /v1/spec, made from the server's own tables): a state, a waiting reason,
# an attempt outcome, an error word, a field of a count or a setting the
# server knows and this library does not fails here, until it is added.
class TestSpec < TenqTest::Case
  def spec
    @spec ||= JSON.parse(Net::HTTP.get(URI("#{server.url}/v1/spec")))
  end

  def test_states
    names = spec["states"].map { |s| s["name"] }
    assert_includes names, "waiting"
    assert_equal names, Tenq::JobInfo::STATES
    assert_equal spec["states"].select { |s| s["finished"] }.map { |s| s["name"] }.sort,
                 Tenq::JobInfo::FINISHED.sort
  end

  def test_waiting_reasons_and_attempt_outcomes
    assert_includes spec["waiting_reasons"], "no_worker"
    assert_equal spec["waiting_reasons"].sort, Tenq::JobInfo::WAITING_REASONS.sort
    assert_equal spec["attempt_outcomes"], Tenq::Attempt::OUTCOMES
  end

  def test_counts_and_settings
    live = spec["states"].select { |s| s["live"] }.map { |s| s["name"] }
    assert_empty live - spec["counts"]
    assert_empty spec["counts"] - Tenq::SettingsInfo::COUNTS.map(&:to_s)
    { "queue" => Tenq::QueueInfo, "tenant" => Tenq::TenantInfo }.each do |kind, klass|
      names = spec["settings"][kind].map { |r| r["name"] }
      refute_empty names, kind
      # a reader of its own, or a predicate for a flag (QueueInfo#paused?)
      unknown = names.reject { |n| klass::SETTINGS.include?(n.to_sym) || klass.method_defined?("#{n}?") }
      assert_empty unknown, kind
    end
  end

  def test_key_settings
    names = spec["settings"]["key"].map { |r| r["name"] }
    refute_empty names
    takes = Tenq::Client.instance_method(:set_key_setting).parameters.map { |_, n| n.to_s }
    assert_empty names - takes
    assert_equal %w[key queue tenant], spec["settings"].keys.sort
  end

  def test_error_words
    assert_includes spec["errors"], { "word" => "invalid", "status" => 400 }
    spec["errors"].each do |e|
      klass = Tenq::Error.for(e["word"], e["status"])
      refute_equal Tenq::Error, klass, e["word"]
      assert_equal e["word"], klass.code
    end
  end
end
