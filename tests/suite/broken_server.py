"""A deliberately broken agent server for runner tests: python3 broken_server.py MODE PORT.

Modes: hang (reads requests, never answers), huge (answers 8 MiB), notjson (plain text), redirect
(302 everywhere), die (answers /reset then exits on the third request), echo500 (always 500),
chunked (JSON in chunked encoding), close (Connection: close on every answer), eof (no length,
body ends at connection close), idle-close (closes every kept-alive connection after answering,
without saying so).
"""

import http.server
import os
import sys
import time

MODE, PORT = sys.argv[1], int(sys.argv[2])
COUNT = [0]


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_one_request(self):
        COUNT[0] += 1
        if MODE == "die" and COUNT[0] >= 3:
            os._exit(3)
        super().handle_one_request()

    def _do(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if MODE == "hang":
            time.sleep(3600)
        if MODE == "huge":
            body = b"[" + b"1," * (4 << 20) + b"1]"
        elif MODE == "notjson":
            body = b"hello, not json"
        elif MODE == "redirect":
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.1:1/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        elif MODE == "chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b'{"a": ', b"1}"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        elif MODE == "eof":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b'{"a": 1}')
            self.close_connection = True
            return
        else:
            body = b'{"a": 1}'
        self.send_response(500 if MODE == "echo500" else 200)
        if MODE == "close":
            self.send_header("Connection", "close")
            self.close_connection = True
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        if MODE == "idle-close":
            self.close_connection = True

    do_GET = do_POST = do_PATCH = do_DELETE = _do


server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), H)
server.daemon_threads = True
server.serve_forever()
