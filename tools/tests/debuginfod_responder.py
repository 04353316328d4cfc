#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A debuginfod stand-in that answers badly, for tools/tests/debuginfod-host.sh.

  debuginfod_responder.py PORTFILE ELF_FILE OTHER_ELF

Listens on 127.0.0.1 (a port the kernel picks, written to PORTFILE once it
listens) and answers GET /ANSWER/buildid/ID/{debuginfo,executable}, for
any ID, as the URL's first part says (a client given the URL
http://127.0.0.1:PORT/ANSWER asks there):

  404       404 with the reason "no debug file here (test responder)"
  garbage   200 with bytes that are not ELF
  partial   200 promising 4096 bytes, sending 100, then closing
  head      200 with the first 512 bytes of ELF_FILE (a cut ELF file)
  other     200 with OTHER_ELF whole (an ELF file of another build-id)

Anything else gets a plain 404.  Runs until killed.
"""
import http.server
import os
import sys

REASON = "no debug file here (test responder)"


def main():
    portfile, elf_file, other_elf = sys.argv[1:4]

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
            if len(parts) == 4 and parts[1] == "buildid" and \
                    parts[3] in ("debuginfo", "executable"):
                answer = parts[0]
            if answer == "garbage":
                self.send_bytes(b"this is not an ELF file\n" * 8)
            elif answer == "partial":
                self.send_bytes(b"\x7fELF" + b"\0" * 96, length=4096)
            elif answer == "head":
                with open(elf_file, "rb") as f:
                    self.send_bytes(f.read(512))
            elif answer == "other":
                with open(other_elf, "rb") as f:
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
