"""The client this browser session counts as, for every limit the app sets (the class's joins, starts and code
checks; the budget of sessions and reruns): what Streamlit saw, read by the one rule in llmviz/classroom/clients.py."""

from __future__ import annotations

import streamlit as st

from llmviz.classroom import clients


def client() -> str:
    """This session's client: its peer's address (an IPv4 one as itself, also as `::ffff:` on a dual-stack bind; an
    IPv6 one by its /64), or behind a trusted balancer (LLMVIZ_TRUSTED_PROXIES, default loopback) the address the
    balancer saw."""
    forwarded = ",".join(st.context.headers.get_all("X-Forwarded-For"))  # several headers read as one list, in order
    return clients.client(st.context.ip_address, forwarded)
