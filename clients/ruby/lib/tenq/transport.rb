# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "json"
require "net/http"
require "openssl"
require "uri"
require_relative "connection"

module Tenq
  # HTTP/1.1 to one or several tenq servers: keep-alive connections in a
  # small pool per server (thread-safe), failover between servers, the
  # leader's redirects, and the typed errors of the protocol.
  #
  # A request goes to the server that answered last. On a 307 or a 503
  # not_leader naming the leader, it goes to the leader (added to the list
  # when new) at once. On a connection failure or any other 503 it goes to
  # the next server; after a round of the list it sleeps a backoff (50 ms
  # doubling to 1 s, or the Retry-After asked for) and tries again, until
  # the failover budget runs out. A request whose connection broke after it
  # was sent is sent again only when +retry_safe+ (reads, submits with their
  # Idempotency-Key header, calls fenced by a lease token, cancel); a 503
  # means the server changed nothing, so anything is sent again after one.
  # Every attempt of a call sends the same body and headers.
  class Transport
    # Failures before anything was sent.
    CONNECT_ERRORS = [Errno::ECONNREFUSED, Errno::EHOSTUNREACH, Errno::ENETUNREACH, Errno::EADDRNOTAVAIL,
                      Errno::ENOENT, Net::OpenTimeout, SocketError].freeze
    # Failures after the request may have reached the server.
    BROKEN_ERRORS = [Errno::ECONNRESET, Errno::EPIPE, Errno::ECONNABORTED, Errno::ETIMEDOUT, EOFError, IOError,
                     Net::WriteTimeout].freeze
    MAX_REDIRECTS = 5
    MAX_IDLE = 8
    BACKOFF_FIRST = 0.05
    BACKOFF_MAX = 1.0
    USER_AGENT = "tenq-ruby/#{VERSION}".freeze

    # @return [Float] seconds a call keeps trying other servers
    attr_reader :failover_budget

    # @param servers [Array<String>] base URLs ("http://host:port", "https://...")
    # @param tls [Hash, nil] https: +:ca_file+ (PEM CAs trusted instead of the
    #   system's), +:cert_file+ and +:key_file+ (a client certificate)
    def initialize(servers:, token: nil, connect_timeout: 5.0, request_timeout: 30.0, failover_budget: 15.0,
                   tls: nil)
      raise ArgumentError, "no server URL" if servers.empty?

      @tls = self.class.tls_params(tls || {})
      @servers = servers.map { |s| self.class.base_url(s) }.uniq
      @token = token
      @connect_timeout = connect_timeout
      @request_timeout = request_timeout
      @failover_budget = failover_budget
      @current = 0
      @resent = 0
      @idle = Hash.new { |h, k| h[k] = [] }
      @mutex = Mutex.new
      @headers = { "Content-Type" => "application/json", "Accept" => "application/json",
                   "Accept-Encoding" => "identity", "User-Agent" => USER_AGENT }
      @headers["Authorization"] = "Bearer #{token}" if token
      @headers.freeze
    end

    # Net::HTTP's TLS settings from the files, read now (a bad one is told
    # at once, as an ArgumentError naming it).
    # @return [Hash{Symbol => Object}]
    def self.tls_params(tls)
      ca, cert, key = tls.values_at(:ca_file, :cert_file, :key_file)
      raise ArgumentError, "a client certificate needs both its certificate and its key file" if !cert != !key

      out = {}
      if ca
        out[:cert_store] = OpenSSL::X509::Store.new.tap { |s| s.add_file(ca) } # only these CAs
      end
      if cert
        out[:cert] = OpenSSL::X509::Certificate.new(File.read(cert))
        out[:key] = OpenSSL::PKey.read(File.read(key))
      end
      out.freeze
    rescue SystemCallError, OpenSSL::OpenSSLError => e
      raise ArgumentError, "TLS files (ca_file #{ca.inspect}, client_cert #{cert.inspect}): #{e.message}"
    end

    # "http://host:port" from a URL (a path or a trailing slash is dropped).
    # @return [String]
    def self.base_url(url)
      u = URI.parse(url.to_s.strip)
      raise ArgumentError, "bad server URL #{url.inspect}: use http://host:port" unless u.is_a?(URI::HTTP) && u.host

      "#{u.scheme}://#{u.host.include?(':') ? "[#{u.host}]" : u.host}:#{u.port}"
    rescue URI::InvalidURIError => e
      raise ArgumentError, "bad server URL #{url.inspect}: #{e.message}"
    end

    # The JSON object of a 2xx answer's text (+from+ names the server in
    # the error). +freeze+: frozen, each string kept once (a bulk submit's
    # answer repeats "state": "ready" ten thousand times).
    # @return [Hash]
    # @raise [ProtocolError] not a JSON object
    def self.parse(text, from = "the server", freeze: false)
      return {} if text.empty?

      data = JSON.parse(text, freeze: freeze)
      raise ProtocolError, "the answer from #{from} is not a JSON object" unless data.is_a?(Hash)

      data
    rescue JSON::ParserError => e
      raise ProtocolError, "the answer from #{from} is not JSON: #{e.message[0, 120]}"
    end

    # The servers, the one tried first at the front.
    # @return [Array<String>]
    def servers
      @mutex.synchronize { @servers.rotate(@current) }
    end

    # @return [Integer] how many times a request was sent again (to the
    #   same server, another one, or the leader)
    def resent
      @mutex.synchronize { @resent }
    end

    # Sends METHOD path (with its query) and a JSON body text, and returns
    # the answer's JSON (a Hash). +wait+ (seconds) is a long poll's wait,
    # added to the request timeout; +headers+ are added to every attempt's.
    # +raw+: the text of a 2xx answer is returned as it came, unparsed
    # ({.parse} reads it later; a bulk submit sends its next request first).
    # +sent+ is called when a request is written, at each attempt.
    # @return [Hash, String]
    def call(method, path, body = nil, retry_safe: true, wait: 0, headers: nil, raw: false, sent: nil)
      state = { deadline: now + @failover_budget, backoff: BACKOFF_FIRST, tried: 0, redirects: 0, failures: [] }
      headers = headers ? @headers.merge(headers) : @headers
      loop do
        base = current_server
        outcome = attempt(base, [method, path, body, headers, raw, sent], wait, retry_safe)
        return outcome unless outcome.is_a?(Array)

        next_attempt(state, base, outcome)
        @mutex.synchronize { @resent += 1 }
      end
    end

    # Closes every kept connection.
    # @return [void]
    def close
      conns = @mutex.synchronize do
        all = @idle.values.flatten
        @idle.clear
        all
      end
      conns.each { |h| finish(h) }
    end

    private

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    def current_server
      @mutex.synchronize { @servers[@current] }
    end

    # One request to one server: the answer (a Hash), or why to go on
    # ([:redirect, leader], [:retry, reason, retry_after]). Raises what ends
    # the call.
    def attempt(base, request, wait, retry_safe)
      http = checkout(base)
    rescue *CONNECT_ERRORS => e
      [:retry, "#{base} (#{describe(e)})", nil, nil]
    rescue OpenSSL::SSL::SSLError => e
      # a certificate refused, either way: trying again would not cure it
      raise TlsError, "TLS with #{base} failed: #{e.message}"
    else
      exchange(http, base, request, wait, retry_safe)
    end

    def exchange(http, base, request, wait, retry_safe)
      method, path, body, headers, raw, sent = request
      kept = false
      begin
        res = http.request(method, path, body, headers, @request_timeout + wait, sent)
        kept = res.keep
        answer(res, base, raw)
      rescue OpenSSL::SSL::SSLError => e
        # TLS 1.3: a client certificate the server refuses is told by an
        # alert where the answer was to be
        raise TlsError, "#{base} refused the TLS connection: #{e.message}"
      rescue *CONNECT_ERRORS => e
        [:retry, "#{base} (#{describe(e)})", nil, nil]
      rescue *BROKEN_ERRORS => e
        unless retry_safe
          raise ConnectionError, "lost the connection to #{base} during #{method} #{path}: #{describe(e)}"
        end

        [:retry, "#{base} (connection broke: #{describe(e)})", nil, nil]
      rescue Net::ReadTimeout
        limit = (@request_timeout + wait).round(1)
        raise TimeoutError, "no answer from #{base} to #{method} #{path} within #{limit} s" unless retry_safe

        [:retry, "#{base} (no answer within #{limit} s)", nil, nil]
      ensure
        kept ? checkin(base, http) : finish(http)
      end
    end

    # A Hash for 2xx (its text when +raw+); [:redirect, leader] or [:retry,
    # ...] to go on; raises the server's error otherwise.
    def answer(res, base, raw)
      status = res.status
      return raw ? res.body : self.class.parse(res.body, base) if status.between?(200, 299)
      return redirect(res, base) if [307, 308].include?(status)

      error = server_error(res, status, base)
      if status == 503
        leader = error.is_a?(NotLeaderError) && leader_from(res)
        return [:redirect, leader, error] if leader && leader != base

        return [:retry, "#{base} (#{error.message})", error.retry_after, error]
      end
      raise error
    end

    def redirect(res, base)
      leader = res["Tenq-Leader"] || res["Location"]
      raise ProtocolError, "#{base} answered #{res.status} without Tenq-Leader or Location" unless leader

      [:redirect, self.class.base_url(leader), nil]
    rescue ArgumentError
      raise ProtocolError, "#{base} redirected to a bad URL: #{leader.inspect}"
    end

    def leader_from(res)
      data = JSON.parse(res.body.to_s)
      url = data.dig("error", "leader") if data.is_a?(Hash)
      url && self.class.base_url(url)
    rescue JSON::ParserError, ArgumentError
      nil
    end

    def server_error(res, status, base)
      data = begin
        JSON.parse(res.body.to_s)
      rescue JSON::ParserError
        nil
      end
      e = data.is_a?(Hash) && data["error"].is_a?(Hash) ? data["error"] : {}
      code = e["code"]
      message = e["message"] || "HTTP #{status} from #{base}: #{res.body.to_s[0, 200].gsub(/\s+/, ' ')}"
      message = "#{message} (field #{e['field']})" if e["field"] && status == 400 && !message.include?(e["field"])
      Error.for(code, status).new(message, status: status, code: code, field: e["field"],
                                           retry_after: retry_after(res))
    end

    def retry_after(res)
      v = res["Retry-After"]
      v && Float(v, exception: false)&.clamp(0, 60)
    end

    # Moves on after a failed attempt, or raises when the budget is spent.
    def next_attempt(state, base, outcome)
      kind, detail, _wait, error = outcome
      if kind == :redirect
        state[:redirects] += 1
        return use_leader(detail) if state[:redirects] <= MAX_REDIRECTS

        outcome = [:retry, "#{base} (more than #{MAX_REDIRECTS} redirects)", nil, error]
      end
      fail_over(state, base, outcome)
    end

    def fail_over(state, base, outcome)
      _, why, wait, error = outcome
      state[:failures] << why
      state[:last_error] = error
      state[:tried] += 1
      advance(base)
      return if state[:tried] < server_count

      state[:tried] = 0
      pause = [state[:backoff], wait || 0].max
      state[:backoff] = [state[:backoff] * 2, BACKOFF_MAX].min
      left = state[:deadline] - now
      give_up(state) if left <= 0
      sleep([pause, left].min)
    end

    def give_up(state)
      last = state[:last_error]
      raise last if last

      tried = state[:failures].uniq.last(4).join(", ")
      raise ConnectionError, "cannot reach a tenq server within #{@failover_budget} s: #{tried}"
    end

    def server_count
      @mutex.synchronize { @servers.size }
    end

    def advance(base)
      @mutex.synchronize do
        i = @servers.index(base)
        @current = (i + 1) % @servers.size if i && @servers[@current] == base
      end
    end

    def use_leader(leader)
      @mutex.synchronize do
        @servers << leader unless @servers.include?(leader)
        @current = @servers.index(leader)
      end
    end

    # A kept connection to the server, or a new one: a {Connection} for
    # http:// ({NetConnection}, through Net::HTTP, for https:// and for a
    # proxy in the environment, as before).
    def checkout(base)
      while (conn = @mutex.synchronize { @idle[base].pop })
        return conn unless conn.stale?

        finish(conn)
      end
      uri = URI.parse(base)
      if uri.scheme == "https" || uri.find_proxy
        NetConnection.new(uri, connect_timeout: @connect_timeout, write_timeout: @request_timeout, tls: @tls)
      else
        Connection.new(uri, connect_timeout: @connect_timeout, write_timeout: @request_timeout)
      end
    end

    def checkin(base, http)
      extra = @mutex.synchronize do
        list = @idle[base]
        list.size < MAX_IDLE ? (list << http) && nil : http
      end
      finish(extra) if extra
    end

    def finish(conn)
      conn.close
    rescue IOError, SystemCallError
      nil
    end

    def describe(error)
      case error
      when Errno::ECONNREFUSED then "connection refused"
      when Net::OpenTimeout then "connect timed out after #{@connect_timeout} s"
      when EOFError then "the server closed the connection"
      else error.message
      end
    end
  end
end
