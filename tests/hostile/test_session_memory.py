"""Issue 35, finding 1, on a real public server: long-prompt sessions of the GPT-2-124M shape each hold about one
session budget, not the 568 MB each the red team measured, and a closed session's memory goes within a collector
period after its TTL, not minutes later. RSS as the OS reports it (psutil), through bench/hostile_sessions.py, the
README's figures' own bench. Slow: it starts a server and loads the 124M-parameter shape."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_long_prompt_sessions_hold_about_one_budget_each_and_go_when_closed(monkeypatch):
    sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "scripts")]
    from browser_kit import AppServer
    from hostile_sessions import sessions

    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    args = SimpleNamespace(sessions=3, tokens=505, ttl=3, settle=20)
    with AppServer(timeout=180, extra=("--server.disconnectedSessionTTL", str(args.ttl))) as server:
        out = asyncio.run(sessions(args, server.port, server.proc.pid))
    assert os.environ["LLMVIZ_PUBLIC"] == "1" and out["exceptions"] == []
    budget = out["session_budget_mb"]
    assert budget == 64
    # What a session holds is bounded by the budget (KV cache 37.7 MB + the tensors that fit); the process's RSS
    # adds the heap's own overhead: a quarter more is allowed. Before the fix: +568 MB per session.
    assert out["per_session_mb"] <= 1.25 * budget, out
    assert out["per_session_mb"] >= 30, out  # the cache itself (37.7 MB) is there: the runs really ran
    rss = out["rss_mb"]
    assert rss["after_close"] - rss["before"] <= 0.5 * (rss["all_open"] - rss["before"]), out  # most of it went
