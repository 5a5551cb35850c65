"""Who a request comes from, as every limit counts it: one rule for the class's joins, starts and code checks and for
the app's budget of sessions and reruns (a class no single client can shut or stuff).

- An IPv4 client of a dual-stack server (`streamlit run app.py` binds `::`) arrives as `::ffff:a.b.c.d`: it is the
  IPv4 address a.b.c.d, one client, never "some IPv6 host".
- A real IPv6 client counts by its /64: one host owns a whole /64 (SLAAC, privacy addresses) and could otherwise
  take 2^64 addresses, one per try. HAProxy counts it the same way (scripts/class_balancer.py).
- `X-Forwarded-For` is believed only from a trusted balancer: the peer is trusted (LLMVIZ_TRUSTED_PROXIES, default
  loopback: serve-class's HAProxy on this machine), then the header's hops are read from the right, each one
  believed only while the hop that wrote it (the one to its right) is trusted; the first untrusted hop is the
  client. A client's own header never counts: a direct client is untrusted, so its header is not read, and behind
  serve-class HAProxy drops it and writes the address it saw. Name balancers only, never a network that also holds
  clients (behind a balancer that appends to a client's header, such a client could name its own address).
  Streamlit's server (uvicorn) itself takes X-Forwarded-For from a loopback peer as the peer: the same rule, read
  once more here, with the same answer.
No streamlit here: the page hands in what Streamlit saw (llmviz/ui/client.py).
"""

from __future__ import annotations

import functools
import ipaddress
import os
from collections.abc import Iterable

from llmviz.errors import ConfigError

TRUSTED_ENV = "LLMVIZ_TRUSTED_PROXIES"
LOOPBACK = ("127.0.0.0/8", "::1/128")
IPV6_PREFIX = 64
MOST_HOPS = 16  # a header longer than this is read no further (a balancer chain is a hop or two)
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def trusted(text: str | None = None) -> tuple[Network, ...]:
    """The balancers whose X-Forwarded-For is believed: `text` (else LLMVIZ_TRUSTED_PROXIES; unset: loopback), a
    comma-separated list of addresses or networks ("10.0.0.5, 10.1.0.0/16"); "none" trusts no one (a server with
    no balancer in front). A malformed entry is a ConfigError, never silently dropped."""
    return _parsed(os.environ.get(TRUSTED_ENV) if text is None else text)


@functools.lru_cache(maxsize=8)
def _parsed(text: str | None) -> tuple[Network, ...]:
    """trusted()'s parse, once per setting (every run of every page asks: a pure function of the text)."""
    if text is None or not text.strip():
        return tuple(ipaddress.ip_network(n) for n in LOOPBACK)
    if text.strip().lower() == "none":
        return ()
    nets = []
    for entry in (e.strip() for e in text.split(",")):
        try:
            net = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ConfigError(f"{TRUSTED_ENV}: {entry!r} is no address or network (e.g. 10.0.0.5 or "
                              f"10.1.0.0/16; 'none' trusts no balancer)") from None
        mapped = net.version == 6 and net.prefixlen >= 96 and net.network_address.ipv4_mapped
        nets.append(ipaddress.ip_network(f"{mapped}/{net.prefixlen - 96}") if mapped else net)  # as peers are read
    return tuple(nets)


def parse(text: str | None) -> Address | None:
    """An address as a server or a header gives it: `[::1]:443`, `1.2.3.4:5`, `fe80::1%eth0`, `::ffff:1.2.3.4`
    (read as 1.2.3.4); None for anything else (an empty hop, "unknown", a name)."""
    text = (text or "").strip()
    if text.startswith("[") and "]" in text:
        text = text[1:text.index("]")]
    elif text.count(":") == 1:  # an IPv4 address with its port
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text.partition("%")[0])
    except ValueError:
        return None
    if address.version == 6 and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def key(address: Address) -> str:
    """What a limit counts for one address: an IPv4 address itself, an IPv6 address's /64."""
    if address.version == 4:
        return str(address)
    return str(ipaddress.ip_network(f"{address}/{IPV6_PREFIX}", strict=False))


def _is_trusted(address: Address | None, proxies: Iterable[Network]) -> bool:
    return address is not None and any(address in net for net in proxies if net.version == address.version)


def client(peer: str | None, forwarded: str | None = None, proxies: Iterable[Network] | None = None) -> str:
    """The client a request counts as: `peer`, the connection's address as the server saw it (None: Streamlit names
    no peer for 127.0.0.1 and ::1, a local one), `forwarded`, the X-Forwarded-For header (one or several, joined by
    commas), `proxies`: the trusted balancers (default: trusted())."""
    proxies = trusted() if proxies is None else tuple(proxies)
    current = parse("127.0.0.1" if peer is None else peer)
    if current is None:  # a peer Streamlit named but no address (a unix socket?): one client, by its name
        return "peer:" + str(peer)[:64]
    hops = [h for h in (forwarded or "").split(",")][-MOST_HOPS:]
    while hops and _is_trusted(current, proxies):
        hop = parse(hops.pop())
        if hop is None:  # a trusted balancer wrote no address: the balancer is as far as we can tell
            break
        current = hop
    return key(current)
