"""A small HTTP/1.1 server of a folder's files with single-range requests (Python's standard library only), for
machines without nginx (the lent GPU machine): 206 with Content-Range for `Range: bytes=a-b`, 416 past the
end, ETag and Last-Modified, If-Match answered 412 when the file changed; connections kept alive. It counts
requests and body bytes (`server.stats`). The CPU suite uses Debian's nginx (tests/data/servers.py).

    server = RangeServer(folder); url = server.start(); ...; server.stop()"""

from __future__ import annotations

import email.utils
import os
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class RangeServer:
    def __init__(self, root):
        self.root = Path(root).resolve()
        self.stats = {"requests": 0, "bytes": 0}
        self._lock = threading.Lock()
        self._httpd = None

    def start(self) -> str:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                with server._lock:
                    server.stats["requests"] += 1
                path = (server.root / urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/")).resolve()
                if server.root not in path.parents or not path.is_file():
                    return self._answer(404, b"")
                st = path.stat()
                etag = f'"{st.st_mtime_ns:x}-{st.st_size:x}"'
                headers = {"ETag": etag, "Last-Modified": email.utils.formatdate(st.st_mtime, usegmt=True),
                           "Accept-Ranges": "bytes"}
                if self.headers.get("If-Match") not in (None, etag):
                    return self._answer(412, b"", headers)
                m = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
                if not m:
                    return self._answer(200, path.read_bytes(), headers)
                start = int(m.group(1))
                end = min(int(m.group(2)) if m.group(2) else st.st_size - 1, st.st_size - 1)
                if start >= st.st_size or end < start:
                    return self._answer(416, b"", dict(headers, **{"Content-Range": f"bytes */{st.st_size}"}))
                with open(path, "rb") as f:
                    f.seek(start)
                    body = f.read(end - start + 1)
                self._answer(206, body, dict(headers, **{"Content-Range": f"bytes {start}-{end}/{st.st_size}"}))

            def _answer(self, status, body, headers=None):
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with server._lock:  # counted before it is sent, so a client holding the body sees it counted
                    server.stats["bytes"] += len(body)
                self.wfile.write(body)

        self._httpd = serve(Handler)
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def stop(self) -> None:
        shutdown(self._httpd)


def serve(handler) -> ThreadingHTTPServer:
    """A threading server of `handler` on a free loopback port, serving from a daemon thread."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def shutdown(httpd) -> None:
    if httpd is not None:
        httpd.shutdown()
        httpd.server_close()


if __name__ == "__main__":
    import sys
    import time

    s = RangeServer(sys.argv[1] if len(sys.argv) > 1 else os.getcwd())
    print(s.start(), flush=True)
    while True:
        time.sleep(3600)
