"""One client cannot shut a class out of the real balancer, and the balancer runs unprivileged: scripts/serve-class's
HAProxy in front of 2 Streamlit replicas, or of a stand-in replica where only HAProxy's own behaviour is measured.

The attacker and the class are told apart by address: HAProxy limits connections per source address, so from the
attacker's own address a real request is refused like the attacker's (as a student behind the attacker's NAT
address would be). The attacker is 127.0.0.5, the real requests come from 127.0.0.2 and 127.0.0.3 and the browser
from 127.0.0.1: Linux routes all of 127/8 to loopback.
Slow (real HAProxy and Streamlit; a wait past the client timeout). Skipped where HAProxy is absent.
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import psutil
import pytest
from balancer_helpers import ROOT, replica

sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "bench"))
import class_balancer as cb
import hostile_balancer as attack_kit
from browser_kit import CHROMIUM, chromium, exceptions, free_port, wait_idle
from serve_class import Class, find_haproxy

pytestmark = [pytest.mark.slow, pytest.mark.skipif(find_haproxy() is None, reason="HAProxy is absent "
                                                                                  "(apt-get install -y haproxy)")]
ATTACKER = "127.0.0.5"  # its own address: the limit it trips (10 s of its connection rate) is no other test's
WS_UPGRADE = (b"GET /_stcore/stream HTTP/1.1\r\nHost: class\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")


@pytest.fixture(scope="module")
def streamlit_class(tmp_path_factory):
    with Class(2, free_port(), log_dir=tmp_path_factory.mktemp("class")) as served:
        yield served


@pytest.fixture(scope="module")
def stub_class(tmp_path_factory):
    """The real HAProxy in front of one stand-in replica (200 to a GET, an echoing websocket)."""
    server, address = replica()
    with Class(0, free_port(), backends=(address,), log_dir=tmp_path_factory.mktemp("stub")) as served:
        yield served
    server.shutdown()


def from_address(source: str, port: int) -> socket.socket:
    s = socket.socket()
    s.settimeout(5)
    try:
        s.bind((source, 0))
    except OSError as exc:
        pytest.skip(f"{source} is not a loopback address here: {exc}")
    s.connect(("127.0.0.1", port))
    return s


@pytest.mark.parametrize("as_root, host", [(True, "0.0.0.0"), (False, "0.0.0.0"), (False, "::")],
                         ids=["as-root", "as-a-user", "both-families"])
def test_haproxy_accepts_the_configuration(tmp_path, as_root, host):
    (tmp_path / "jail").mkdir(mode=0o555)
    config = tmp_path / "haproxy.cfg"
    config.write_text(cb.haproxy_config(free_port(), host, ["127.0.0.1:9", "[::1]:9"],
                                        account=cb.account_for(0) if as_root else None,
                                        jail=str(tmp_path / "jail") if as_root else None), encoding="utf-8")
    check = subprocess.run([find_haproxy(), "-c", "-f", str(config)], capture_output=True, text=True, timeout=30)
    assert check.returncode == 0 and "Configuration file is valid" in check.stdout, check.stdout + check.stderr
    assert "WARNING" not in check.stdout + check.stderr


def test_4100_unfinished_requests_from_one_client_leave_the_class_served(streamlit_class):
    result = attack_kit.attack(streamlit_class.port, 4100, source=ATTACKER)
    assert result["attempted"] >= 4100 or result["attempted"] == attack_kit.raise_nofile(0) - 200
    assert result["held"] == cb.CONN_PER_SOURCE  # what the OS says is still open, half a second on
    assert result["refused"] == result["attempted"] - cb.CONN_PER_SOURCE
    for path, real in result["real"].items():  # from 127.0.0.2, while the attacker holds its 600
        assert real["status"] == 200 and real["seconds"] < 1 and real["bytes"] > 0, (path, real)
    closed = result["held_closed"]  # HAProxy ends each held request when its headers are late
    assert closed["still_open"] == 0 and closed["closed"] == cb.CONN_PER_SOURCE
    assert closed["last_closed_s"] <= cb.HTTP_REQUEST_S + 1
    assert closed["first_bytes"].startswith("HTTP/1.1 408")


def test_a_class_of_60_behind_one_address_is_never_refused(streamlit_class):
    """60 browsers behind one NAT address, each with its 6 HTTP/1.1 connections and 2 websockets' worth: 480
    connections open at once from 127.0.0.3, then a request on each."""
    socks = [from_address("127.0.0.3", streamlit_class.port) for _ in range(60 * (6 + 2))]
    try:
        for s in socks:
            s.sendall(b"GET /_stcore/health HTTP/1.1\r\nHost: class\r\n\r\n")
        answers = [s.recv(64) for s in socks]
    finally:
        for s in socks:
            s.close()
    assert sum(a.startswith(b"HTTP/1.1 200") for a in answers) == 480


def established(pid: int, port: int) -> int:
    """Connections the OS shows HAProxy (pid) holding from clients on its port."""
    return sum(c.status == psutil.CONN_ESTABLISHED and c.laddr.port == port
               for c in psutil.Process(pid).net_connections("tcp"))


@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (apt-get install -y chromium)")
def test_a_browser_with_two_tabs_holds_the_connections_the_limit_counts(streamlit_class):
    """What CONN_PER_SOURCE assumes of a browser, measured in Chromium: 6 HTTP/1.1 connections to one host and a
    websocket per tab, 8 at most with two tabs open (sampled every 20 ms from HAProxy's side while they load)."""
    haproxy, port, peak, done = streamlit_class.pids[-1], streamlit_class.port, [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], established(haproxy, port))
            time.sleep(0.02)

    threading.Thread(target=sample, daemon=True).start()
    try:
        with chromium() as browser:
            context = browser.new_context()
            for page_name in ("decode", "lesson"):
                page = context.new_page()
                page.goto(f"http://127.0.0.1:{port}/{page_name}")
                wait_idle(page)
                assert exceptions(page) == [], page_name
            held = established(haproxy, port)
    finally:
        done.set()
    assert 2 <= held <= peak[0] <= cb.BROWSER_CONNECTIONS  # two websockets at least, 8 at most


def test_haproxy_runs_unprivileged_in_its_jail_without_the_secret(streamlit_class):
    haproxy = psutil.Process(streamlit_class.pids[-1])
    assert "haproxy" in haproxy.name()
    if os.geteuid() == 0:
        assert haproxy.uids().real != 0 and haproxy.uids().effective != 0 and haproxy.username() == "nobody"
        jail = streamlit_class.dir / "jail"
        assert os.readlink(f"/proc/{haproxy.pid}/root") == str(jail) and not any(jail.iterdir())
    else:
        assert haproxy.uids().effective == os.geteuid()
    assert "STREAMLIT_SERVER_COOKIE_SECRET" not in haproxy.environ()
    secrets = {psutil.Process(pid).environ().get("STREAMLIT_SERVER_COOKIE_SECRET") for pid in
               streamlit_class.pids[:-1]}
    assert len(secrets) == 1 and None not in secrets  # the replicas share theirs


def test_a_quiet_websocket_outlives_the_client_timeout_and_an_idle_connection_does_not(stub_class):
    ws = from_address("127.0.0.1", stub_class.port)
    ws.settimeout(cb.CLIENT_S + 10)
    ws.sendall(WS_UPGRADE)
    assert ws.recv(4096).startswith(b"HTTP/1.1 101")
    idle = http.client.HTTPConnection("127.0.0.1", stub_class.port, timeout=5)
    idle.request("GET", "/_stcore/health")
    assert idle.getresponse().read() == b"ok"
    idle.sock.settimeout(cb.CLIENT_S + 10)
    t0 = time.monotonic()
    assert idle.sock.recv(1) == b""  # HAProxy ends the keep-alive connection ...
    assert cb.KEEP_ALIVE_S - 1 <= time.monotonic() - t0 <= cb.KEEP_ALIVE_S + 2  # ... after its timeout
    ws.settimeout(cb.CLIENT_S + 3 - (time.monotonic() - t0))
    with pytest.raises(TimeoutError):  # the websocket, silent past the client timeout, stays: no end comes
        ws.recv(1)
    ws.settimeout(5)
    ws.sendall(b"still here")
    assert ws.recv(64) == b"still here"
    ws.close()


def test_a_second_class_on_a_taken_port_fails_and_leaves_no_folder(stub_class):
    second = Class(0, stub_class.port, backends=tuple(stub_class.backends))
    with pytest.raises(SystemExit, match=r"port \d+ on 127.0.0.1 is taken"):
        second.start()
    assert not second.dir.exists()
    assert attack_kit.timed_get("127.0.0.1", stub_class.port, "/_stcore/health", "127.0.0.1")["status"] == 200


def test_kill_stops_the_real_class_and_removes_its_folder(stub_class):
    proc = subprocess.Popen([str(ROOT / "scripts" / "serve-class"), "--replicas", "0", "--backend",
                             stub_class.backends[0], "--port", str(free_port())], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        folder, pids = re.search(r"logs in (\S+)\)", line).group(1), re.search(r"pids \[(\d+)\]", line).group(1)
        assert os.path.isdir(folder) and psutil.pid_exists(int(pids))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not os.path.exists(folder) and not psutil.pid_exists(int(pids))
