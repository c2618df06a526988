"""A real DICOMweb server for the tests: Orthanc (Debian's `orthanc`) with its DICOMweb plugin
(`orthanc-dicomweb`), started on 127.0.0.1 on a free port with a generated configuration and its own
storage folder, optionally with registered users (HTTP basic authentication). Both packages are installed
by scripts/bootstrap.sh; a missing one fails loudly."""

from __future__ import annotations

import base64
import glob
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Optional

PLUGIN_GLOBS = ["/usr/share/orthanc/plugins/libOrthancDicomWeb.so*", "/usr/lib/orthanc/plugins/libOrthancDicomWeb.so*"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OrthancServer:
    """Orthanc serving DICOMweb at `dicomweb_url` (http://127.0.0.1:PORT/dicom-web) until stop()."""

    def __init__(self, folder: Path, users: Optional[dict[str, str]] = None):
        exe = shutil.which("Orthanc") or shutil.which("Orthanc", path="/usr/sbin")
        assert exe, "Orthanc (Debian's orthanc, installed by scripts/bootstrap.sh) is not installed"
        plugins = [p for pattern in PLUGIN_GLOBS for p in glob.glob(pattern)]
        assert plugins, "Orthanc's DICOMweb plugin (Debian's orthanc-dicomweb) is not installed"
        self.port = free_port()
        self.users = users or {}
        folder.mkdir(parents=True, exist_ok=True)
        config = {
            "Name": "tilewise-tests",
            "StorageDirectory": str(folder / "storage"),
            "IndexDirectory": str(folder / "storage"),
            "HttpPort": self.port,
            "DicomServerEnabled": False,
            "RemoteAccessAllowed": False,
            "AuthenticationEnabled": bool(self.users),
            "RegisteredUsers": self.users,
            "StorageCompression": False,
            "HttpTimeout": 120,
            "Plugins": [plugins[0]],
            "DicomWeb": {"Enable": True, "Root": "/dicom-web/", "Ssl": False, "StudiesMetadata": "Full",
                         "SeriesMetadata": "Full"},
        }
        (folder / "orthanc.json").write_text(json.dumps(config))
        self.log = folder / "orthanc.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen([exe, str(folder / "orthanc.json")], stdout=log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"
        self.dicomweb_url = self.url + "/dicom-web"
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"Orthanc exited ({self.process.returncode}): {self.log.read_text()[-2000:]}")
            try:
                self.get("/system")
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"Orthanc did not answer within 30 s: {self.log.read_text()[-2000:]}")
                time.sleep(0.1)

    def auth_header(self) -> dict[str, str]:
        if not self.users:
            return {}
        user, password = next(iter(self.users.items()))
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}

    def get(self, path: str):
        """GET of Orthanc's REST API (JSON answers decoded), with the first user's credentials."""
        request = urllib.request.Request(self.url + path, headers=self.auth_header())
        with urllib.request.urlopen(request, timeout=30) as r:
            body = r.read()
            return json.loads(body) if r.headers.get_content_type() == "application/json" else body

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
