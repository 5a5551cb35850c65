"""Several browser sessions at once on one server: no exception, no cross-talk, no deadlock.

The harness is bench/concurrency.py: a list of (page, action) entries (ENTRIES) that every session walks, in
order, in its own browser context, each with its own prompt, seed and temperature. Here 3 sessions open Tokens
(each must show its own prompt's token count), press Next 4 times on Decode all at once (the temperature slider moved
halfway), then download their run from Trace: its tokens must equal the engine run alone with that session's
settings (a slow check, ~40 s). The other slow test walks every page app.py declares (Home checks the prompt's
token count too). Skipped where /usr/bin/chromium is absent."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import pytest
from ui_helpers import EMBEDDED_WEIGHTS, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "bench"))
import concurrency as harness
from browser_kit import CHROMIUM, AppServer

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (apt-get install -y chromium "
                       "fonts-noto-cjk; never `playwright install`)"),
    pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the harness runs the embedded llmviz-tiny"),
]


def test_every_declared_page_has_a_harness_entry():
    assert harness.missing_pages() == [], "add a (page, action) line to ENTRIES in bench/concurrency.py"


def run_at_once(tour: tuple[str, ...], sessions: int, steps: int, limit_s: float) -> tuple[dict, float]:
    began = time.perf_counter()
    with AppServer(timeout=120) as server:
        result = asyncio.run(harness.check(server, sessions, steps, tour, single=False, total_timeout_s=limit_s,
                                           warm=False))
    return result, time.perf_counter() - began


def assert_clean(result: dict, sessions: int, steps: int) -> None:
    at_once = result["concurrent"]
    seen = json.dumps({k: v for k, v in at_once.items() if k != "per_session"}, ensure_ascii=False)[:3000]
    assert at_once["timeouts"] == 0, seen  # a deadlock (or a hang) times out
    assert at_once["harness_errors"] == [], seen
    assert at_once["exceptions"] == 0, seen
    assert at_once["error_boxes"] == [], seen
    assert at_once["failed_page_checks"] == [], seen
    assert at_once["clicks_timed"] == sessions * steps, seen
    assert at_once["id_checks"] == sessions, seen  # every session's run came back from Trace
    assert at_once["mismatches"] == 0, [s for s in at_once["per_session"] if s["session"] in
                                        at_once["mismatched_sessions"]]
    assert result["server"]["tracebacks_in_log"] == 0, result["server"]["log_tail"]


@pytest.mark.slow  # ~40 s: with the slow checks; test_the_comparison_catches_another_sessions_tokens stays quick
def test_three_sessions_step_decode_at_once_each_as_alone():
    """Tokens shows each session its own prompt's count; Decode is stepped by all three at once; each run
    downloaded from Trace equals the engine alone. ~40 s on 2 shared cores."""
    sessions, steps = 3, 4
    result, wall = run_at_once(("tokens", "decode", "trace"), sessions, steps, limit_s=240)
    assert_clean(result, sessions, steps)
    assert wall < 300  # every session done inside the limit: none waited on another for good


@pytest.mark.slow
def test_three_sessions_walk_every_page_at_once():
    """The whole tour (every page app.py declares, in ENTRIES order): 1-3 min on 2 shared cores."""
    sessions, steps = 3, 2
    result, wall = run_at_once(tuple(stem for stem, _ in harness.ENTRIES), sessions, steps, limit_s=480)
    assert_clean(result, sessions, steps)
    assert wall < 540


def test_the_comparison_catches_another_sessions_tokens():
    """The cross-talk check is not vacuous: a session holding another session's run is a mismatch."""
    from llmviz import service
    from llmviz.trace.config import EngineConfig

    lm = service.models.load("llmviz-tiny", EngineConfig(device="auto", dtype="fp32"))
    mine, other = harness.plans(2, 3)
    client = harness.Client(mine, page=None, base="", prompt_tokens=0)
    client.temperatures = [mine.temperature] * (mine.steps + 1)
    client.trace = harness.engine_alone(lm, other, client.temperatures)
    client.drawn = [None] * len(client.temperatures)
    assert harness.compare_alone(lm, client)["ids_match"] is False
    client.trace = harness.engine_alone(lm, mine, client.temperatures)
    assert harness.compare_alone(lm, client)["ids_match"] is True
