# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

# config/tenq.yml: ERB, sections per environment (or none), and a clear
# error for what it does not know.
class TestSettings < Minitest::Test
  def file(text)
    @dir = Dir.mktmpdir("tenq-rb-settings-")
    path = File.join(@dir, "tenq.yml")
    File.write(path, text)
    path
  end

  def teardown
    FileUtils.rm_rf(@dir) if @dir
    Tenq.client = nil
  end

  def test_a_section_per_environment_with_erb_and_anchors
    path = file(<<~YAML)
      default: &default
        servers: <%= "http://a:7070,http://b:7070" %>
        tenant: acme
        queues: [reports, mail]
      development:
        <<: *default
        concurrency: 3
      production:
        <<: *default
        servers: [http://p1:7070, http://p2:7070]
        prefetch: auto
    YAML
    dev = Tenq::Settings.load(path, env: "development")
    assert_equal({ servers: "http://a:7070,http://b:7070", tenant: "acme" }, dev.client_options)
    assert_equal [%w[reports mail], { concurrency: 3 }], [dev.queues, dev.worker_options]
    prod = Tenq::Settings.load(path, env: "production")
    assert_equal [%w[http://p1:7070 http://p2:7070], { prefetch: :auto }],
                 [prod.client_options[:servers], prod.worker_options]
    client = Tenq.configure_from(prod)
    assert_equal %w[http://p1:7070 http://p2:7070], client.servers
    assert_equal "acme", client.defaults[:tenant]
    assert_same prod, Tenq.settings
    err = assert_raises(Tenq::InvalidError) { Tenq::Settings.load(path, env: "test") }
    assert_equal "test", err.field
    assert_match(/no test section \(it has default, development, production\)/, err.message)
  end

  def test_a_flat_file_and_bad_keys
    assert_equal "q1", Tenq::Settings.load(file("queues: q1, q2\ntenant: t\n"), env: "x").queues.first
    err = assert_raises(Tenq::InvalidError) { Tenq::Settings.load(file("tennant: acme\n")) }
    assert_equal "tennant", err.field
    assert_match(/unknown setting tennant/, err.message)
    err = assert_raises(Tenq::InvalidError) { Tenq::Settings.load(file("concurrency: lots\n")) }
    assert_equal ["concurrency", "concurrency must be Integer, not \"lots\""],
                 [err.field, err.message.split(": ", 2)[1]]
    err = assert_raises(Tenq::InvalidError) { Tenq::Settings.load(file("prefetch: some\n")) }
    assert_equal "prefetch", err.field
  end
end
