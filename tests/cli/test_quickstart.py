# SPDX-License-Identifier: Apache-2.0
"""The README's Quick start runs as written: its two shell blocks, taken
from README.md, against a fresh `tenq serve` started as `make run` starts
it (the embedded store under ./tenq-data), in a folder where build/ is the
build under test. The only change: the server's port (a free one, not 7070)."""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from harness import BIN, free_port  # noqa: E402

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")


def wait_port(port, proc, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the server exited: %s" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the server did not listen")


def quick_start_blocks():
    text = open(README).read()
    part = text[text.index("## Quick start"):]
    part = part[:part.index("\n## ", 5)]
    return re.findall(r"```sh\n(.*?)```", part, re.S)


class QuickStart(unittest.TestCase):
    def test_the_quick_start_runs_as_written(self):
        blocks = quick_start_blocks()
        self.assertEqual(len(blocks), 2)
        tmp = tempfile.mkdtemp(prefix="tenq-quickstart-")
        os.symlink(os.path.dirname(os.path.abspath(BIN)), os.path.join(tmp, "build"))
        port = free_port()
        log = open(os.path.join(tmp, "server.log"), "w")
        srv = subprocess.Popen(["build/tenq", "serve", "--listen", "127.0.0.1:%d" % port],
                               cwd=tmp, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_port(port, srv)
            env = dict(os.environ, TENQ_SERVER="http://127.0.0.1:%d" % port)
            one = subprocess.run(["bash", "-e", "-c", blocks[0]], cwd=tmp, env=env,
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(one.returncode, 0, one.stdout + one.stderr)
            self.assertRegex(one.stdout, r"state\s+succeeded")
            self.assertRegex(one.stdout, r'result\s+\{"args":\{"report_id":42\},"rows":3\}')
            self.assertRegex(one.stdout, r"waiting\s+tenant acme is paused \(0 slots\)")
            self.assertRegex(one.stdout, r"ready\s+10000")  # the bulk queue, in tenq stats
            two = subprocess.run(["bash", "-e", "-c",
                                  blocks[1].replace("localhost:7070", "localhost:%d" % port)],
                                 cwd=tmp, env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(two.returncode, 0, two.stdout + two.stderr)
            self.assertIn('"queue":"http-demo"', two.stdout)
            self.assertRegex(two.stdout, r'\{"id":\d+,"state":"succeeded"\}')  # the ack
            self.assertIn('"result":{"rows":3}', two.stdout)  # the wait
            self.assertTrue(os.path.exists(os.path.join(tmp, "tenq-data", "tenq.db")))
        finally:
            srv.terminate()
            srv.wait(30)
            log.close()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
