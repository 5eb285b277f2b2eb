# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require "io/wait"
require "net/http"
require "socket"

module Tenq
  class Transport
    # @api private: an answer as a connection read it. +headers+ has
    # lower-case names; +keep+ says whether the connection may be used again.
    Response = Struct.new(:status, :headers, :body, :keep) do
      def [](name)
        headers[name.downcase]
      end
    end

    # @api private: one kept-alive HTTP/1.1 connection to a plain http://
    # server, written for speed: a request is one write, an answer is read
    # in 64 KiB reads into one buffer. (Net::HTTP reads in 16 KiB pieces and
    # makes some 300 objects a request: a worker's lease of 250 jobs cost
    # 285 us of CPU there, 65 us here, and the leaser, the reporter and the
    # handlers share one interpreter lock.) Answers come with Content-Length,
    # chunked, or until the server closes. Timeouts raise Net::OpenTimeout,
    # Net::ReadTimeout and Net::WriteTimeout, as Net::HTTP's, for
    # {Transport} to sort.
    class Connection
      READ_SIZE = 65_536
      IDLE_MAX = 30 # seconds a kept connection may idle before it is replaced, as Net::HTTP's keep_alive_timeout
      NO_BODY = %w[HEAD].freeze
      STATUS_LINE = %r{\AHTTP/(\d)\.(\d) (\d\d\d)}

      def initialize(uri, connect_timeout:, write_timeout:)
        @host = "#{uri.host}:#{uri.port}" # the Host header: an IPv6 address stays in brackets
        @sock = connect(uri.hostname, uri.port, connect_timeout)
        @write_timeout = write_timeout
        @buf = String.new(encoding: Encoding::BINARY)
        @chunk = String.new(capacity: READ_SIZE, encoding: Encoding::BINARY)
        @used_at = now
      end

      # Sends a request and reads its answer; +sent+ is called once the
      # request is written.
      # @return [Response]
      def request(method, path, body, headers, read_timeout, sent = nil)
        head = +"#{method} #{path} HTTP/1.1\r\nHost: #{@host}\r\n"
        headers.each do |name, value|
          value = value.to_s
          if value.include?("\r") || value.include?("\n")
            raise ArgumentError, "header #{name}: a value cannot hold CR or LF"
          end

          head << name << ": " << value << "\r\n"
        end
        if body
          head << "Content-Length: " << body.bytesize.to_s << "\r\n\r\n" << body
        else
          head << (%w[GET HEAD].include?(method) ? "\r\n" : "Content-Length: 0\r\n\r\n")
        end
        write_all(head)
        sent&.call
        response = read_response(method, read_timeout)
        @used_at = now
        response
      rescue Errno::EPIPE, Errno::ECONNRESET => e
        early_answer(method, e)
      end

      # Whether a kept connection must not be used again: it idled too
      # long, or the server closed it (or sent something unasked) since.
      def stale?
        now - @used_at > IDLE_MAX || !@buf.empty? || @sock.wait_readable(0) ? true : false
      rescue IOError, SystemCallError
        true
      end

      def close
        @sock.close unless @sock.closed?
      end

      private

      def now
        Process.clock_gettime(Process::CLOCK_MONOTONIC)
      end

      def connect(host, port, timeout)
        sock = Socket.tcp(host, port, connect_timeout: timeout)
        sock.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1)
        sock
      rescue Errno::ETIMEDOUT
        raise Net::OpenTimeout, "connect to #{host}:#{port} timed out"
      end

      # A server may answer before it has read the whole request (413, the
      # body is too large) and close: what it said is read if it came, else
      # the write's error stands.
      def early_answer(method, error)
        raise error unless @sock.wait_readable(0)

        response = read_response(method, 1)
        response.keep = false
        response
      rescue IOError, SystemCallError, Net::ReadTimeout, ProtocolError
        raise error
      end

      def write_all(data)
        loop do
          n = @sock.write_nonblock(data, exception: false)
          if n == :wait_writable
            next if @sock.wait_writable(@write_timeout)

            raise Net::WriteTimeout, "no room to write within #{@write_timeout} s"
          else
            return if n == data.bytesize

            data = data.byteslice(n, data.bytesize - n)
          end
        end
      end

      # Reads more bytes into the buffer; EOFError when the server closed.
      def fill(timeout)
        loop do
          got = @sock.read_nonblock(READ_SIZE, @chunk, exception: false)
          if got == :wait_readable
            raise Net::ReadTimeout, "no answer within #{timeout} s" unless @sock.wait_readable(timeout)
          else
            raise EOFError, "end of file reached" if got.nil?

            return @buf << got
          end
        end
      end

      # The first +n+ bytes of the buffer, taken out of it.
      def take(count)
        return @buf.slice!(0, count) unless count == @buf.bytesize

        whole = @buf
        @buf = String.new(encoding: Encoding::BINARY)
        whole
      end

      def read_response(method, timeout)
        loop do
          status, headers, keep = read_head(timeout)
          next if status.between?(100, 199) # an interim answer (100 Continue): the real one follows

          body, keep = read_body(method, status, headers, keep, timeout)
          return Response.new(status, headers, body, keep)
        end
      end

      # The status, the headers and whether the connection stays open.
      def read_head(timeout)
        fill(timeout) until (ends = @buf.index("\r\n\r\n"))
        lines = take(ends + 4).split("\r\n")
        m = STATUS_LINE.match(lines.shift.to_s)
        raise ProtocolError, "the server's answer is not HTTP/1.x" unless m

        headers = {}
        lines.each do |line|
          name, value = line.split(":", 2)
          next unless value

          key = name.strip.downcase
          value = value.strip
          headers[key] = headers.key?(key) ? "#{headers[key]}, #{value}" : value
        end
        [m[3].to_i, headers, keep_alive?(m[1] == "1" && m[2] == "0", headers["connection"])]
      end

      def keep_alive?(http10, connection)
        tokens = connection.to_s.downcase
        return false if tokens.include?("close")

        !http10 || tokens.include?("keep-alive")
      end

      def read_body(method, status, headers, keep, timeout)
        return ["".b, keep] if NO_BODY.include?(method) || status == 204 || status == 304
        return [read_chunked(timeout), keep] if headers["transfer-encoding"].to_s.downcase.include?("chunked")

        length = headers["content-length"]
        return [read_to_close(timeout), false] unless length

        count = Integer(length, 10, exception: false)
        raise ProtocolError, "bad Content-Length #{length.inspect[0, 40]}" unless count && count >= 0

        fill(timeout) while @buf.bytesize < count
        [take(count), keep]
      end

      def read_chunked(timeout)
        body = String.new(encoding: Encoding::BINARY)
        loop do
          size = Integer(read_line(timeout)[/\A\h+/] || "x", 16, exception: false)
          raise ProtocolError, "bad chunk size in the server's answer" unless size
          break if size.zero?

          fill(timeout) while @buf.bytesize < size + 2
          body << take(size)
          take(2)
        end
        nil until read_line(timeout).empty? # the trailer
        body
      end

      def read_line(timeout)
        fill(timeout) until (ends = @buf.index("\r\n"))
        take(ends + 2).chomp!("\r\n")
      end

      def read_to_close(timeout)
        loop { fill(timeout) }
      rescue EOFError
        take(@buf.bytesize)
      end
    end

    # @api private: a connection through Net::HTTP, for what {Connection}
    # does not do: https:// servers and servers reached through a proxy
    # (http_proxy in the environment).
    class NetConnection
      def initialize(uri, connect_timeout:, write_timeout:, tls: {})
        @http = Net::HTTP.new(uri.host, uri.port)
        @http.use_ssl = uri.scheme == "https"
        if @http.use_ssl?
          @http.verify_mode = OpenSSL::SSL::VERIFY_PEER
          tls.each { |k, v| @http.public_send(:"#{k}=", v) } # cert_store, cert, key
        end
        @http.open_timeout = connect_timeout
        @http.write_timeout = write_timeout
        @http.keep_alive_timeout = Connection::IDLE_MAX
        @http.max_retries = 0
        @http.start
      end

      # @return [Response]
      def request(method, path, body, headers, read_timeout, sent = nil)
        sent&.call # (Net::HTTP writes and reads in one call)
        @http.read_timeout = read_timeout
        res = @http.send_request(method, path, body, headers)
        names = {}
        res.each_header { |name, value| names[name] = value } # lower-case names, repeated ones joined
        Response.new(res.code.to_i, names, res.body.to_s, res["Connection"].to_s.downcase != "close")
      end

      # Net::HTTP looks for a closed connection itself.
      def stale?
        false
      end

      def close
        @http.finish if @http.started?
      end
    end
  end
end
