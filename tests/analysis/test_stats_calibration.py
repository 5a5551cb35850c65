"""The exact statistics rule calibrated by simulation (bench/stats_calibration.py, fewer trials, a fixed
seed): the median interval covers at least 95% under a skewed, a heavy-tailed and a drifting law, and the rule run
as labs/rounds.until_decided runs it says "holds" at the band's edge at most 2.5% of the time over all its looks.
Each share is held to its target within three standard errors of the trial count: the simulation's own noise."""

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import stats_calibration as calibration  # noqa: E402

TRIALS = 2000
SEED = 48


def slack(share: float) -> float:
    return 3 * math.sqrt(share * (1 - share) / TRIALS)


@pytest.fixture(scope="module")
def result():
    return calibration.calibrate(TRIALS, SEED, old_trials=0, batches=(3, 5))


def test_the_median_interval_covers_under_every_law(result):
    assert min(result["attained_level"].values()) >= 0.95  # the exact levels: the guarantee
    for law, shares in result["coverage"].items():
        assert set(shares) == set(range(6, 31))
        low = {n: share for n, share in shares.items() if share < 0.95 - slack(0.95)}
        assert not low, f"{law}: coverage below 95% beyond the simulation's noise at {low}"


@pytest.mark.parametrize("batch", [3, 5])
def test_holds_at_the_edge_stays_within_its_error_over_every_look(result, batch):
    assert result["false_holds_at_edge_exact"][batch] <= 0.025
    for law, cases in result["sequential"][batch].items():
        assert cases["edge"]["holds"] <= 0.025 + slack(0.025), law


@pytest.mark.parametrize("batch", [3, 5])
def test_no_effect_almost_never_holds_and_a_clear_effect_is_decided(result, batch):
    for law, cases in result["sequential"][batch].items():
        assert cases["no_effect"]["holds"] <= 0.005, law
        far = cases["far_inside"]
        assert far["holds"] >= 0.99 and far["mean_rounds"] <= 15, (law, far)


def test_the_simulation_is_seeded():
    a = calibration.calibrate(200, 7, batches=(3,))
    assert a == calibration.calibrate(200, 7, batches=(3,))
