"""A class behind HAProxy: `scripts/serve-class` with 2 replicas; 4 sessions over Streamlit's websocket
protocol through the balancer each step Decode 3 times, then download their run from the Trace page. The balancer's
cookie names the replica that holds each session (its download is found there, and only there), the sessions are
spread over both replicas, and each run's tokens are what the engine draws alone with that session's settings.
Slow (two cold replicas): CI runs it as its second step. Skipped where HAProxy is absent."""

from __future__ import annotations

import asyncio
import sys
import urllib.error
import urllib.parse
import urllib.request

import pytest
from ui_helpers import EMBEDDED_WEIGHTS, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "bench"))
import concurrency as harness
from browser_kit import free_port
from serve_class import COOKIE, Class, find_haproxy
from st_session import StClient

HAPROXY = find_haproxy()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(HAPROXY is None, reason="HAProxy is absent (apt-get install -y haproxy)"),
    pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the sessions run the embedded llmviz-tiny"),
]
STEPS = 3


def fetch(url: str, cookie: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""


async def one_session(port: int, plan) -> dict:
    c = StClient(port, "decode", urllib.parse.urlencode(plan.query()))
    try:
        await c.open()
        steps = [c.metrics().get("Step")]
        for _ in range(STEPS):
            await c.click("dec_next")
            steps.append(c.metrics().get("Step"))
        await c.goto("trace")
        url = c.downloads()["trace_download"]
    finally:
        await c.close()
    return {"plan": plan, "steps": steps, "cookies": dict(c.cookies), "url": url}


async def class_of(port: int, plans) -> list[dict]:
    return await asyncio.gather(*(one_session(port, p) for p in plans))


@pytest.fixture(scope="module")
def served_class(tmp_path_factory):
    """(each session's record, {replica: its port}, every download as (through the balancer, from r1, from r2))."""
    port = free_port()
    with Class(2, port, log_dir=tmp_path_factory.mktemp("class")) as served:
        sessions = asyncio.run(class_of(port, harness.plans(4, STEPS)))
        ports = {f"r{i}": p for i, p in enumerate(served.replica_ports, 1)}
        for s in sessions:
            cookie = "; ".join(f"{k}={v}" for k, v in s["cookies"].items())
            s["through"] = fetch(f"http://127.0.0.1:{port}{s['url']}", cookie)
            s["direct"] = {r: fetch(f"http://127.0.0.1:{p}{s['url']}")[0] for r, p in ports.items()}
    return sessions


def test_each_session_is_pinned_to_the_replica_that_holds_it(served_class):
    replicas = [s["cookies"].get(COOKIE) for s in served_class]
    assert sorted(set(replicas)) == ["r1", "r2"], replicas  # round robin: the class is spread over both
    for s in served_class:
        assert s["steps"] == ["0", "1", "2", "3"], s["steps"]  # every click reached the session's own replica
        assert s["through"][0] == 200 and s["through"][1][:2] == b"PK"  # its run, a zip, through the balancer
        holder = s["cookies"][COOKIE]
        assert s["direct"] == {r: 200 if r == holder else 404 for r in ("r1", "r2")}  # held there, only there


def test_each_session_gets_the_tokens_it_gets_alone(served_class):
    from llmviz import service
    from llmviz.trace.config import EngineConfig
    from llmviz.trace.records import trace_from_zip

    lm = service.models.load("llmviz-tiny", EngineConfig(device="cpu", dtype="fp32"))
    for s in served_class:
        plan, trace = s["plan"], trace_from_zip(s["through"][1])
        alone = harness.engine_alone(lm, plan, [plan.temperature] * (STEPS + 1))
        assert trace.prompt == plan.prompt and trace.seed == plan.seed
        assert [int(x.sampled[0]) for x in trace.steps] == [int(x.sampled[0]) for x in alone.steps]
