"""Predict, then reveal: a prediction's unit, how a measurement stands to the article's, where the
prediction fell, on hand-made judged claims."""

import pytest

from llmviz.analysis import reveal as rv
from llmviz.analysis.claim_effects import judged


@pytest.mark.parametrize("claim, shown, effect", [("K4", 1.8, 0.8), ("K2", 60.0, 0.6), ("K7", 40.0, 0.4),
                                                  ("K6", 0.5, -0.5)])
def test_a_prediction_in_the_effects_unit(claim, shown, effect):
    assert rv.effect_of(claim, shown) == pytest.approx(effect)
    assert rv.shown_of(claim, effect) == pytest.approx(shown)


def k4(decode_a, decode_b) -> dict:
    """A judged K4 from two sides' decode timings (ms/token, one per round, paired; each given list twice: six
    rounds, the fewest with a 95% interval) and the cache bytes halved."""
    def spread(ms):
        ms = [ms] * 6 if isinstance(ms, int | float) else ms * 2
        return {"median": sorted(ms)[len(ms) // 2], "min": min(ms), "max": max(ms), "all": ms}

    return judged("K4", {"model": "m", "device": "cpu", "threads": 2, "specs": ["a", "b"],
                         "decode_ms_per_token": [spread(decode_a), spread(decode_b)],
                         "prefill_ms": [spread(1.0), spread(1.0)], "kv_bytes_allocated": [1000, 500]})


def speed(claim: dict) -> dict:
    return next(e for e in claim["effects"] if e["name"] == "decode_speedup")


@pytest.mark.parametrize("b, verdict, expected", [
    ([10.6, 10.5, 10.4], "does_not_hold", "opposite"),  # slower, every round
    ([10.1, 9.9, 10.0], "does_not_hold", "none"),  # x1.00 within its rounds: no effect, not "the opposite"
    ([8.3, 8.4, 8.2], "does_not_hold", "smaller"),  # x1.2: under half the article's x1.8
    ([6.0, 6.2, 5.9], "holds", "about"),  # x1.67: within 25% of x1.8
    ([3.0, 3.1, 2.9], "holds", "larger"),  # x3.3
    ([6.5, 8.0, 5.0], "cannot_tell", "cannot_tell"),  # x1.25 to x2.0: reaches both sides of x1.4
])
def test_the_sentence_is_read_from_the_verdict(b, verdict, expected):
    """Each outcome from a judged claim (A at 10 ms every round): the sentence's outcome never contradicts the
    box's verdict ("K1 在此不成立 ... 接近文章的 ×1.94：这一点在 cpu 上也成立")."""
    claim = k4(10.0, b)
    assert speed(claim)["verdict"] == verdict
    assert rv.outcome(speed(claim), claim["verdict"]) == expected


def test_a_part_that_holds_under_a_claim_that_does_not():
    claim = k4(10.0, [6.0, 6.2, 5.9])
    assert rv.outcome(speed(claim), "does_not_hold") == "part_holds"


def test_two_results_two_sentences():
    fast, slow = rv.revealed(k4(10.0, [4.0, 3.9, 4.1]), 1.5), rv.revealed(k4(10.0, [10.5, 10.6, 10.4]), 1.5)
    assert fast["outcome"] == "larger" and fast["measured"] == pytest.approx(1.5)  # 10 / 4 - 1
    assert slow["outcome"] == "opposite" and slow["measured"] == pytest.approx(10 / 10.5 - 1)
    assert fast["verdict"] == "holds" and slow["verdict"] == "does_not_hold" and fast["rounds"] == 6
    # the prediction x2.5 (effect 1.5): inside the first interval (10/4.1-1 .. 10/3.9-1), nearer the article's
    # x1.8 than the second's x0.95, whose interval it misses
    assert fast["prediction"] == "in_range" and slow["prediction"] == "nearer_article"
    assert rv.revealed(k4(10.0, [10.5, 10.6, 10.4]), -0.05)["prediction"] == "in_range"
    assert rv.revealed(k4(10.0, [10.5, 10.6, 10.4]), 0.3)["prediction"] == "nearer_here"


def test_a_prediction_the_slider_cannot_set_closer_is_in_range():
    """Issue 36's K7: prediction, measurement and article all +40 points as shown, the measurement 0.404 counted:
    the prediction 0.40 lies within half the slider's step (1 point) of it."""
    claim = {"id": "K7", "verdict": "holds", "effects": [
        {"name": "utilization_gain", "article": 0.4, "verdict": "holds", "reason": "holds_exact", "measured": 0.404,
         "low": 0.404, "high": 0.404, "rounds": 0}]}
    assert rv.revealed(claim, 0.40)["prediction"] == "in_range"
    assert rv.revealed(claim, 0.42)["prediction"] == "nearer_here"


def test_no_prediction_and_no_measurement():
    e = rv.revealed(judged("K4", None, "error"), None)
    assert e["measured"] is None and e["outcome"] is None and e["prediction"] is None and e["article"] == 0.8


def test_every_claim_has_a_predicted_effect_its_slider_reaches():
    from llmviz.analysis.claim_spec import declared

    for claim_id, claim in declared().items():
        assert rv.effect_name(claim_id) in claim.article_effects
        sc = rv.scale(claim_id)
        assert sc.low <= rv.shown_of(claim_id, rv.article_effect(claim_id)) <= sc.high
