#!/usr/bin/env python3
"""A loopback HTTP forward proxy for the Hub downloader tests: it proves the downloader goes through the
proxy the environment names (http_proxy), as huggingface_hub's requests does.

Usage:
    python3 forward_proxy.py --port-file PORT_FILE --log LOG_FILE

It listens on 127.0.0.1 at an ephemeral port, written as {"proxy": <port>} to PORT_FILE once it listens.
Each request (an absolute URI, as a client sends to a proxy) is forwarded to its host, the answer streamed
back with its status and headers; one JSON line per request is appended to LOG_FILE:
{"method", "url", "authorization"} (whether an Authorization header passed through).
Plain HTTP only (no CONNECT): the tests' Hub speaks HTTP.
"""

import argparse
import http.client
import json
import os
import signal
import sys
import tempfile
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailers",
              "transfer-encoding", "upgrade"}


class ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _forward(self):
        url = urllib.parse.urlsplit(self.path)
        if url.scheme != "http" or not url.hostname:
            self.send_error(400, "an absolute http:// URI is expected")
            return
        with self.server.log_lock, open(self.server.log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"method": self.command, "url": self.path,
                                  "authorization": self.headers.get("Authorization") is not None}) + "\n")
        upstream = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=60)
        target = url.path + ("?" + url.query if url.query else "")
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        upstream.request(self.command, target, headers=headers)
        answer = upstream.getresponse()
        self.send_response(answer.status, answer.reason)
        length = answer.getheader("Content-Length")
        for k, v in answer.getheaders():
            if k.lower() not in HOP_BY_HOP:
                self.send_header(k, v)
        if length is None and self.command != "HEAD":
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            while True:
                piece = answer.read(1 << 16)
                if not piece:
                    break
                self.wfile.write(piece)
        upstream.close()

    do_GET = _forward
    do_HEAD = _forward


def main(argv=None):
    parser = argparse.ArgumentParser(description="Loopback HTTP forward proxy.")
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer(("127.0.0.1", 0), ProxyHandler)
    server.daemon_threads = True
    server.log_path = args.log
    server.log_lock = threading.Lock()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(args.port_file)), suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"proxy": server.server_address[1]}, f)
    os.replace(tmp, args.port_file)
    while not stop.wait(0.5):
        pass
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
