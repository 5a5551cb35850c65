"""The client this browser session counts as, for every limit the app sets (the class's joins, starts and code
checks; the budget of sessions and reruns): what Streamlit saw, read by the one rule in llmviz/classroom/clients.py."""

from __future__ import annotations

import streamlit as st

from llmviz.classroom import clients

KEY = "llmviz_client"  # the client this session counted as while its browser was connected
GONE = "gone"  # a session whose browser left before it ever ran connected: one client for all such, never loopback


def client() -> str:
    """This session's client: its peer's address (an IPv4 one as itself, also as `::ffff:` on a dual-stack bind; an
    IPv6 one by its /64), or behind a trusted balancer (LLMVIZ_TRUSTED_PROXIES, default loopback) the address the
    balancer saw. A run that goes on after its browser left has no headers and no peer (which Streamlit also says of
    a local peer): it counts as the client it was, never as the trusted loopback."""
    headers = st.context.headers
    if len(headers) == 0:  # no connection behind this run (a connected browser always sends Host)
        return st.session_state.get(KEY, GONE)
    forwarded = ",".join(headers.get_all("X-Forwarded-For"))  # several headers read as one list, in order
    found = st.session_state[KEY] = clients.client(st.context.ip_address, forwarded)
    return found
