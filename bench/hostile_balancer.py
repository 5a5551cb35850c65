"""Issue 35, finding 5: can one client shut a class out of `scripts/serve-class`? It opens N connections from one
address and sends each an unfinished request line (slowloris), then a real request comes from another address.
Prints one JSON object: what was opened, held and refused, how long the real requests took, when HAProxy closed
the held ones.

    python bench/hostile_balancer.py [--replicas 2] [--connections 4100]
    python bench/hostile_balancer.py --port 8501 ...   # against a class already running on this machine

The real request comes from 127.0.0.2 (Linux routes all of 127/8 to loopback): HAProxy limits connections per source
address, so from the attacker's own address it would be refused like the attacker's, as a student sharing the
attacker's NAT address would be. Shared with tests/hostile/test_balancer_load.py.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import resource
import selectors
import socket
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

PARTIAL = b"GET / HTTP/1.1\r\nHost: class\r\n"  # no blank line: the request never ends


def raise_nofile(wanted: int) -> int:
    """Raise this process's soft descriptor limit towards `wanted` (up to the hard limit); the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        soft = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return soft


def readable(socks: list[socket.socket], timeout_s: float) -> list[socket.socket]:
    """The sockets with something to read (data, an end, a reset) within `timeout_s` (a selector: select() stops
    at descriptor 1024)."""
    with selectors.DefaultSelector() as sel:
        for s in socks:
            sel.register(s, selectors.EVENT_READ)
        return [key.fileobj for key, _ in sel.select(timeout_s)]


def hold(host: str, port: int, n: int, source: str) -> tuple[list[socket.socket], int, float]:
    """Open up to n connections from `source`, each with an unfinished request; (the sockets HAProxy still holds
    after half a second, how many it refused or closed at once, seconds spent opening)."""
    opened, refused, t0 = [], 0, time.monotonic()
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            s.bind((source, 0))
            s.connect((host, port))
            s.sendall(PARTIAL)
            opened.append(s)
        except OSError:
            s.close()
            refused += 1
    seconds = time.monotonic() - t0
    time.sleep(0.5)
    closed = set(readable(opened, 0))
    for s in closed:
        s.close()
    return [s for s in opened if s not in closed], refused + len(closed), seconds


def timed_get(host: str, port: int, path: str, source: str, timeout_s: float = 20) -> dict:
    """One real request from `source`: its status (None when it failed) and seconds to the whole answer."""
    t0 = time.monotonic()
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s, source_address=(source, 0))
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        body = answer.read()
        return {"status": answer.status, "seconds": time.monotonic() - t0, "bytes": len(body)}
    except OSError as exc:
        return {"status": None, "seconds": time.monotonic() - t0, "error": repr(exc)}
    finally:
        conn.close()


def closed_by_server(socks: list[socket.socket], limit_s: float) -> dict:
    """Wait up to `limit_s` for the server to close each held socket: how many it closed, when the last went, and
    the first bytes it sent before closing (HAProxy's 408)."""
    alive, t0, last, first = set(socks), time.monotonic(), 0.0, b""
    while alive and time.monotonic() - t0 < limit_s:
        for s in readable(list(alive), 0.2):
            try:
                data = s.recv(64)
            except OSError:
                data = b""
            first = first or data
            last = time.monotonic() - t0
            alive.discard(s)
            s.close()
    for s in alive:
        s.close()
    return {"closed": len(socks) - len(alive), "still_open": len(alive), "last_closed_s": last,
            "first_bytes": first.decode("latin-1")[:40]}


def attack(port: int, connections: int = 4100, host: str = "127.0.0.1", source: str = "127.0.0.1",
           real_source: str = "127.0.0.2", close_limit_s: float = 15) -> dict:
    """The whole measurement against a balancer on host:port (see the module's docstring)."""
    limit = raise_nofile(connections + 200)
    held, refused, seconds = hold(host, port, min(connections, limit - 200), source)
    real = {path: timed_get(host, port, path, real_source) for path in ("/_stcore/health", "/")}
    after = closed_by_server(held, close_limit_s)
    return {"attempted": min(connections, limit - 200), "open_seconds": round(seconds, 3), "held": len(held),
            "refused": refused, "real": real, "held_closed": after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--connections", type=int, default=4100)
    parser.add_argument("--port", type=int, help="a class already running here (default: start one)")
    args = parser.parse_args()
    machine = {"cpus": os.cpu_count(), "platform": platform.platform(), "euid": os.geteuid()}
    if args.port:
        result = attack(args.port, args.connections)
    else:
        from browser_kit import free_port
        from serve_class import Class

        with Class(args.replicas, free_port()) as served:
            result = attack(served.port, args.connections)
    print(json.dumps({"machine": machine, "replicas": args.replicas, **result}, indent=1))


if __name__ == "__main__":
    main()
