"""HAProxy's part of a class on one machine (scripts/serve_class.py starts it): its configuration, its environment
and the account it runs as, as plain functions, so that a test reads them without starting anything.

Issue 35, finding 5: one client opened 4,100 connections and sent each an unfinished request line; with
`maxconn 4096`, `timeout client 1h` and no `timeout http-request` they filled HAProxy for an hour and a real request
waited in the kernel's queue. Three things now stop that, each sized below:
- a request's headers must arrive whole within HTTP_REQUEST_S (slowloris), an idle connection closes after
  KEEP_ALIVE_S or CLIENT_S, and only an upgraded connection (a Streamlit websocket) may sit quiet for TUNNEL_S;
- one source address holds at most CONN_PER_SOURCE connections and opens at most RATE_PER_SOURCE per 10 s
  (beyond them HAProxy closes a new connection at once, before reading it), and sends at most HTTP_RATE_PER_SOURCE
  HTTP requests per 10 s (beyond it each is answered 429 at once, never reaching a replica);
- HAProxy holds up to MAXCONN connections in all: a client needs MAXCONN / CONN_PER_SOURCE addresses to fill it.
Finding 12: HAProxy drops root (`user`/`group`, `chroot` to an empty folder) and gets no secret in its environment.
"""

from __future__ import annotations

import grp
import pwd

COOKIE = "LLMVIZ_REPLICA"

# Timeouts in seconds. HAProxy's own advice: a few seconds above a multiple of 3 (a lost packet's retransmit).
HTTP_REQUEST_S = 5  # a request's headers, whole: a browser sends them in one packet, at once
KEEP_ALIVE_S = 10  # an idle keep-alive connection between two requests (the page's files load in one burst)
CLIENT_S = 30  # a client that stops reading an answer or sending a body midway
SERVER_S = 60  # a replica's answer (every HTTP answer of Streamlit's is short; the clicks go over the websocket)
FIN_S = 10  # a connection half closed by one side (it would otherwise sit out the tunnel timeout)
TUNNEL_S = 3600  # a websocket once upgraded: a student who reads a page for up to an hour without a click

# Per source address. A browser opens at most 6 HTTP/1.1 connections to one host (Chromium's and Firefox's limit)
# and one websocket per tab: 8 with two tabs. A class of 60 behind one school NAT address: 480 at most at once,
# 480 opened when all of them load the page together. The limits leave room above both.
BROWSER_CONNECTIONS = 6 + 2
CLASS_BEHIND_ONE_ADDRESS = 60
CONN_PER_SOURCE = 600  # concurrent, 25% above 60 x 8
RATE_PER_SOURCE = 1200  # opened within 10 s: the whole class loading the page twice in those 10 s, with room
# HTTP requests, over those connections. Chromium loading the lesson without a cache asked for 117 (the page, its
# scripts, styles and fonts, Streamlit's /_stcore endpoints, the websocket's upgrade), a reload for 115, a step for
# about 4 (its images from /media): the whole class loading the page twice in 10 s is 60 x 117 x 2 = 14,040. A click,
# a step followed or a poll is a message on the websocket, which HAProxy never sees as a request: the app's own
# budget counts those (llmviz/classroom/client_budget.py).
HTTP_RATE_PER_SOURCE = 18_000  # within 10 s: 25% above the class loading the page twice (as CONN_PER_SOURCE's room)
IPV6_PREFIX = 64  # one IPv6 host owns a whole /64: counted as one source, or it could take 2^64 addresses

# HAProxy's documentation: about 33 kB of buffers per busy connection, 2 descriptors (client, replica) each.
MAXCONN = 10_000  # 330 MB at worst; 16 sources at their limit to fill it
RESERVED_FDS = 100  # listeners, health checks, the log


def maxconn_for(nofile_hard: int) -> int:
    """The connections HAProxy can hold under the process's hard descriptor limit (`ulimit -Hn`), at most MAXCONN:
    HAProxy raises its soft limit itself but not past the hard one, and then refuses descriptors, not clients."""
    return max(1, min(MAXCONN, (nofile_hard - RESERVED_FDS) // 2))


def account_for(euid: int) -> tuple[str, str] | None:
    """(user, group) HAProxy switches to after binding its port when started as root: `nobody` and its own group
    (nogroup on Debian). None for any other user, as whom it simply runs (it could not switch anyway)."""
    if euid != 0:
        return None
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        raise SystemExit("serve-class started as root drops HAProxy to the user 'nobody', which this system lacks; "
                         "start it as an ordinary user") from None
    return nobody.pw_name, grp.getgrgid(nobody.pw_gid).gr_name


KEPT_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


def haproxy_env(environ: dict[str, str]) -> dict[str, str]:
    """HAProxy's environment: PATH and the locale, nothing else. The cookie secret is for the Streamlit replicas
    (one XSRF token valid on each); a balancer that held it, or a token of the user's shell, would leak it to
    anyone who reads /proc/<pid>/environ of a process that faces the network."""
    return {k: environ[k] for k in KEPT_ENV if k in environ}


def _global(maxconn: int, account: tuple[str, str] | None, jail: str | None) -> str:
    lines = ["global", f"  maxconn {maxconn}", "  noreuseport"]  # a port already served: an error, not shared
    if account is not None:
        lines += [f"  user {account[0]}", f"  group {account[1]}"]
        if jail is not None:
            lines.append(f"  chroot {jail}")
    return "\n".join(lines)


def _defaults() -> str:
    return f"""defaults
  mode http
  option http-ignore-probes
  option http-buffer-request
  timeout connect 5s
  timeout http-request {HTTP_REQUEST_S}s
  timeout http-keep-alive {KEEP_ALIVE_S}s
  timeout client {CLIENT_S}s
  timeout client-fin {FIN_S}s
  timeout server {SERVER_S}s
  timeout server-fin {FIN_S}s
  timeout tunnel {TUNNEL_S}s"""


def binds(host: str, port: int) -> list[str]:
    """HAProxy's bind lines. Every address of both families (`::`) is two sockets, IPv6 alone and IPv4 alone: on one
    dual-stack socket an IPv4 client is ::ffff:a.b.c.d, and the per-source table's /64 would count every IPv4 client
    of the world as one source (at the balancer)."""
    if host.strip("[]") == "::":
        return [f"bind :::{port} v6only", f"bind 0.0.0.0:{port}"]
    return [f"bind {host}:{port}"]


def _frontend(host: str, port: int, maxconn: int) -> str:
    bind = "\n  ".join(binds(host, port))
    return f"""frontend class
  {bind}
  maxconn {maxconn}
  stick-table type ipv6 size 100k expire 30s store conn_cur,conn_rate(10s),http_req_rate(10s)
  tcp-request connection track-sc0 src,ipmask(32,{IPV6_PREFIX})
  tcp-request connection reject if {{ sc0_conn_cur gt {CONN_PER_SOURCE} }}
  tcp-request connection reject if {{ sc0_conn_rate gt {RATE_PER_SOURCE} }}
  http-request deny deny_status 429 if {{ sc0_http_req_rate gt {HTTP_RATE_PER_SOURCE} }}
  http-request del-header X-Forwarded-For
  option forwardfor
  default_backend replicas"""


def _backend(backends: list[str]) -> str:
    servers = "\n".join(f"  server r{i} {b} check inter 2s cookie r{i}" for i, b in enumerate(backends, 1))
    return f"""backend replicas
  balance roundrobin
  cookie {COOKIE} insert indirect nocache httponly
  option httpchk GET /_stcore/health
{servers}"""


def haproxy_config(port: int, host: str, backends: list[str], *, maxconn: int = MAXCONN,
                   account: tuple[str, str] | None = None, jail: str | None = None) -> str:
    """HAProxy's configuration. HTTP mode (websockets upgrade through it and then live under `timeout tunnel`),
    round robin over the replicas, a cookie that keeps a browser on the replica that first answered it, health
    checks on Streamlit's own endpoint. Probes (a browser's speculative connection that never sends) close without
    a 408; `http-buffer-request` puts a request's first body bytes (up to a buffer) under `timeout http-request`
    too, so a slow body is no slowloris either. `account` and `jail`: see account_for (a jail needs root)."""
    return "\n".join([_global(maxconn, account, jail), _defaults(), _frontend(host, port, maxconn),
                      _backend(backends)]) + "\n"
