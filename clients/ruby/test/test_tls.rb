# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"

# https against a real `tenq serve --tls-cert`: certificates made by the test
# (the repository's tests/lib/certs.sh, the openssl command), real
# handshakes. The server's certificate verified against +ca_file+
# (TENQ_CA_FILE); one from an unknown CA refused at once (TlsError); a client
# certificate (mutual TLS) standing for its token, in a client and in a
# worker; one from another CA refused.
class TestTls < TenqTest::Case
  CERTS_SH = File.expand_path("../../../tests/lib/certs.sh", __dir__)
  ADMIN = "ruby-tls-admin-token-0123456789"

  def self.tls
    TenqTest::SHARED[:tls] ||= make_tls
  end

  def self.make_tls
    dir = Dir.mktmpdir("tenq-rb-tls-")
    certs = ->(*args) { system("sh", CERTS_SH, args[0], dir, *args[1..], exception: true) }
    %w[ca other_ca client_ca].each { |ca| certs.call("ca", ca) }
    certs.call("leaf", "srv", "ca", "localhost", "DNS:localhost,IP:127.0.0.1")
    server = TenqTest::Server.new(env: { "TENQ_ADMIN_TOKEN" => ADMIN },
                                  args: ["--tls-cert", "#{dir}/srv.pem", "--tls-key", "#{dir}/srv.key",
                                         "--tls-client-ca", "#{dir}/client_ca.pem"])
    url = "https://localhost:#{server.port}"
    admin = Tenq::Client.new(servers: [url], token: ADMIN, ca_file: "#{dir}/ca.pem")
    worker = admin.request(:post, "/v1/tokens", { role: "worker" })
    certs.call("leaf", "w", "client_ca", "token:#{worker['id']}", "-")
    certs.call("leaf", "foreign", "other_ca", "token:#{worker['id']}", "-")
    TlsSetup.new(dir, server, url, admin)
  end

  TlsSetup = Struct.new(:dir, :server, :url, :admin) do
    def cleanup
      admin.close
      server.cleanup
      FileUtils.rm_rf(dir)
    end
  end

  def tls
    self.class.tls
  end

  def pem(name) = "#{tls.dir}/#{name}.pem"
  def key(name) = "#{tls.dir}/#{name}.key"

  def test_https_with_a_ca_file
    c = client(servers: [tls.url], token: ADMIN, ca_file: pem("ca"))
    h = c.submit(type: "T", args: { "n" => 1 })
    assert_equal "ready", c.job(h.id).state
  end

  def test_the_ca_file_from_the_environment
    ENV["TENQ_CA_FILE"] = pem("ca")
    c = client(servers: [tls.url], token: ADMIN)
    assert_equal "admin", c.request(:get, "/v1/whoami")["role"]
  ensure
    ENV.delete("TENQ_CA_FILE")
  end

  def test_a_server_that_does_not_verify_is_refused_at_once
    [pem("other_ca"), nil].each do |ca|
      c = client(servers: [tls.url], token: ADMIN, ca_file: ca, failover_budget: 15)
      t0 = mono
      e = assert_raises(Tenq::TlsError) { c.request(:get, "/v1/whoami") }
      assert_match(/certificate verify failed/, e.message)
      assert_equal "tls", e.code
      assert_operator mono - t0, :<, 5, "a refused certificate is not retried"
    end
    assert_raises(ArgumentError) { Tenq::Client.new(servers: [tls.url], ca_file: "#{tls.dir}/nope.pem") }
    e = assert_raises(ArgumentError) { Tenq::Client.new(servers: [tls.url], client_cert: pem("w")) }
    assert_match(/both/, e.message)
  end

  def test_a_client_certificate_stands_for_its_token
    c = client(servers: [tls.url], ca_file: pem("ca"), client_cert: pem("w"), client_key: key("w"))
    assert_equal "worker", c.request(:get, "/v1/whoami")["role"]
    assert_raises(Tenq::ForbiddenError) { c.submit(type: "T") }
  end

  def test_a_client_certificate_from_another_ca_is_refused
    c = client(servers: [tls.url], ca_file: pem("ca"), client_cert: pem("foreign"), client_key: key("foreign"))
    e = assert_raises(Tenq::TlsError) { c.request(:get, "/v1/whoami") }
    assert_match(/unknown ca/i, e.message)
  end

  def test_a_worker_with_a_client_certificate
    admin = client(servers: [tls.url], token: ADMIN, ca_file: pem("ca"))
    handles = admin.submit_many(Array.new(5) { |i| { type: "Echo", args: { "i" => i } } })
    wc = client(servers: [tls.url], ca_file: pem("ca"), client_cert: pem("w"), client_key: key("w"))
    w = worker(client: wc) { |r| r.register("Echo", &:args) }
    running(w) do
      assert_equal(Array.new(5) { |i| { "i" => i } }, handles.map { |h| h.wait(timeout: 30) })
    end
  end
end
