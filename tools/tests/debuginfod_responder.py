#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A debuginfod stand-in that answers badly, for tools/tests/debuginfod-host.sh.

  debuginfod_responder.py PORTFILE BUILDID=ANSWER...

Listens on 127.0.0.1 (a port the kernel picks, written to PORTFILE once it
listens) and answers GET /buildid/BUILDID/{debuginfo,executable} as told:

  404         404 with the reason "no debug file here (test responder)"
  garbage     200 with bytes that are not ELF
  partial     200 promising 4096 bytes, sending 100, then closing
  head:PATH   200 with the first 512 bytes of PATH (a cut ELF file)
  file:PATH   200 with PATH whole (an ELF file of another build-id)

Any other request gets a plain 404.  Runs until killed.
"""
import http.server
import os
import sys

REASON = "no debug file here (test responder)"


def main():
    portfile, answers = sys.argv[1], {}
    for arg in sys.argv[2:]:
        bid, answer = arg.split("=", 1)
        answers[bid] = answer

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def send_bytes(self, data, length=None):
            self.send_response(200)
            self.send_header("Content-Length", str(len(data) if length is None else length))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            parts = self.path.strip("/").split("/")
            answer = None
            if len(parts) == 3 and parts[0] == "buildid" and \
                    parts[2] in ("debuginfo", "executable"):
                answer = answers.get(parts[1])
            if answer == "garbage":
                self.send_bytes(b"this is not an ELF file\n" * 8)
            elif answer == "partial":
                self.send_bytes(b"\x7fELF" + b"\0" * 96, length=4096)
            elif answer and answer.startswith("head:"):
                with open(answer[5:], "rb") as f:
                    self.send_bytes(f.read(512))
            elif answer and answer.startswith("file:"):
                with open(answer[5:], "rb") as f:
                    self.send_bytes(f.read())
            else:
                self.send_error(404, REASON if answer == "404" else None)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    tmp = portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(tmp, portfile)
    server.serve_forever()


if __name__ == "__main__":
    main()
