"""Closed browser sessions let go of their runs on time.

Streamlit keeps a closed tab's session for server.disconnectedSessionTTL seconds so that a reconnecting browser
finds its state; it keeps them in a TTL cache that drops an expired entry only on a later write to it (its own
docstring: "only actually removed by a write, by expire(), or by a length query"). On a quiet server a closed
session, its run, KV cache and tensors then stayed for minutes after its TTL (the red team saw ~6 minutes), until
another session happened to connect. The app's collector (ui/server.collect_forever) calls `expire_closed` before
each collection, so a closed session's memory goes within one collector period after its TTL.

This reads Streamlit's runtime internals (checked against 1.67: Runtime._session_mgr, a WebsocketSessionManager
with _storage_lock and _session_storage, a MemorySessionStorage over a TTLCache with expire()); where any of it is
missing it does nothing and says so by returning None, and Streamlit's own lazy expiry still applies.
"""

from __future__ import annotations


def expire_closed() -> int | None:
    """Drop the closed sessions whose TTL has passed; how many were dropped, or None where Streamlit does not
    expose what this needs (another version, or no runtime: AppTest, the CLI)."""
    try:
        from streamlit.runtime import Runtime

        if not Runtime.exists():
            return None
        manager = Runtime.instance()._session_mgr
        lock, cache = manager._storage_lock, manager._session_storage._cache
    except (AttributeError, ImportError, RuntimeError):
        return None
    if not hasattr(cache, "expire"):
        return None
    with lock:  # the TTL cache is not thread-safe: the manager's own lock guards every use of it
        return len(cache.expire())
