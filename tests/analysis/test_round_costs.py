"""Where a speculative round's time went (C16, K8): the draft steps and the verify pass in steps of the target
alone, beside what the prediction counts (k·c and 1), and which part explains the gap. Hand-computed cases."""

import pytest

from llmviz.analysis.serving import round_costs, round_gap
from llmviz.engine.serving.speculative import predicted_speedup


def result(draft_ms: float, verify_ms: float, rounds: int = 4, k: int = 4, target_ms: float = 2.0,
           cost_ratio: float = 0.25) -> dict:
    return {"rounds": [None] * rounds, "k": k, "draft_ms": draft_ms, "verify_ms": verify_ms,
            "target_alone_ms_per_token": target_ms, "cost_ratio": cost_ratio}


def test_a_round_as_counted_is_close():
    # 4 rounds of 4 draft steps at 0.5 ms (= 0.25 of a 2 ms target step) and a 2 ms verify: exactly the count
    costs = round_costs(result(draft_ms=4 * 4 * 0.5, verify_ms=4 * 2.0))
    assert costs["draft"] == pytest.approx(1.0) and costs["counted_draft"] == pytest.approx(1.0)
    assert costs["verify"] == pytest.approx(1.0) and costs["round"] == pytest.approx(2.0)
    assert costs["counted_round"] == pytest.approx(2.0) and round_gap(costs) == "close"


def test_a_dear_verify_and_a_cheap_one_are_told_apart():
    dear = round_costs(result(draft_ms=8.0, verify_ms=4 * 3.5))  # verify 1.75 target steps
    assert dear["verify"] == pytest.approx(1.75) and round_gap(dear) == "verify_dearer"
    cheap = round_costs(result(draft_ms=8.0, verify_ms=4 * 1.0))  # verify half a step
    assert cheap["verify"] == pytest.approx(0.5) and round_gap(cheap) == "verify_cheaper"
    slow_draft = round_costs(result(draft_ms=4 * 4 * 1.0, verify_ms=8.0))  # draft steps twice their cost alone
    assert slow_draft["draft"] == pytest.approx(2.0) and round_gap(slow_draft) == "draft_dearer"


def test_the_counted_round_is_the_predictions_denominator():
    """predicted_speedup = expected tokens per round / (k·c + 1): the same k·c + 1 as the counted round."""
    costs = round_costs(result(draft_ms=1.0, verify_ms=1.0, k=3, cost_ratio=0.2))
    assert costs["counted_round"] == pytest.approx(1.6)
    assert predicted_speedup(1.0, 3, 0.2) == pytest.approx(4 / costs["counted_round"])
