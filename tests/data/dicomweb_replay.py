"""Answers a real DICOMweb server gave, recorded and served again (Python's standard library only), for machines
without Orthanc (the lent GPU machine): `record` asks a server (Orthanc in scripts/gpu/prepare.sh) for a
series' QIDO-RS instance list, its WADO-RS metadata and every frame of every instance (as stored), and keeps
them in a folder; `ReplayServer` answers the same requests from that folder: the lists and metadata as
recorded (the recording server's address replaced by its own), frames as multipart/related bodies of the
recorded frames in the order asked, each part with its recorded Content-Type. It counts requests
(`server.stats`). The CPU suite talks to Orthanc itself (tests/python/orthanc_server.py).

    record("http://127.0.0.1:8042/dicom-web/studies/S/series/R", folder)
    server = ReplayServer(folder); url = server.start()  # url: the series' URL on this server
    ...; server.stop()"""

from __future__ import annotations

import json
import re
import threading
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from range_server import serve, shutdown

ANY_STORED = 'multipart/related; type="application/octet-stream"; transfer-syntax=*'


def record(series_url: str, folder) -> None:
    """Keeps the series' instance list, metadata and frames (as the server stores them) under `folder`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    base = series_url[:series_url.index("/studies/")]
    get = lambda url, accept: urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": accept}), timeout=60)  # noqa: E731
    instances = get(series_url + "/instances", "application/dicom+json").read()
    metadata = get(series_url + "/metadata", "application/dicom+json").read()
    (folder / "series.json").write_text(json.dumps({"base": base, "path": series_url[len(base):]}))
    (folder / "instances.json").write_bytes(instances)
    (folder / "metadata.json").write_bytes(metadata)
    for item in json.loads(metadata):
        uid = item["00080018"]["Value"][0]
        for n in range(1, int(item.get("00280008", {}).get("Value", [1])[0]) + 1):
            with get(f"{series_url}/instances/{uid}/frames/{n}", ANY_STORED) as r:
                body, kind = r.read(), r.headers["Content-Type"]
            boundary = re.search(r'boundary="?([^";]+)', kind).group(1).encode()
            part = body.split(b"--" + boundary)[1]
            head, data = part.split(b"\r\n\r\n", 1)
            part_type = re.search(rb"Content-Type: ([^\r\n]+)", head).group(1).decode()
            (folder / f"{uid}-{n}.frame").write_bytes(data[:-2])  # less the CRLF before the next boundary
            (folder / f"{uid}.type").write_text(part_type)


class ReplayServer:
    def __init__(self, folder):
        self.folder = Path(folder)
        recorded = json.loads((self.folder / "series.json").read_text())
        self.recorded_base, self.path = recorded["base"], recorded["path"]
        self.stats = {"requests": 0}
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
                path = self.path.split("?")[0]
                base = f"http://127.0.0.1:{server._httpd.server_address[1]}"
                if path == server.path + "/instances" or path == server.path + "/metadata":
                    name = "instances.json" if path.endswith("/instances") else "metadata.json"
                    text = (server.folder / name).read_text().replace(server.recorded_base, base)
                    return self._answer(200, text.encode(), "application/dicom+json")
                m = re.fullmatch(re.escape(server.path) + r"/instances/([0-9.]+)/frames/([0-9,]+)", path)
                if not m:
                    return self._answer(404, b"", "text/plain")
                uid, numbers = m.group(1), m.group(2).split(",")
                frames = [server.folder / f"{uid}-{n}.frame" for n in numbers]
                if not all(f.is_file() for f in frames):
                    return self._answer(404, b"", "text/plain")
                part_type = (server.folder / f"{uid}.type").read_text()
                boundary = uuid.uuid4().hex
                body = b"".join(b"--" + boundary.encode() + b"\r\nContent-Type: " + part_type.encode() +
                                b"\r\nContent-Length: " + str(f.stat().st_size).encode() + b"\r\n\r\n" +
                                f.read_bytes() + b"\r\n" for f in frames) + b"--" + boundary.encode() + b"--\r\n"
                self._answer(200, body, f'multipart/related; type="{part_type.split(";")[0]}"; boundary={boundary}')

            def _answer(self, status, body, kind):
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = serve(Handler)
        return f"http://127.0.0.1:{self._httpd.server_address[1]}{self.path}"

    def stop(self) -> None:
        shutdown(self._httpd)
