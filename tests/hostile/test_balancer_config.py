"""The class balancer's HAProxy configuration, read back from its text (a source's HTTP requests).

Finding 5: one client held 4,100 unfinished requests and filled `maxconn 4096` for an hour (`timeout client 1h`, no
`timeout http-request`). Each directive that stops it is read here from the configuration serve-class writes, and
held against a figure from outside the code: Streamlit's own websocket ping, a browser's connection count, the
system's account database. Finding 12: HAProxy drops root and its environment holds no secret. The slow tests
(test_balancer_load.py) run the same configuration in the real HAProxy.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from balancer_helpers import ROOT, seconds, sections, timeouts

sys.path.insert(0, str(ROOT / "scripts"))
import class_balancer as cb

BACKENDS = ["127.0.0.1:9001", "127.0.0.1:9002"]
CONFIG = cb.haproxy_config(8501, "0.0.0.0", BACKENDS)
# Browsers' own limits: 6 HTTP/1.1 connections per host (Chromium's and Firefox's default), a websocket per tab.
PER_HOST, TABS, STUDENTS = 6, 2, 60
# HTTP requests Chromium 156 sent loading the lesson page without a cache (counted with playwright's `request` event,
# 2026-12-06, Streamlit 1.67: the page, 100-odd script, style and font files, /_stcore endpoints, the websocket).
PAGE_LOAD_REQUESTS_SEEN = 117


def frontend() -> list[list[str]]:
    return sections(CONFIG)["frontend class"]


def test_a_request_must_arrive_whole_within_ten_seconds():
    t = timeouts(CONFIG)
    assert 0 < t["http-request"] <= 10  # slowloris: the 408 comes however slowly the bytes trickle
    assert ["option", "http-buffer-request"] in sections(CONFIG)["defaults"]  # the body's first buffer too


def test_an_idle_connection_closes_within_a_minute():
    t = timeouts(CONFIG)
    assert t["client"] <= 60  # was 1 h
    assert t["http-keep-alive"] <= t["client"]  # HAProxy applies the smaller of the two (haproxy/haproxy#2334)
    assert t["client-fin"] <= t["client"] and t["server-fin"] <= t["client"]  # a half-closed websocket too


def test_a_quiet_websocket_outlives_streamlit_s_own_ping():
    """An upgraded connection lives under `timeout tunnel`; Streamlit pings its websocket every interval and gives
    up after its timeout, so the tunnel must outlast a few missed pings, or an idle student's page reconnects."""
    from streamlit.web.server.starlette import starlette_server_config as st_server

    ping = st_server.DEFAULT_WEBSOCKET_PING_INTERVAL + st_server.DEFAULT_WEBSOCKET_PING_TIMEOUT
    assert timeouts(CONFIG)["tunnel"] >= 3 * ping
    assert timeouts(CONFIG)["server"] <= timeouts(CONFIG)["tunnel"]


def test_one_source_address_is_limited():
    words = frontend()
    table = next(w for w in words if w[0] == "stick-table")
    assert table[table.index("type") + 1] == "ipv6"  # an `ip` table would not track an IPv6 client at all
    assert set(table[table.index("store") + 1].split(",")) == {"conn_cur", "conn_rate(10s)", "http_req_rate(10s)"}
    track = next(w for w in words if w[:3] == ["tcp-request", "connection", "track-sc0"])
    assert track[3] == "src,ipmask(32,64)"  # an IPv6 host is its /64, not one of 2^64 addresses
    rejects = {w[5]: int(w[7]) for w in words if w[:3] == ["tcp-request", "connection", "reject"]}
    assert rejects == {"sc0_conn_cur": cb.CONN_PER_SOURCE, "sc0_conn_rate": cb.RATE_PER_SOURCE}


def test_one_source_address_s_http_requests_are_limited_with_a_429():
    """Issue 47, finding 5: the source's HTTP requests in 10 s, counted on the connection-level tracking (HAProxy
    2.6 answered the 6th request 429 with the limit set to 5, on one keep-alive connection and on new ones alike)."""
    lines = [" ".join(w) for w in frontend()]
    deny = f"http-request deny deny_status 429 if {{ sc0_http_req_rate gt {cb.HTTP_RATE_PER_SOURCE} }}"
    assert deny in lines
    assert lines.index(deny) < lines.index("option forwardfor")  # refused before anything is passed on


def test_a_class_behind_one_address_is_never_refused():
    """60 students behind one school NAT address, two tabs each: 6 + 2 connections a browser, 480 at once, and
    480 opened in one burst when they all load the page (a rate over 10 s)."""
    rejects = {w[5]: int(w[7]) for w in frontend() if w[:3] == ["tcp-request", "connection", "reject"]}
    assert STUDENTS * (PER_HOST + TABS) == 480
    assert rejects["sc0_conn_cur"] >= 480 and rejects["sc0_conn_rate"] >= 2 * 480
    # and their HTTP requests: the whole class loading the page twice within the 10 s (a reload after the first)
    deny = next(w for w in frontend() if w[:2] == ["http-request", "deny"])
    assert int(deny[deny.index("gt") + 1]) >= 2 * STUDENTS * PAGE_LOAD_REQUESTS_SEEN == 14_040


def test_maxconn_is_many_clients_deep_and_fits_the_descriptors():
    g = dict((w[0], w[1:]) for w in sections(CONFIG)["global"])
    total = int(g["maxconn"][0])
    front = int(next(w[1] for w in frontend() if w[0] == "maxconn"))
    assert front <= total and total >= 10 * cb.CONN_PER_SOURCE  # one address holds a tenth of it at most
    assert "noreuseport" in g  # a second class on a taken port fails instead of sharing it
    # HAProxy needs 2 descriptors a connection (client, replica) under the hard limit it cannot raise:
    # it refused to start with maxconn 10000 under `ulimit -Hn` 20000 ("Cannot raise FD limit to 20019").
    assert cb.maxconn_for(20_000) == (20_000 - 100) // 2 == 9950
    assert cb.maxconn_for(1_048_576) == 10_000 and cb.maxconn_for(1024) == 462


def _nobody_from_files() -> tuple[str, str]:
    """nobody's user and group read from /etc/passwd and /etc/group themselves (not through pwd/grp)."""
    passwd = Path("/etc/passwd").read_text(encoding="utf-8").splitlines()
    entry = next((line.split(":") for line in passwd if line.startswith("nobody:")), None)
    if entry is None:
        pytest.skip("no user nobody in /etc/passwd (the account database is elsewhere)")
    groups = [line.split(":") for line in Path("/etc/group").read_text(encoding="utf-8").splitlines()]
    return "nobody", next(g[0] for g in groups if len(g) > 2 and g[2] == entry[3])


def test_as_root_haproxy_drops_to_nobody_in_an_empty_jail():
    account = cb.account_for(0)
    assert account == _nobody_from_files()
    g = sections(cb.haproxy_config(8501, "0.0.0.0", BACKENDS, account=account, jail="/tmp/x/jail"))["global"]
    assert ["user", account[0]] in g and ["group", account[1]] in g and ["chroot", "/tmp/x/jail"] in g


def test_as_another_user_haproxy_stays_that_user():
    assert cb.account_for(1000) is None
    words = {w[0] for w in sections(CONFIG)["global"]}
    assert not words & {"user", "group", "uid", "gid", "chroot"}  # it could not switch: it runs as who started it


def test_haproxy_gets_no_secret_in_its_environment():
    environ = {"PATH": "/usr/bin", "LANG": "C.UTF-8", "HOME": "/root", "STREAMLIT_SERVER_COOKIE_SECRET": "s3cret",
               "HF_TOKEN": "hf_abc", "LLMVIZ_PUBLIC": "1"}
    assert cb.haproxy_env(environ) == {"PATH": "/usr/bin", "LANG": "C.UTF-8"}


@pytest.mark.parametrize("value, expected", [("5s", 5), ("1h", 3600), ("500ms", 0.5), ("3000", 3)])
def test_times_read_as_haproxy_reads_them(value, expected):
    assert seconds(value) == expected


def test_the_replicas_learn_the_clients_address_and_no_client_sets_it():
    """Issue 39: a class's join limit counts client addresses; behind the balancer a replica's peer is 127.0.0.1, so
    the balancer writes the address it saw as the one X-Forwarded-For, after dropping any the client sent."""
    lines = [" ".join(words) for words in frontend()]
    assert "http-request del-header X-Forwarded-For" in lines and "option forwardfor" in lines
    assert lines.index("http-request del-header X-Forwarded-For") < lines.index("option forwardfor")


def test_every_address_of_both_families_is_two_sockets():
    """serve-class --host ::: on one dual-stack socket an IPv4 client is ::ffff:a.b.c.d, and the table's /64 would
    make every IPv4 client one source; an IPv6 socket alone (v6only) and an IPv4 one keep each client its own."""
    both = sections(cb.haproxy_config(8501, "::", BACKENDS))["frontend class"]
    assert [w for w in both if w[0] == "bind"] == [["bind", ":::8501", "v6only"], ["bind", "0.0.0.0:8501"]]
    assert [w for w in frontend() if w[0] == "bind"] == [["bind", "0.0.0.0:8501"]]
