"""The claims' verdict rule and the prefill fit (issue 11, K1-K11) on synthetic measurements either side of each
threshold, and a fit that must recover coefficients it was not given."""

import numpy as np
import pytest

from llmviz.analysis.claims import CANNOT, CLAIMS, DOES_NOT_HOLD, HOLDS, Effect, claim_verdict, judge, saving, speedup
from llmviz.analysis.prefill_fit import fit_prefill


def test_the_pages_show_each_claims_statement_as_the_json_gives_it():
    """The page shows the catalogue's claims.article.K* (so in Chinese too); in English it is the report's text."""
    from llmviz.i18n.translator import catalog, translate

    assert all(translate("en", f"claims.article.{k}") == c.article for k, c in CLAIMS.items())
    assert all(f"claims.article.{k}" in catalog("zh") for k in CLAIMS)


def test_every_claim_of_the_concept_map_is_there():
    assert list(CLAIMS) == [f"K{i}" for i in range(1, 12)]
    assert dict(CLAIMS["K4"].effects) == {"kv_memory_saved": 0.5, "decode_speedup": 0.8}  # "halved", "1.8x"
    assert dict(CLAIMS["K1"].effects)["doubling_256_to_512"] == pytest.approx(68 / 35 - 1)


@pytest.mark.parametrize("effect, verdict, reason", [
    (Effect(0.41, 0.30, 0.50), HOLDS, "holds"),  # just over half of the article's 0.8, range clear of zero
    (Effect(0.39, 0.30, 0.50), DOES_NOT_HOLD, "too_small"),  # just under half
    (Effect(-0.20, -0.30, -0.10), DOES_NOT_HOLD, "opposite_sign"),  # slower, where the article says faster
    (Effect(0.0, 0.0, 0.0), DOES_NOT_HOLD, "no_effect"),
    (Effect(0.50, -0.05, 0.90), DOES_NOT_HOLD, "within_spread"),  # big enough, but the repeats straddle zero
    (Effect(0.50, 0.01, 0.90), HOLDS, "holds"),
    (None, CANNOT, "not_measured"),
])
def test_the_verdict_rule_either_side_of_each_threshold(effect, verdict, reason):
    assert judge(0.8, effect) == (verdict, reason)


K1 = 68 / 35 - 1  # the article's doubling: x1.94


@pytest.mark.parametrize("ratio, verdict, reason", [
    (1.46, DOES_NOT_HOLD, "too_small"),  # under half the article's effect (x1.47)
    (1.48, HOLDS, "holds"),
    (2.0, HOLDS, "holds"),  # exactly linear
    (2.40, HOLDS, "holds"),  # under one and a half times it (x2.41)
    (2.42, DOES_NOT_HOLD, "too_large"),
    (4.0, DOES_NOT_HOLD, "too_large"),  # quadratic: the time quadruples when the prompt doubles
])
def test_k1_is_bounded_on_both_sides(ratio, verdict, reason):
    """Issue 22: "linear" has an upper bound too; by hand: 1 + 0.5 * 0.943 = 1.471, 1 + 1.5 * 0.943 = 2.414."""
    effect = Effect(ratio - 1, ratio - 1.01, ratio - 0.99)
    got, parts = claim_verdict(CLAIMS["K1"], {"doubling_256_to_512": effect})
    assert (got, parts[0][2]) == (verdict, reason)


def test_a_gain_is_not_bounded_above():
    """K4's 1.8x: a 3x speed-up still holds (more than the article claims is no contradiction)."""
    effects = {"kv_memory_saved": Effect.exact(0.5), "decode_speedup": Effect(2.0, 1.9, 2.1)}
    assert claim_verdict(CLAIMS["K4"], effects)[0] == HOLDS


def test_a_negative_article_effect_needs_a_negative_measurement():
    assert judge(-0.3, Effect(-0.2, -0.25, -0.1)) == (HOLDS, "holds")
    assert judge(-0.3, Effect(0.2, 0.1, 0.25)) == (DOES_NOT_HOLD, "opposite_sign")


def test_effects_from_spreads_by_hand():
    slow, fast = {"median": 10, "min": 9, "max": 11}, {"median": 5, "min": 4, "max": 6}
    e = speedup(slow, fast)
    assert (e.value, e.low, e.high) == pytest.approx((1.0, 9 / 6 - 1, 11 / 4 - 1))
    s = saving({"median": 100, "min": 100, "max": 100}, {"median": 50, "min": 50, "max": 50})
    assert (s.value, s.low, s.high) == (0.5, 0.5, 0.5)


def test_a_claim_holds_only_when_all_its_effects_do():
    k4 = CLAIMS["K4"]
    both = {"kv_memory_saved": Effect.exact(0.5), "decode_speedup": Effect(0.9, 0.5, 1.2)}
    assert claim_verdict(k4, both)[0] == HOLDS
    slower = {**both, "decode_speedup": Effect(-0.1, -0.2, 0.0)}
    verdict, parts = claim_verdict(k4, slower)
    assert verdict == DOES_NOT_HOLD and parts[1] == ("decode_speedup", DOES_NOT_HOLD, "opposite_sign")
    assert claim_verdict(k4, {}, "no_cuda")[0] == CANNOT
    assert claim_verdict(k4, {"kv_memory_saved": Effect.exact(0.5)})[0] == DOES_NOT_HOLD  # half measured


def test_the_fit_recovers_known_coefficients():
    rng = np.random.default_rng(0)
    n = np.array([32, 64, 128, 256, 512, 768, 1024, 1536, 2048])
    a, b, c = 2.0, 0.1, 1e-4  # takes over from the linear term at b / c = 1000 tokens
    ms = (a + b * n + c * n * n) * (1 + rng.normal(0, 0.01, n.size))
    fit = fit_prefill(n, ms)
    for got, true, se in zip((fit.a, fit.b, fit.c), (a, b, c), fit.se, strict=True):  # within 3 standard errors
        assert abs(got - true) < 3 * se
    assert fit.b == pytest.approx(b, rel=0.1)
    assert fit.c == pytest.approx(c, rel=0.1) and fit.quadratic_resolved and fit.r2 > 0.999
    assert fit.takeover == pytest.approx(1000, rel=0.15)
    assert fit.dominant(256) == "linear" and fit.dominant(2048) == "quadratic"
    shares = fit.shares(1000)
    assert shares["linear"] == pytest.approx(shares["quadratic"], rel=0.2)
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-12)  # a sum of floats: BLAS rounding differs per CPU


def test_linear_data_resolves_no_quadratic_term():
    n = np.array([64, 128, 256, 384, 512])
    fit = fit_prefill(n, 1.0 + 0.13 * n + np.array([0.02, -0.03, 0.01, 0.03, -0.02]))
    assert not fit.quadratic_resolved and fit.takeover is None and fit.dominant(512) == "linear"
    with pytest.raises(ValueError, match="3 distinct"):
        fit_prefill([64, 64, 128], [1, 1, 2])


def test_an_effect_reads_in_its_unit_and_the_interfaces_language():
    """x1.80 for a 0.8 speed-up, 54% for a share, +40 points for a gain in utilization (in Chinese 个百分点, not the
    English abbreviation in the Chinese interface)."""
    from llmviz.analysis.claims import shown
    from llmviz.i18n.translator import Translator

    assert shown("decode_speedup", 0.8, Translator("zh")) == "×1.80"
    assert shown("memory_share", 0.54, Translator("zh")) == "54%"
    assert shown("utilization_gain", 0.4, Translator("en")) == "+40 pts"
    assert shown("utilization_gain", -0.05, Translator("en")) == "-5 pts"
    assert shown("utilization_gain", 0.4, Translator("zh")) == "+40 个百分点"
