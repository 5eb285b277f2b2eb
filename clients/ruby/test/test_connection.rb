# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"
require "socket"

# The transport's own HTTP/1.1 connection against canned answers: what a
# tenq server does not send but a proxy in front of one may (chunked
# bodies, an answer read until the server closes, HTTP/1.0, 100 Continue).
class TestConnection < Minitest::Test
  def setup
    @listener = TCPServer.new("127.0.0.1", 0)
    @url = "http://127.0.0.1:#{@listener.addr[1]}"
    @requests = Queue.new
  end

  def teardown
    @thread&.kill
    @listener.close
  end

  # Answers each request on one connection with the next of +answers+
  # (raw text), then closes it.
  def serve(*answers)
    @thread = Thread.new do
      sock = @listener.accept
      answers.each do |answer|
        @requests << read_request(sock)
        sock.write(answer)
      end
      sock.close
    end
  end

  def read_request(sock)
    head = +""
    head << sock.readpartial(4096) until head.include?("\r\n\r\n")
    length = head[/^content-length: *(\d+)/i, 1].to_i
    body = head.split("\r\n\r\n", 2)[1]
    body << sock.readpartial(4096) while body.bytesize < length
    [head, body]
  end

  def transport
    Tenq::Transport.new(servers: [@url], failover_budget: 0, request_timeout: 5)
  end

  def test_chunked_and_keep_alive
    serve("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n",
          "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"b\":2}")
    t = transport
    assert_equal({ "a" => 1 }, t.call("POST", "/x", "{\"q\":1}"))
    assert_equal({ "b" => 2 }, t.call("GET", "/y"), "the second request on the same connection")
    head, body = @requests.pop
    assert_match(%r{\APOST /x HTTP/1.1\r\nHost: 127.0.0.1:\d+\r\n}, head)
    assert_match(/^Content-Length: 7\r$/, head)
    assert_equal "{\"q\":1}", body
    assert_match(%r{\AGET /y HTTP/1.1\r\n}, @requests.pop[0])
  ensure
    t&.close
  end

  def test_an_answer_until_close_and_http10
    serve("HTTP/1.0 200 OK\r\n\r\n{\"c\":3}")
    t = transport
    assert_equal({ "c" => 3 }, t.call("GET", "/z"))
  ensure
    t&.close
  end

  def test_interim_answer_and_error_status
    error = JSON.generate("error" => { "code" => "not_found", "message" => "gone" })
    serve("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: #{error.bytesize}\r\n\r\n#{error}")
    e = assert_raises(Tenq::NotFoundError) { transport.call("GET", "/j") }
    assert_equal "gone", e.message
  end

  # A server that answers from the head alone (413) and closes while the
  # body is still on its way: its answer is read, not the broken write.
  def test_an_early_answer_to_a_body_too_large
    error = JSON.generate("error" => { "code" => "too_large", "message" => "the body is too large" })
    @thread = Thread.new do
      sock = @listener.accept
      head = +""
      head << sock.readpartial(4096) until head.include?("\r\n\r\n")
      sock.write("HTTP/1.1 413 Content Too Large\r\nContent-Length: #{error.bytesize}\r\n" \
                 "Connection: close\r\n\r\n#{error}")
      sleep 0.05
      sock.close
    end
    e = assert_raises(Tenq::TooLargeError) { transport.call("POST", "/v1/jobs", "x" * 32_000_000) }
    assert_equal "the body is too large", e.message
  end

  def test_a_header_value_cannot_break_the_request
    serve
    assert_raises(ArgumentError) { transport.call("GET", "/h", nil, headers: { "X-A" => "1\r\nX-B: 2" }) }
  end
end
