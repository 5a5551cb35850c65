"""Where a speculative run's speed-up came from (C16, K8): the tokens a round yields and its cost in steps of the
target alone, the draft steps and the verify pass beside what the prediction counts, and which factor explains
the gap between the measured and the predicted speed-up. Hand-computed cases."""


import pytest

from llmviz.analysis.serving import CLOSE, predicted_speedup, round_costs, round_gap
from llmviz.trace.schedule import Round


def result(draft_ms: float, verify_ms: float, tokens: int, measured: float, predicted: float, rounds: int = 4,
           k: int = 4, target_ms: float = 2.0, cost_ratio: float = 0.25, last_drafts: int | None = None) -> dict:
    proposed = [(0,) * k] * (rounds - 1) + [(0,) * (k if last_drafts is None else last_drafts)]
    return {"rounds": [Round(p, 0, 0, 0.0, 0.0) for p in proposed], "k": k, "draft_ms": draft_ms,
            "verify_ms": verify_ms, "output_ids": [0] * tokens, "target_alone_ms_per_token": target_ms,
            "cost_ratio": cost_ratio, "measured_speedup": measured, "predicted_speedup": predicted}


def test_a_round_as_counted():
    # 4 rounds of 4 drafts at 0.5 ms (= 0.25 of a 2 ms target step) and a 2 ms verify; 5 tokens a round, all kept:
    # the prediction is 5 / (4 x 0.25 + 1) = 2.5, and so is the measurement
    costs = round_costs(result(draft_ms=4 * 4 * 0.5, verify_ms=4 * 2.0, tokens=20, measured=2.5, predicted=2.5))
    assert costs["draft"] == pytest.approx(1.0) and costs["counted_draft"] == pytest.approx(1.0)
    assert costs["verify"] == pytest.approx(1.0) and costs["round"] == pytest.approx(2.0)
    assert costs["counted_round"] == pytest.approx(2.0)
    assert costs["tokens"] == pytest.approx(5.0) and costs["counted_tokens"] == pytest.approx(5.0)
    assert round_gap(costs) == "close"


def test_a_last_round_that_drafts_fewer_is_counted_for_what_it_drafted():
    # drafts 4 + 4 + 4 + 2 = 14 at c = 0.25: 0.875 target steps a round are counted, not 4 x 0.25 = 1
    costs = round_costs(result(draft_ms=14 * 0.5, verify_ms=8.0, tokens=18, measured=2.3, predicted=2.5,
                               last_drafts=2))
    assert costs["counted_draft"] == pytest.approx(0.875) and costs["draft"] == pytest.approx(0.875)


@pytest.mark.parametrize("case, expected", [
    # speed-ups 10% or less apart: close, whatever the parts
    ({"draft_ms": 8.0, "verify_ms": 10.0, "tokens": 20, "measured": 2.5 * (1 - CLOSE), "predicted": 2.5}, "close"),
    # verify 1.75 target steps (7 ms / 4 rounds / 2 ms): the round 2.75 against 2, tokens as expected
    ({"draft_ms": 8.0, "verify_ms": 4 * 3.5, "tokens": 20, "measured": 5 / 2.75, "predicted": 2.5}, "verify_dearer"),
    # verify half a step: the round 1.5
    ({"draft_ms": 8.0, "verify_ms": 4 * 1.0, "tokens": 20, "measured": 5 / 1.5, "predicted": 2.5}, "verify_cheaper"),
    # draft steps twice their cost alone: 2 target steps a round instead of 1
    ({"draft_ms": 4 * 4 * 1.0, "verify_ms": 8.0, "tokens": 20, "measured": 5 / 3, "predicted": 2.5}, "draft_dearer"),
    ({"draft_ms": 4 * 4 * 0.1, "verify_ms": 8.0, "tokens": 20, "measured": 5 / 1.2, "predicted": 2.5},
     "draft_cheaper"),
    # costs as counted, 3 tokens a round instead of the 5 the acceptance rate promises
    ({"draft_ms": 8.0, "verify_ms": 8.0, "tokens": 12, "measured": 1.5, "predicted": 2.5}, "tokens_fewer"),
])
def test_the_factor_that_moves_the_speed_up_most(case, expected):
    assert round_gap(round_costs(result(**case))) == expected


def test_the_expected_tokens_are_the_predictions_numerator():
    """predicted_speedup = expected tokens per round / (k·c + 1): read back, the expected tokens of a 0.8
    acceptance rate at k = 3 are (1 - 0.8^4) / (1 - 0.8) = 2.952."""
    predicted = predicted_speedup(0.8, 3, 0.2)
    costs = round_costs(result(draft_ms=1.0, verify_ms=1.0, tokens=12, measured=1.0, predicted=predicted, k=3,
                               cost_ratio=0.2))
    assert costs["counted_tokens"] == pytest.approx((1 - 0.8**4) / (1 - 0.8))
