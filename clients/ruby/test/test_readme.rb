# SPDX-License-Identifier: Apache-2.0
# frozen_string_literal: true

require_relative "test_helper"
require_relative "support/gem_home"
require "open3"

# The README's quick start, run as written: its commands and files, taken
# from the README (so that a README that drifts fails here), against a real
# server named by TENQ_SERVER (the README's `make run` server is the default
# address, 127.0.0.1:7070), from a clean copy of this folder, with the gem
# installed into a temporary GEM_HOME whose bin is on PATH (as root's gems
# go to /var/lib/gems, their commands to /usr/local/bin).
class TestReadme < TenqTest::Case
  ROOT = TenqTest::GemHome::ROOT

  def quick_start_blocks
    text = File.read(File.join(ROOT, "README.md"))
    section = text[/^## Five-minute quick start\n(.*?)^## /m, 1] or flunk "no quick start section"
    section.scan(/^ *```(sh|ruby)\n(.*?)^ *```/m).map { |lang, code| [lang, code.gsub(/^ {3}/, "")] }
  end

  def test_the_quick_start_runs_as_written
    blocks = quick_start_blocks
    assert_equal %w[sh ruby sh sh], blocks.map(&:first)
    install, ruby, work, call = blocks.map(&:last)
    gems = TenqTest::GemHome.new(server.url)
    gems.sh(install, gems.src)
    app = gems.app_dir
    File.write(File.join(app, "data_report.rb"), ruby)
    worker_log = File.join(gems.dir, "worker.log")
    pid = Process.spawn(gems.env, "sh", "-c", "exec #{work.strip}", chdir: app, out: worker_log, err: worker_log)
    begin
      out = gems.sh(call, app)
      lines = out.lines.map(&:strip)
      assert_equal '{"report_id"=>7, "format"=>"pdf", "rows"=>42}', lines[0]
      assert_match(/\A\d+\z/, lines[1])
      assert_equal '{"format"=>"csv", "report_id"=>42, "rows"=>42}', lines[2]
      Process.kill("INT", pid) # Ctrl-C
      _, status = Process.wait2(pid)
      pid = nil
      assert status.success?, "the worker's exit after Ctrl-C: #{File.read(worker_log)}"
    ensure
      if pid
        Process.kill("KILL", pid)
        Process.wait(pid)
      end
      gems.cleanup
    end
  end
end
