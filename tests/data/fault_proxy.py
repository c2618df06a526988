"""A small HTTP proxy that injects faults between a reader and an upstream server (nginx in the tests), for
testing and benchmarking remote reads:

    python tests/data/fault_proxy.py UPSTREAM_URL PORT_FILE [--latency-ms N] [--drop-every N]
        [--truncate-every N] [--burst-503 N] [--burst-every N]

It listens on 127.0.0.1 (a free port, written to PORT_FILE), forwards GET requests (with their Range,
If-Match and If-Unmodified-Since headers) and injects, per request count:
- latency: every response waits N ms before its first byte (each request: a round trip);
- drop: every Nth request's connection is closed without an answer;
- truncate: every Nth response announces its full length and sends half the body, then closes;
- 503 bursts: every `burst_every` requests, `burst_503` consecutive requests are answered 503;
- authentication: with --require-bearer TOKEN, a request without "Authorization: Bearer TOKEN" is 401.
GET /__stats answers JSON counts: requests, bytes of bodies sent, faults injected. It runs in its own
process (the reader under test may hold the interpreter's lock while it waits for the network)."""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import socket
import socketserver
import threading
import time
import urllib.parse

FORWARDED = ("Range", "If-Match", "If-Unmodified-Since", "If-None-Match", "Authorization", "Accept")
RETURNED = ("Content-Type", "Content-Range", "ETag", "Last-Modified", "Accept-Ranges")


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.bytes = 0
        self.faults = {"dropped": 0, "truncated": 0, "503": 0}

    def next(self) -> int:
        with self.lock:
            self.requests += 1
            return self.requests


def make_handler(upstream: urllib.parse.ParseResult, args, stats: Stats):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):  # quiet
            pass

        def setup(self):
            super().setup()
            # Headers and body leave in separate writes: without this, Nagle's algorithm holds the body until
            # the client's delayed ACK (40 ms), which would be measured as latency.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_GET(self):
            if self.path == "/__stats":
                body = json.dumps({"requests": stats.requests, "bytes": stats.bytes, **stats.faults}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            n = stats.next()
            if args.require_bearer and self.headers.get("Authorization") != f"Bearer {args.require_bearer}":
                self.send_response(401)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if args.latency_ms:
                time.sleep(args.latency_ms / 1000)
            if args.drop_every and n % args.drop_every == 0:
                stats.faults["dropped"] += 1
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if args.burst_every and (n % args.burst_every) < args.burst_503:
                stats.faults["503"] += 1
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=30)
            headers = {k: self.headers[k] for k in FORWARDED if self.headers.get(k)}
            conn.request("GET", upstream.path.rstrip("/") + self.path, headers=headers)
            r = conn.getresponse()
            body = r.read()
            conn.close()
            self.send_response(r.status)
            for k in RETURNED:
                if r.getheader(k):
                    self.send_header(k, r.getheader(k))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if args.truncate_every and n % args.truncate_every == 0 and len(body) > 1:
                stats.faults["truncated"] += 1
                self.wfile.write(body[: len(body) // 2])
                self.close_connection = True
                return
            # Counted before it is sent: a client that has the whole body then reads a count that includes it
            # (counted after, the next request's measurement could take in this one's bytes).
            with stats.lock:
                stats.bytes += len(body)
            self.wfile.write(body)

    return Handler


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("upstream")
    ap.add_argument("port_file")
    ap.add_argument("--latency-ms", type=float, default=0)
    ap.add_argument("--drop-every", type=int, default=0)
    ap.add_argument("--truncate-every", type=int, default=0)
    ap.add_argument("--burst-503", type=int, default=0)
    ap.add_argument("--burst-every", type=int, default=0)
    ap.add_argument("--require-bearer", default="", help="answer 401 to requests without this bearer token")
    args = ap.parse_args()
    server = Server(("127.0.0.1", 0), make_handler(urllib.parse.urlparse(args.upstream), args, Stats()))
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os

    os.replace(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
