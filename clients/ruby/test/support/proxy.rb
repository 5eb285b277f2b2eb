# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "socket"

module TenqTest
  # A loopback HTTP/1.1 proxy in front of a real server, over real sockets:
  # it records every request and answer, and can lose an answer (read from
  # the server, then the client's connection closed at {#release}, as a
  # server that died before answering) and hold the requests after it until
  # then.
  # Bodies carry Content-Length (Net::HTTP's requests, tenq's answers).
  class Proxy
    # +received_at+: the request read whole from the client; +answered_at+:
    # its answer written back (monotonic clock; nil for a lost answer)
    Exchange = Struct.new(:request_line, :headers, :body, :answer_headers, :answer, :lost, :received_at,
                          :answered_at)

    attr_reader :url

    def initialize(upstream_port)
      @upstream_port = upstream_port
      @listener = TCPServer.new("127.0.0.1", 0)
      @url = "http://127.0.0.1:#{@listener.addr[1]}"
      @mutex = Mutex.new
      @released = ConditionVariable.new
      @exchanges = []
      @lose = 0
      @hold = false
      @refused = nil
      @threads = []
      @acceptor = Thread.new { accept_loop }
    end

    # The next +count+ answers are lost: their connections are closed at
    # {#release}, and the requests after them wait for it (then go to
    # +upstream_port+, e.g. a restarted server's).
    def lose_answers(count = 1)
      @mutex.synchronize do
        @lose = count
        @hold = true
      end
    end

    def release(upstream_port = @upstream_port)
      @mutex.synchronize do
        @upstream_port = upstream_port
        @hold = false
        @released.broadcast
      end
    end

    # From now on a request whose JSON body has +field+ is answered as a
    # tenq server that does not know the field answers it (400, the error
    # naming it), as a server of an older version would, and goes no further.
    def refuse_field(field)
      @mutex.synchronize { @refused = field }
    end

    # @return [Array<Exchange>] the requests so far, oldest first
    def exchanges
      @mutex.synchronize { @exchanges.dup }
    end

    def close
      @acceptor.kill
      @listener.close
      @threads.each(&:kill)
    end

    private

    def accept_loop
      loop do
        sock = @listener.accept
        @threads << Thread.new { serve(sock) }
      end
    end

    def serve(sock)
      upstream = nil
      while (request_line, headers, body = read_message(sock))
        received = now
        refusal = refusal_for(body)
        if refusal
          @mutex.synchronize { @exchanges << Exchange.new(request_line, headers, body, {}, refusal, false, received) }
          sock.write("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n" \
                     "Content-Length: #{refusal.bytesize}\r\n\r\n", refusal)
          next
        end
        lose = take_loss
        upstream ||= TCPSocket.new("127.0.0.1", @upstream_port)
        upstream.write(request_line, *headers.map { |k, v| "#{k}: #{v}\r\n" }, "\r\n", body)
        status_line, answer_headers, answer = read_message(upstream) || break
        exchange = Exchange.new(request_line, headers, body, answer_headers.merge(":status" => status_line),
                                answer, lose, received)
        @mutex.synchronize { @exchanges << exchange }
        break hold_lost if lose

        sock.write(status_line, *answer_headers.map { |k, v| "#{k}: #{v}\r\n" }, "\r\n", answer)
        @mutex.synchronize { exchange.answered_at = now }
      end
    rescue IOError, SystemCallError
      nil
    ensure
      sock.close
      upstream&.close
    end

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    # The answer to a request with the refused field in its body, or nil.
    def refusal_for(body)
      field = @mutex.synchronize { @refused }
      return nil unless field && body.start_with?("{") && JSON.parse(body).key?(field)

      JSON.generate("error" => { "code" => "invalid", "message" => "unknown field \"#{field}\"", "field" => field })
    end

    # Whether this request's answer is lost (after waiting for {#release}
    # while answers are held).
    def take_loss
      @mutex.synchronize do
        @released.wait(@mutex) while @hold && @lose.zero?
        next false if @lose.zero?

        @lose -= 1
        true
      end
    end

    def hold_lost
      @mutex.synchronize { @released.wait(@mutex) while @hold }
    end

    # [first line, headers (names lowercased), body], or nil at the end.
    def read_message(io)
      first = io.gets("\r\n") or return nil
      headers = {}
      while (line = io.gets("\r\n")) && line != "\r\n"
        name, value = line.chomp("\r\n").split(":", 2)
        headers[name.downcase] = value.strip
      end
      [first, headers, io.read(headers.fetch("content-length", "0").to_i)]
    end
  end
end
