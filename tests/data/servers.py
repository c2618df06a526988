"""Servers on the loopback address for the remote-read tests and benchmarks: Debian's nginx over a folder,
and tests/data/fault_proxy.py in front of a server. Each runs in its own process (a reader under test may
hold the interpreter's lock while it waits for the network)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Dict, Optional, Tuple

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int, proc: subprocess.Popen, what: str, seconds: float = 10) -> None:
    deadline = time.time() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"{what} did not start")
            time.sleep(0.05)


def nginx(root: Path, state: Path, autoindex: Optional[Dict[str, str]] = None) -> Tuple[subprocess.Popen, str]:
    """nginx serving `root` (range requests, ETags) with its state in `state`; (process, base URL).
    `autoindex`: folders (URL paths ending in '/') whose index nginx serves, "html" or "json"; the other
    folders answer 403, as by default."""
    if NGINX is None:
        raise FileNotFoundError("nginx (Debian's nginx-light, installed by scripts/bootstrap.sh) is not installed")
    port = free_port()
    temps = "\n".join(f"{k}_temp_path {state}/{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    indexes = " ".join(f"location {path} {{ autoindex on; autoindex_format {kind}; }}"
                       for path, kind in (autoindex or {}).items())
    conf = state / "nginx.conf"
    conf.write_text(f"""daemon off; master_process off; pid {state}/nginx.pid; error_log {state}/error.log;
events {{ worker_connections 256; }}
http {{ access_log off; {temps}
  server {{ listen 127.0.0.1:{port}; root {root}; location / {{ }} {indexes} }} }}
""")
    proc = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(state)], stderr=subprocess.DEVNULL)
    wait_for(port, proc, "nginx")
    return proc, f"http://127.0.0.1:{port}"


def fault_proxy(upstream: str, state: Path, **faults) -> Tuple[subprocess.Popen, str]:
    """fault_proxy.py in front of `upstream` (faults: latency_ms, drop_every, truncate_every, burst_503,
    burst_every); (process, base URL)."""
    port_file = state / f"proxy-{time.monotonic_ns()}.port"
    args = [sys.executable, str(Path(__file__).resolve().parent / "fault_proxy.py"), upstream, str(port_file)]
    for k, v in faults.items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    proc = subprocess.Popen(args)
    deadline = time.time() + 10
    while not port_file.exists():
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError("the fault proxy did not start")
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port_file.read_text()}"


def proxy_stats(url: str) -> dict:
    """The proxy's counts: requests, bytes (of bodies sent), dropped, truncated, 503."""
    with urllib.request.urlopen(f"{url}/__stats", timeout=10) as r:
        return json.loads(r.read())


def stop(proc: Optional[subprocess.Popen]) -> None:
    if proc is not None and proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=10)
