"""Who a request counts as (llmviz/classroom/clients.py), on hand cases: the red team's `::ffff:` students that all
fell in one `::/64` bucket, a spoofed X-Forwarded-For from an untrusted peer, a trusted balancer on another machine."""

from __future__ import annotations

import pytest

from llmviz.classroom import clients
from llmviz.errors import ConfigError

LOOPBACK = clients.trusted("")
BALANCER = clients.trusted("10.0.0.5")


@pytest.mark.parametrize("peer, expected", [
    ("::ffff:203.0.113.7", "203.0.113.7"),  # an IPv4 student on a dual-stack bind: its own address
    ("::ffff:203.0.113.8", "203.0.113.8"),  # ... and its neighbour another one, not the same ::/64
    ("203.0.113.7", "203.0.113.7"),
    ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),  # a real IPv6 host by its /64
    ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),
    ("2001:db8:1:3::1", "2001:db8:1:3::/64"),
    ("fe80::1%eth0", "fe80::/64"),
    ("[2001:db8::1]:443", "2001:db8::/64"),
    ("198.51.100.2:5123", "198.51.100.2"),
])
def test_direct_peers(peer, expected):
    assert clients.client(peer, None, LOOPBACK) == expected


def test_every_ipv4_student_of_a_dual_stack_bind_is_its_own_client():
    keys = {clients.client(f"::ffff:198.51.100.{i}", None, LOOPBACK) for i in range(1, 61)}
    assert len(keys) == 60 and "::/64" not in keys


def test_an_untrusted_peer_cannot_choose_its_address():
    # a direct client sends a header of its own: it counts as itself, whatever it claims
    assert clients.client("203.0.113.7", "198.51.100.1", LOOPBACK) == "203.0.113.7"
    assert clients.client("::ffff:203.0.113.7", "127.0.0.1, 198.51.100.1", LOOPBACK) == "203.0.113.7"


def test_a_trusted_balancer_names_the_client_it_saw():
    # behind serve-class: the replica's peer is HAProxy on this machine (Streamlit names no 127.0.0.1 peer)
    assert clients.client(None, "203.0.113.7", LOOPBACK) == "203.0.113.7"
    assert clients.client("::ffff:127.0.0.1", "::ffff:203.0.113.7", LOOPBACK) == "203.0.113.7"
    # a client's own header before the balancer's hop is never read: the right-most untrusted hop counts
    assert clients.client(None, "1.1.1.1, 203.0.113.7", LOOPBACK) == "203.0.113.7"
    # --backend: a replica on another machine sees the balancer's LAN address, trusted by configuration
    assert clients.client("10.0.0.5", "1.1.1.1, 203.0.113.7", BALANCER) == "203.0.113.7"
    # ... and without that configuration the balancer is one client (the red team's finding): it must be set
    assert clients.client("10.0.0.5", "203.0.113.7", LOOPBACK) == "10.0.0.5"
    # a chain of two trusted balancers
    assert clients.client("10.0.0.5", "203.0.113.7, 10.0.0.5", BALANCER) == "203.0.113.7"


def test_a_header_from_loopback_without_a_balancer_counts_the_loopback_peer():
    assert clients.client(None, None, LOOPBACK) == "127.0.0.1"
    assert clients.client(None, "garbage", LOOPBACK) == "127.0.0.1"  # no address: the balancer is as far as known
    assert clients.client(None, "203.0.113.7", clients.trusted("none")) == "127.0.0.1"


def test_trusted_proxies_from_the_environment(monkeypatch):
    monkeypatch.delenv(clients.TRUSTED_ENV, raising=False)
    assert {str(n) for n in clients.trusted()} == {"127.0.0.0/8", "::1/128"}
    monkeypatch.setenv(clients.TRUSTED_ENV, "10.0.0.5, 10.1.0.0/16")
    assert clients.client("10.1.4.4", "203.0.113.9") == "203.0.113.9"
    monkeypatch.setenv(clients.TRUSTED_ENV, "none")
    assert clients.client(None, "203.0.113.9") == "127.0.0.1"
    with pytest.raises(ConfigError, match="no address or network"):
        clients.trusted("10.0.0.5, balancer.local")
