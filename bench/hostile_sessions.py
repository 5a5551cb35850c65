"""Issue 35, finding 1: long-prompt sessions of the GPT-2-124M shape opened at once on a public server, each within
the session budget. JSON out.

    python bench/hostile_sessions.py --sessions 6 --tokens 505

Starts `LLMVIZ_PUBLIC=1 streamlit run app.py` here, warms it (one session on the same link, closed, then a settle),
then opens N sessions at once over Streamlit's websocket protocol (scripts/st_session.py, no browser) on a Home link
with `model=gpt2-124m-random` and a prompt of about --tokens tokens, keeps them open, and closes them. The server's
RSS (psutil, the process and its children) is sampled every 0.25 s: before the N sessions, the peak while they
open, while all are open, and after they close (Streamlit keeps a closed session for server.disconnectedSessionTTL
seconds; the bench starts the server with --server.disconnectedSessionTTL 5 and waits past it). Each session's share
is (RSS with all open - RSS before) / N, compared with LLMVIZ_TRACE_BUDGET_MB (what one session may hold: its KV
cache and its run's tensors). Before the per-session budget: +568 MB per session (the prefill's tensors, 555 MB,
all kept).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
import urllib.parse
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "bench"), str(ROOT)]
from browser_kit import AppServer  # noqa: E402
from common import family_total, machine  # noqa: E402
from st_session import StClient  # noqa: E402

from llmviz.ui.public import Policy  # noqa: E402


def rss(pid: int) -> int:
    return int(family_total([pid], lambda p: p.memory_info().rss))


def cpu(pid: int) -> float:
    with contextlib.suppress(psutil.Error):
        t = psutil.Process(pid).cpu_times()
        return t.user + t.system
    return 0.0


async def peak_while(pid: int, work) -> tuple[object, int]:
    """Run `work` (a coroutine) and return its result with the server's peak RSS meanwhile."""
    peak, done = 0, asyncio.Event()

    async def sample():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss(pid))
            await asyncio.sleep(0.25)

    sampler = asyncio.create_task(sample())
    try:
        result = await work
    finally:
        done.set()
        await sampler
    return result, max(peak, rss(pid))


async def sessions(args, port: int, pid: int) -> dict:
    prompt = " ".join(["hello"] * (args.tokens // 2))  # "hello" and a space: two tokens of the embedded tokenizer
    query = urllib.parse.urlencode({"model": "gpt2-124m-random", "prompt": prompt, "lang": "en"})
    warm = StClient(port, "", query)
    warm_s = await warm.open()
    await warm.close()
    await asyncio.sleep(args.ttl + 3)
    before, cpu0 = rss(pid), cpu(pid)
    clients = [StClient(port, "", query) for _ in range(args.sessions)]
    opened, peak = await peak_while(pid, asyncio.gather(*(c.open() for c in clients)))
    await asyncio.sleep(1)
    all_open, cpu_open = rss(pid), cpu(pid) - cpu0
    errors = [e.proto.message for c in clients for e in c.elements.values() if e.kind == "exception"]
    for c in clients:
        await c.close()
    closed, after_s = time.monotonic(), []  # RSS every 5 s after the close, until --settle seconds
    while time.monotonic() - closed < args.settle:
        await asyncio.sleep(5)
        after_s.append([round(time.monotonic() - closed), round(rss(pid) / 1e6)])
    after = rss(pid)
    budget = Policy.from_env(dict(os.environ, LLMVIZ_PUBLIC="1")).trace_budget_mb
    share = (all_open - before) / args.sessions / 1e6
    return {
        "sessions": args.sessions, "prompt_tokens_about": args.tokens, "warm_open_s": round(warm_s, 2),
        "open_s": [round(s, 2) for s in opened], "server_cpu_s_opening_all": round(cpu_open, 2),
        "rss_mb": {"before": round(before / 1e6), "peak": round(peak / 1e6), "all_open": round(all_open / 1e6),
                   "after_close": round(after / 1e6)}, "after_close_every_5s": after_s,
        "per_session_mb": round(share, 1), "peak_per_session_mb": round((peak - before) / args.sessions / 1e6, 1),
        "session_budget_mb": budget, "within_budget": share <= budget, "exceptions": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--tokens", type=int, default=505)
    parser.add_argument("--ttl", type=float, default=5, help="server.disconnectedSessionTTL, seconds")
    parser.add_argument("--settle", type=float, default=30, help="seconds the RSS is followed after the close")
    args = parser.parse_args()
    os.environ["LLMVIZ_PUBLIC"] = "1"
    with AppServer(timeout=120, extra=["--server.disconnectedSessionTTL", str(args.ttl)]) as server:
        result = asyncio.run(sessions(args, server.port, server.proc.pid))
    print(json.dumps({"benchmark": "hostile_sessions", "machine": machine("cpu"),
                      "served": "one LLMVIZ_PUBLIC=1 streamlit run app.py started here, default settings",
                      "measured": "server RSS and CPU with psutil (process and children), clients on the same machine",
                      **result}, indent=2))


if __name__ == "__main__":
    main()
