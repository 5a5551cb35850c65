"""The budget per client on a real server: `streamlit run app.py` with its own runtime and
session ids (AppTest's stand-in is not limited, see test_client_gate.py), driven over Streamlit's websocket
protocol from two addresses named in X-Forwarded-For (a loopback peer is a trusted balancer). The address's budget is
set to a hundredth of a class (a burst of 4 page runs, then one each 5 s): the 5th run of one address shows the wait
and none of the lesson, after holding its session HOLD_S; another address's visitor gets the page."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest
from ui_helpers import EMBEDDED_WEIGHTS, ROOT

from llmviz.classroom.client_budget import ENV
from llmviz.ui.client_gate import HOLD_S

sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "bench")]
from browser_kit import AppServer  # noqa: E402
from rerun_flood import ForwardedClient  # noqa: E402

pytestmark = [pytest.mark.slow,  # a server of its own: ~20 s on 2 shared cores
              pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the lesson runs the embedded llmviz-tiny")]


def lesson_drawn(c: ForwardedClient) -> bool:
    return "lesson_next" in c.buttons()


async def walk(port: int) -> dict:
    c = ForwardedClient(port, "203.0.113.9")
    await c.open()
    drawn = [lesson_drawn(c)]
    for _ in range(3):  # the address's runs 2-4
        await c.rerun()
        drawn.append(lesson_drawn(c) and not c.waiting())
    for _ in range(3):  # the 5th: its token 5 s away, past the 2 s a run may queue (on a slow machine a run or
        began = time.perf_counter()  # two more may still queue for a token that came meanwhile)
        await c.rerun()
        held = time.perf_counter() - began
        if c.waiting():
            break
    refused = {"waiting": c.waiting(), "lesson": lesson_drawn(c), "held_s": held,
               "exceptions": [e for e in c.elements.values() if e.kind == "exception"]}
    visitor = ForwardedClient(port, "198.51.100.7")
    await visitor.open()
    out = {"drawn": drawn, "refused": refused, "visitor": lesson_drawn(visitor) and not visitor.waiting()}
    for x in (c, visitor):
        await x.close()
    return out


def test_a_real_server_refuses_the_address_over_its_budget_and_serves_another(monkeypatch):
    monkeypatch.setenv(ENV, "0.01")
    with AppServer(timeout=120) as server:
        out = asyncio.run(walk(server.port))
    assert out["drawn"] == [True] * 4
    refused = out["refused"]
    assert refused["waiting"] and not refused["lesson"] and refused["exceptions"] == []
    assert refused["held_s"] >= HOLD_S  # the session slept through its hold, then the run ended
    assert out["visitor"]
