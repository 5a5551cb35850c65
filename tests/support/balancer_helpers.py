"""What the class balancer's tests share: HAProxy's configuration read back from
its text, a stand-in for HAProxy that records how it was started, and a stand-in replica.

The stand-ins let the default suite check every way serve-class stops without HAProxy or Streamlit installed;
the slow tests run the real ones.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import re
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def sections(config: str) -> dict[str, list[list[str]]]:
    """{'global': [...], 'defaults': [...], 'frontend class': [...], ...}: each section's directives, split into
    words, read the way HAProxy reads them (a section starts at column 0, its directives are indented)."""
    found: dict[str, list[list[str]]] = {}
    current = None
    for line in config.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            current = line.strip()
            found[current] = []
        else:
            found[current].append(line.split("#", 1)[0].split())
    return found


def seconds(value: str) -> float:
    """An HAProxy time ('5s', '1h', '500ms'; a bare number is milliseconds, as HAProxy's manual says)."""
    number, unit = re.fullmatch(r"(\d+)([a-z]*)", value).groups()
    return int(number) * (UNITS[unit] if unit else 1e-3)


def timeouts(config: str, section: str = "defaults") -> dict[str, float]:
    """{'http-request': 5.0, 'client': 30.0, ...} of one section, in seconds."""
    return {words[1]: seconds(words[2]) for words in sections(config)[section] if words[0] == "timeout"}


FAKE_HAPROXY = '''#!{python}
"""A stand-in for HAProxy: records its pid, arguments and environment, then ({mode}) answers 200 on the configured
bind, prints an alert and exits 1 as HAProxy does when its port is taken, or hangs without answering."""
import http.server, json, os, re, sys
config = open(sys.argv[sys.argv.index("-f") + 1]).read()
with open({record!r}, "w") as f:
    json.dump({{"pid": os.getpid(), "argv": sys.argv, "env": dict(os.environ), "config": config}}, f)
if {mode!r} == "fail":
    print("[ALERT] Starting frontend class: cannot bind socket", flush=True)
    sys.exit(1)
if {mode!r} == "hang":
    import time
    time.sleep(600)
host, port = re.search(r"bind (\\S+):(\\d+)", config).groups()
class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *args):
        pass
http.server.HTTPServer((host, int(port)), Ok).serve_forever()
'''


def fake_haproxy(folder: Path, mode: str = "serve") -> tuple[Path, Path]:
    """(an executable named haproxy in `folder`, the JSON file it writes when started); mode: serve, fail, hang."""
    folder.mkdir(parents=True, exist_ok=True)
    script, record = folder / "haproxy", folder / "started.json"
    script.write_text(FAKE_HAPROXY.format(python=sys.executable, record=str(record), mode=mode), encoding="utf-8")
    script.chmod(0o755)
    return script, record


def started(record: Path) -> dict:
    return json.loads(record.read_text(encoding="utf-8"))


WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455's constant


class Replica(http.server.BaseHTTPRequestHandler):
    """A stand-in replica: 200 'ok' to any GET; a websocket upgrade gets its 101 (RFC 6455's accept key) and then
    every byte sent back, for as long as the client keeps the connection."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):
        key = self.headers.get("Sec-WebSocket-Key")
        if key is None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            return
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.send_response(101)
        for name, value in (("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Accept", accept)):
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()
        while data := self.connection.recv(4096):
            self.connection.sendall(data)
        self.close_connection = True

    def log_message(self, *args):
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """HAProxy ends each health check with a reset once it has read the status: no traceback for that."""


def replica() -> tuple[http.server.ThreadingHTTPServer, str]:
    """A stand-in replica serving in a daemon thread on a free port: (the server, 'HOST:PORT'); shutdown() ends it."""
    server = QuietServer(("127.0.0.1", 0), Replica)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"127.0.0.1:{server.server_address[1]}"


class Relay:
    """A second client address on this machine: a TCP relay listening on 127.0.0.1 that reaches `port` from
    `source` (another loopback address, e.g. 127.0.0.2), so that a browser behind it arrives at the balancer as a
    client of its own (Linux answers for all of 127.0.0.0/8). Threads, one pair a connection; stop() ends them."""

    def __init__(self, port: int, source: str):
        import socket

        self.port, self.source = port, source
        self.server = socket.create_server(("127.0.0.1", 0))
        self.listen_port = self.server.getsockname()[1]
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket

        while not self.stopped.is_set():
            try:
                client, _ = self.server.accept()
                upstream = socket.create_connection(("127.0.0.1", self.port), timeout=30,
                                                    source_address=(self.source, 0))
            except OSError:
                continue
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src, dst) -> None:
        import contextlib
        import socket

        src.settimeout(None)
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):  # this direction ended: say so, and let the other finish
            dst.shutdown(socket.SHUT_WR)

    def stop(self) -> None:
        self.stopped.set()
        self.server.close()

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
