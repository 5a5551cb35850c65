"""Issue 47, finding 5 ("one address starves the class"): N sessions from one address rerun the lesson page as fast
as they can; what it costs the server, what a visitor from another address waits meanwhile. Prints one JSON object.

    python bench/rerun_flood.py [--sessions 32] [--seconds 15] [--budget default|off|K]

Starts `streamlit run app.py` on 127.0.0.1 with LLMVIZ_CLIENT_BUDGET=--budget (`off`: no budget, the code as it
was before; `default`: the variable unset) and drives it over Streamlit's websocket protocol (scripts/st_session.py,
no browser). Each emulated session names its address in X-Forwarded-For, which the app believes from a loopback
peer (LLMVIZ_TRUSTED_PROXIES' default, as behind serve-class's HAProxy): the flood's sessions are 203.0.113.66, the
visitor 198.51.100.7. Phases:

- quiet: the visitor alone reruns the lesson page once a second for --quiet seconds;
- flood: the N sessions open the page, then each sends its next rerun as soon as its last one finished, for
  --seconds, while the visitor goes on. The server's CPU seconds (psutil: user + system of the server process and
  its children) over the flood, per wall second; the flood's runs served per second, and how many of them showed
  the wait (`rate.wait`) instead of the page; the visitor's run times (p50, p95); and the same per --window seconds
  (the address's burst of 360 runs is spent in the first ~20 s, then it gets its rate: judge the later windows).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts"), str(ROOT / "bench")]

from browser_kit import AppServer  # noqa: E402
from common import cpu_seconds, family_total, machine, percentile  # noqa: E402
from st_session import StClient  # noqa: E402
from websockets.asyncio.client import connect  # noqa: E402

from llmviz.classroom.client_budget import ENV  # noqa: E402
from llmviz.i18n.translator import translate  # noqa: E402

FLOOD_ADDRESS, VISITOR_ADDRESS = "203.0.113.66", "198.51.100.7"
WAIT_PREFIX = translate("en", "rate.wait", seconds=0).split(".")[0]  # "Too many requests ... at once"


class ForwardedClient(StClient):
    """A session whose balancer (a trusted loopback peer) says it comes from `address`."""

    def __init__(self, port: int, address: str, page: str = "lesson", query: str = "lang=en"):
        super().__init__(port, page, query)
        self.address = address

    async def connect(self) -> None:  # StClient.connect, with the balancer's header
        def health() -> None:
            import urllib.request

            with urllib.request.urlopen(f"http://{self.base}/_stcore/health", timeout=30) as r:
                for header in r.headers.get_all("Set-Cookie") or []:
                    name, _, rest = header.partition("=")
                    self.cookies[name.strip()] = rest.split(";")[0]

        await asyncio.to_thread(health)
        xsrf = self.cookies.get("_streamlit_xsrf", "")
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        self.ws = await connect(
            f"ws://{self.base}/_stcore/stream", subprotocols=["streamlit", xsrf or "PLACEHOLDER_AUTH_TOKEN"],
            additional_headers={"Origin": f"http://{self.base}", "X-Forwarded-For": self.address,
                                **({"Cookie": cookie} if cookie else {})},
            max_size=None, compression=None)

    def waiting(self) -> bool:
        """The page shows the budget's wait instead of itself."""
        return any(e.kind == "alert" and WAIT_PREFIX in e.proto.body for e in self.elements.values())


def cpu(pid: int) -> float:
    return family_total([pid], cpu_seconds)


async def visitor_loop(c: ForwardedClient, until: float, times: list[float], at: list[float] | None = None) -> None:
    """The visitor reruns the page once a second: each run's seconds (and when it ended, into `at`)."""
    while time.perf_counter() < until:
        began = time.perf_counter()
        times.append(await c.rerun())
        if at is not None:
            at.append(time.perf_counter())
        await asyncio.sleep(max(0.0, 1.0 - (time.perf_counter() - began)))


async def hammer(c: ForwardedClient, until: float, out: dict) -> None:
    while time.perf_counter() < until:
        await c.rerun()
        out["runs"] += 1
        out["waits"] += c.waiting()


async def flood(args, port: int, pid: int) -> dict:
    warm = ForwardedClient(port, "192.0.2.1")
    warm_s = await warm.open()  # imports, the model: untimed
    await warm.close()
    visitor = ForwardedClient(port, VISITOR_ADDRESS)
    await visitor.open()
    quiet: list[float] = []
    await visitor_loop(visitor, time.perf_counter() + args.quiet, quiet)
    sessions = [ForwardedClient(port, FLOOD_ADDRESS) for _ in range(args.sessions)]
    opened = await asyncio.gather(*(c.open() for c in sessions), return_exceptions=True)
    failed = [repr(e)[:200] for e in opened if isinstance(e, BaseException)]
    live = [c for c, o in zip(sessions, opened, strict=True) if not isinstance(o, BaseException)]
    out, during, ended, windows = {"runs": 0, "waits": 0}, [], [], []
    cpu0, began = cpu(pid), time.perf_counter()
    until = began + args.seconds

    async def every_window() -> None:  # the server's CPU, runs and waits of each --window seconds
        last = (cpu0, began, 0, 0)
        while time.perf_counter() < until - 0.5:
            await asyncio.sleep(min(args.window, max(0.0, until - time.perf_counter())))
            now = (cpu(pid), time.perf_counter(), out["runs"], out["waits"])
            span = now[1] - last[1]
            visitor = [s for s, t in zip(during, ended, strict=True) if last[1] <= t < now[1]]
            windows.append({"from_s": round(last[1] - began), "cpu_s_per_s": round((now[0] - last[0]) / span, 3),
                            "runs_per_s": round((now[2] - last[2]) / span, 1),
                            "waits_per_s": round((now[3] - last[3]) / span, 1),
                            "visitor_p50_s": round(statistics.median(visitor), 3) if visitor else None})
            last = now

    await asyncio.gather(visitor_loop(visitor, until, during, ended), every_window(),
                         *(hammer(c, until, out) for c in live))
    wall, used = time.perf_counter() - began, cpu(pid) - cpu0
    for c in (*live, visitor):
        with contextlib.suppress(Exception):
            await c.close()
    return {
        "budget": args.budget, "sessions": args.sessions, "opened": len(live), "open_failures": failed[:3],
        "warm_open_s": round(warm_s, 2), "flood_s": round(wall, 1),
        "server_cpu_s": round(used, 2), "server_cpu_s_per_s": round(used / wall, 3),
        "flood_runs": out["runs"], "flood_runs_per_s": round(out["runs"] / wall, 1),
        "flood_runs_shown_the_wait": out["waits"],
        "flood_pages_drawn_per_s": round((out["runs"] - out["waits"]) / wall, 1),
        "visitor_quiet_p50_s": round(statistics.median(quiet), 3) if quiet else None,
        "visitor_flood_p50_s": round(statistics.median(during), 3) if during else None,
        "visitor_flood_p95_s": round(percentile(during, 95), 3) if during else None,
        "visitor_waited": visitor.waiting(), "windows": windows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--quiet", type=float, default=5, help="seconds of the visitor alone first")
    parser.add_argument("--window", type=float, default=10, help="seconds of each window of the flood's figures")
    parser.add_argument("--budget", default="default", help="LLMVIZ_CLIENT_BUDGET: default (unset), off, or K")
    args = parser.parse_args()
    os.environ.pop(ENV, None)
    if args.budget != "default":
        os.environ[ENV] = args.budget
    with AppServer(timeout=120) as server:
        result = asyncio.run(flood(args, server.port, server.proc.pid))
    print(json.dumps({"benchmark": "rerun_flood", "machine": machine("cpu"),
                      "served": "one `streamlit run app.py` on 127.0.0.1, the lesson page; clients on the same machine "
                                "(their CPU is not the server's)", **result}, indent=2))


if __name__ == "__main__":
    main()
