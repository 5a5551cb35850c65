"""The C18 sweep (llmviz/labs/decode_slope.py) on the embedded model: its lengths from 16 tokens to the
whole context, every round kept, the cache it timed holding exactly those tokens (one token's K and V counted by
hand), the bandwidth probed, and the lesson's §4.2 step drawing it (this session's run, then the server's)."""

import pytest
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file

from llmviz.analysis.decode_slope import spread_lengths

pytestmark = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="runs the embedded model")


@pytest.fixture(scope="module")
def result():
    from llmviz import service
    from llmviz.trace.config import EngineConfig

    lm = service.models.load("llmviz-tiny", EngineConfig(device="cpu", capture="off"))
    return service.measure.decode_slope(lm, points=4, steps=2, repeats=2)


def test_the_lengths_by_hand():
    """512 - 2 = 510 the longest; 16 + i x 494 / 3: 16, 180.7, 345.3, 510."""
    assert spread_lengths(512, 4, 2) == [16, 181, 345, 510]
    assert spread_lengths(10, 4, 2) == [8]  # a context with no room for the sweep: its one length


def test_the_sweep_keeps_every_round_and_the_cache_it_timed(result):
    assert result["lengths"] == [16, 181, 345, 510] and list(result["layouts"]) == ["contiguous"]
    assert [len(r) for r in result["ms_per_token"]["contiguous"]["all"]] == [2, 2, 2, 2]
    # llmviz-tiny in fp32: K and V of 4 layers x 8 heads x 32 = 2,048 elements, 8,192 B a token
    assert [k["bytes_used"] for k in result["kv"]["contiguous"]] == [8192 * n for n in (16, 181, 345, 510)]
    assert result["element"] == "fp32" and result["bandwidth"]["gb_per_s"] > 0
    assert result["model_config"]["num_layers"] == 4


def test_the_lessons_step_draws_the_sweep(result):
    """§4.2.1: the kept sweep's chart, its slope with the interval and the bytes' slope (sentence by the slope's
    verdict); a second session, which ran nothing, sees the server's latest, labelled."""
    from llmviz.analysis.decode_slope import slowdown
    from llmviz.i18n.translator import translate
    from llmviz.ui import server
    from llmviz.ui.latency.slowdown_view import LATEST, MODEL, SLOPE_KEY

    s = slowdown(result, result["model_config"])
    assert s.verdict == "few" and s.measured.rounds == 2  # two rounds: no interval, the sentence says so
    at = open_app(page_file("lesson"), model="llmviz-tiny", lesson="4.2.1", lang="en")
    at.session_state[SLOPE_KEY] = (MODEL, result)
    at.run()
    texts = [m.value for m in at.markdown]
    head = translate("en", f"lesson.slope_{s.verdict}", slope=1000 * s.measured.value, low=1000 * s.measured.low,
                     high=1000 * s.measured.high, n=2, level="100.0%", first=s.kv_share_first, last=s.kv_share_last,
                     shortest=16, longest=510)
    assert any(x.startswith(head[:60]) and "The bytes predict" in x for x in texts), texts
    server.latest_claims().put(LATEST, {"result": result, "when": "2026-12-05 06:00:00"})
    other = open_app(page_file("lesson"), model="llmviz-tiny", lesson="4.2.1", lang="en")
    assert any("This server's latest sweep, 2026-12-05 06:00:00." in c.value for c in other.caption)
