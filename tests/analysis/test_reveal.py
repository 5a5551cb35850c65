"""Predict, then reveal (issue 23): a prediction's unit, how a measurement stands to the article's, where the
prediction fell, on hand-made judged claims."""

import pytest

from llmviz.analysis import reveal as rv
from llmviz.analysis.claim_effects import judged


@pytest.mark.parametrize("claim, shown, effect", [("K4", 1.8, 0.8), ("K2", 60.0, 0.6), ("K7", 40.0, 0.4),
                                                  ("K6", 0.5, -0.5)])
def test_a_prediction_in_the_effects_unit(claim, shown, effect):
    assert rv.effect_of(claim, shown) == pytest.approx(effect)
    assert rv.shown_of(claim, effect) == pytest.approx(shown)


@pytest.mark.parametrize("measured, expected", [(-0.05, "opposite"), (0.0, "opposite"), (0.2, "smaller"),
                                                (0.7, "about"), (0.9, "about"), (2.0, "larger")])
def test_how_a_measurement_stands_to_the_articles(measured, expected):
    assert rv.outcome(0.8, measured) == expected


def k4(decode_a: float, decode_b: float) -> dict:
    """A judged K4 from two decode timings (ms/token, a 10% spread each) and the cache bytes halved."""
    def spread(m):
        return {"median": m, "min": 0.9 * m, "max": 1.1 * m}

    return judged("K4", {"model": "m", "device": "cpu", "threads": 2, "specs": ["a", "b"],
                         "decode_ms_per_token": [spread(decode_a), spread(decode_b)],
                         "prefill_ms": [spread(1.0), spread(1.0)], "kv_bytes_allocated": [1000, 500]})


def test_two_results_two_sentences():
    fast, slow = rv.revealed(k4(10.0, 4.0), 1.5), rv.revealed(k4(10.0, 10.5), 1.5)
    assert fast["outcome"] == "larger" and fast["measured"] == pytest.approx(1.5)  # 10 / 4 - 1
    assert slow["outcome"] == "opposite" and slow["measured"] == pytest.approx(10 / 10.5 - 1)
    assert fast["verdict"] == "holds" and slow["verdict"] == "does_not_hold"
    # the prediction x2.5 (effect 1.5): inside the first range (9/4.4-1 .. 11/3.6-1), nearer the article's x1.8
    # than the second's x0.95, whose range it misses
    assert fast["prediction"] == "in_range" and slow["prediction"] == "nearer_article"
    assert rv.revealed(k4(10.0, 10.5), -0.05)["prediction"] == "in_range"
    assert rv.revealed(k4(10.0, 10.5), 0.3)["prediction"] == "nearer_here"


def test_no_prediction_and_no_measurement():
    e = rv.revealed(judged("K4", None, "error"), None)
    assert e["measured"] is None and e["outcome"] is None and e["prediction"] is None and e["article"] == 0.8


def test_every_claim_has_a_predicted_effect():
    from llmviz.analysis.claims import CLAIMS

    assert set(rv.PREDICTED) == set(CLAIMS)
    for claim_id, name in rv.PREDICTED.items():
        assert name in dict(CLAIMS[claim_id].effects)
        sc = rv.scale(claim_id)
        assert sc.low <= rv.shown_of(claim_id, rv.article_effect(claim_id)) <= sc.high
