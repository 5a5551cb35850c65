"""The claims' verdict rule and the prefill fit (K1-K11; three verdicts) on synthetic
measurements either side of each threshold, verdicts set by hand, and a fit that must recover coefficients it was
not given."""

import numpy as np
import pytest

from llmviz.analysis.claim_spec import declared
from llmviz.analysis.claims import (
    CANNOT,
    CANNOT_TELL,
    DOES_NOT_HOLD,
    HOLDS,
    Effect,
    claim_verdict,
    judge,
    saving,
    speedup,
)
from llmviz.analysis.prefill_fit import fit_prefill


def test_the_pages_show_each_claims_statement_as_the_json_gives_it():
    """The page shows the catalogue's claims.article.K* (so in Chinese too); in English it is the report's text."""
    from llmviz.i18n.translator import catalog, translate

    assert all(translate("en", f"claims.article.{k}") == c.article for k, c in declared().items())
    assert all(f"claims.article.{k}" in catalog("zh") for k in declared())


def test_every_claim_of_the_concept_map_is_there():
    assert list(declared()) == [f"K{i}" for i in range(1, 12)]
    assert declared()["K4"].article_effects == {"kv_memory_saved": 0.5, "decode_speedup": 0.8}  # "halved", "1.8x"
    assert declared()["K1"].article_effects["doubling_256_to_512"] == pytest.approx(68 / 35 - 1)


def timed(value: float, low: float, high: float, rounds: int = 5) -> Effect:
    return Effect(value, low, high, rounds)


@pytest.mark.parametrize("effect, verdict, reason", [
    (timed(0.60, 0.42, 0.80), HOLDS, "holds"),  # clear: the whole interval over half the article's 0.8 (0.4)
    (timed(0.41, 0.30, 0.50), CANNOT_TELL, "cannot_tell"),  # noisy: the interval reaches both sides of 0.4
    (timed(0.30, 0.20, 0.39), DOES_NOT_HOLD, "too_small"),  # too small: wholly under 0.4, clear of zero
    (timed(-0.20, -0.30, -0.10), DOES_NOT_HOLD, "opposite_sign"),  # opposite: slower, where the article says faster
    (timed(0.01, -0.02, 0.03), DOES_NOT_HOLD, "no_effect"),  # none: around zero, wholly under the band
    (timed(0.50, -0.05, 0.90), CANNOT_TELL, "cannot_tell"),  # big enough, but the rounds reach from none to plenty
    (Effect.exact(0.0), DOES_NOT_HOLD, "no_effect"),  # all equal: counted, no effect
    (Effect.exact(0.4), HOLDS, "holds_exact"),  # counted, exactly on the band's edge
    (None, CANNOT, "not_measured"),
])
def test_the_verdict_rule_either_side_of_each_threshold(effect, verdict, reason):
    got = judge(0.8, effect)
    assert (got.verdict, got.reason) == (verdict, reason)
    assert (got.band.low, got.band.high) == (0.4, float("inf"))


def test_cannot_tell_says_how_many_more_rounds_would_decide():
    """By hand: 5 rounds, value 0.5, low 0.3: the line 0.4 is 0.1 away and the interval reaches 0.2 below, so
    5 x (0.2 / 0.1)^2 = 20 rounds would shrink it to the line: 15 more."""
    got = judge(0.8, timed(0.5, 0.3, 0.9))
    assert got.verdict == CANNOT_TELL and got.more_rounds == 15
    assert judge(0.8, Effect(0.5, float("-inf"), float("inf"), 1)).more_rounds is None  # one round: no spread
    assert judge(0.8, timed(0.4, 0.3, 0.5)).more_rounds is None  # on the line: no number of rounds decides


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
    effect = timed(ratio - 1, ratio - 1.005, ratio - 0.995)
    got, parts = claim_verdict(declared()["K1"], {"doubling_256_to_512": effect})
    assert (got, parts[0][1].reason) == (verdict, reason)


def test_k1_inside_its_spread_across_the_upper_line_cannot_tell():
    """Issue 36's K1: the rounds from x0.96 to x4.20 reach below the band, into it and past it: no verdict."""
    got, parts = claim_verdict(declared()["K1"], {"doubling_256_to_512": timed(1.0, -0.04, 3.2)})
    assert got == CANNOT_TELL and parts[0][1].reason == "cannot_tell"


def test_a_gain_is_not_bounded_above():
    """K4's 1.8x: a 3x speed-up still holds (more than the article claims is no contradiction)."""
    effects = {"kv_memory_saved": Effect.exact(0.5), "decode_speedup": timed(2.0, 1.9, 2.1)}
    assert claim_verdict(declared()["K4"], effects)[0] == HOLDS


def test_a_negative_article_effect_needs_a_negative_measurement():
    assert judge(-0.3, timed(-0.2, -0.25, -0.16)).verdict == HOLDS
    assert judge(-0.3, timed(0.2, 0.1, 0.25)).reason == "opposite_sign"
    assert judge(-0.3, timed(-0.2, -0.25, -0.1)).verdict == CANNOT_TELL  # reaches -0.1, short of the band (-0.15)


def test_effects_from_spreads_per_round():
    """Paired rounds: the effect is the median of the per-round ratios, its interval the exact order-statistic one
: none from 3 rounds, [min, max] of the per-round effects at 6 (coverage 1 - 2/64 = 96.875%).
    Unpaired: the ratio of the medians, each side's [min, max] at 7 rounds (each misses 2/128), the corners."""
    slow = {"median": 10, "min": 9, "max": 12, "all": [10, 12, 9]}
    fast = {"median": 5, "min": 4.4, "max": 5.5, "all": [5, 5.5, 4.4]}
    e = speedup(slow, fast)  # per round by hand: 10/5, 12/5.5, 9/4.4 -> 1.0, 1.18, 1.05 (minus 1)
    assert e.value == pytest.approx(9 / 4.4 - 1) and e.rounds == 3 and e.paired
    assert (e.low, e.high) == (-np.inf, np.inf)  # no distribution-free 95% interval below 6 rounds
    six_slow = {"median": 10, "all": [10, 12, 9, 11, 10, 13]}
    six_fast = {"median": 5, "all": [5, 5.5, 4.4, 5.0, 4.0, 6.5]}
    e = speedup(six_slow, six_fast)  # 1.0, 1.1818, 1.0455, 1.2, 1.5, 1.0 (ratios minus 1)
    ratios = sorted([10 / 5, 12 / 5.5, 9 / 4.4, 11 / 5, 10 / 4, 13 / 6.5])
    assert (e.low, e.high) == pytest.approx((ratios[0] - 1, ratios[-1] - 1))
    assert e.value == pytest.approx((ratios[2] + ratios[3]) / 2 - 1) and e.level == pytest.approx(1 - 2 / 64)
    assert e.per_round == pytest.approx(tuple(a / b - 1 for a, b in zip(six_slow["all"], six_fast["all"], strict=True)))
    seven_slow = {"median": 10, "all": [10, 12, 9, 11, 10, 13, 10]}
    seven_fast = {"median": 5, "all": [5, 5.5, 4.4, 5.0, 4.0, 6.5, 5]}
    u = speedup(seven_slow, seven_fast, paired=False)
    assert u.value == pytest.approx(10 / 5 - 1) and not u.paired
    assert u.low == pytest.approx(9 / 6.5 - 1) and u.high == pytest.approx(13 / 4.0 - 1)
    assert u.level == pytest.approx(1 - 2 * 2 / 128)  # the two sides' misses added
    s = saving({"median": 100, "all": [100, 100]}, {"median": 50, "all": [50, 50]})
    assert s.value == 0.5 and (s.low, s.high) == (-np.inf, np.inf)  # two rounds, however equal: no interval


def test_a_claim_holds_only_when_all_its_effects_do():
    k4 = declared()["K4"]
    both = {"kv_memory_saved": Effect.exact(0.5), "decode_speedup": timed(0.9, 0.5, 1.2)}
    assert claim_verdict(k4, both)[0] == HOLDS
    slower = {**both, "decode_speedup": timed(-0.1, -0.2, -0.01)}
    verdict, parts = claim_verdict(k4, slower)
    assert verdict == DOES_NOT_HOLD and (parts[1][0], parts[1][1].reason) == ("decode_speedup", "opposite_sign")
    assert claim_verdict(k4, {**both, "decode_speedup": timed(0.5, 0.3, 0.7)})[0] == CANNOT_TELL
    assert claim_verdict(k4, {}, "no_cuda")[0] == CANNOT
    # half measured: what was holds, the rest could not be measured: this run cannot tell the claim as a whole
    assert claim_verdict(k4, {"kv_memory_saved": Effect.exact(0.5)})[0] == CANNOT_TELL


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


def test_k4s_predicted_effect_from_the_bytes_by_hand():
    """Issue 36, the third number: what the arithmetic predicts for this run. llmviz-tiny in fp32, by hand: a layer
    holds q, k, v, o (4 x 256 x 256) + a gated MLP (3 x 256 x 768) + 2 norms (2 x 256) = 852,480 weights; 4 layers,
    the final norm (256) and the tied table read whole as the head (9,216 x 256): 5,769,472 weights, 23,077,888 B a
    step. KV: 2 x 8 heads x 32 x 4 layers = 2,048 elements a token, 8,192 B in fp32, 4,096 in bf16; 16 decode
    steps after 20 prompt tokens read 20 + 8.5 cached tokens on average: 233,472 B and 116,736 B. A decode step that
    waits on memory is then 23,311,360 / 23,194,624 = x1.0050 faster with the half-size cache: KV is 1.0% of it."""
    from llmviz import service
    from llmviz.analysis.claim_effects import judged
    from llmviz.trace.config import EngineConfig

    cfg = service.models.model_config_dict("llmviz-tiny")
    sides = [{"engine_config": EngineConfig(kv_dtype=kv).to_dict(), "model_config": cfg, "kv": {"max_seq": 64}}
             for kv in ("auto", "bf16")]
    spread = {"median": 10.0, "min": 10.0, "max": 10.0, "all": [10.0] * 6}  # six rounds: an interval at 96.9%
    claim = judged("K4", {"model": "llmviz-tiny", "device": "cpu", "threads": 1, "specs": ["", "kv-dtype=bf16"],
                          "decode_ms_per_token": [spread, spread], "prefill_ms": [spread, spread],
                          "kv_bytes_allocated": [64 * 8192, 64 * 4096], "sides": sides, "prompt_tokens": 20,
                          "steps": 16, "bandwidth": {"gb_per_s": 10.0}})
    assert claim["figures"]["read_bytes_a"] == 23_077_888 + 233_472
    assert claim["figures"]["read_bytes_b"] == 23_077_888 + 116_736
    assert claim["figures"]["kv_share_of_read_a"] == pytest.approx(233_472 / 23_311_360)
    speed = next(e for e in claim["effects"] if e["name"] == "decode_speedup")
    assert speed["predicted"] == pytest.approx(23_311_360 / 23_194_624 - 1)
    assert speed["verdict"] == DOES_NOT_HOLD and speed["reason"] == "no_effect"  # equal times: x1.00, as predicted


def test_an_unresolved_quadratic_term_has_no_share():
    """Issue 36: the fit called its quadratic term indistinguishable from zero and reported it as 30% at 511 tokens.
    Noisy linear data: c cannot be told from zero, so its share is 0 and the linear term's is what a + b n gives."""
    n = np.array([32, 64, 128, 255, 384, 510])
    fit = fit_prefill(n, 2.0 + 0.1 * n + np.array([0.9, -1.1, 1.3, -0.8, 1.2, -1.0]))
    assert not fit.quadratic_resolved and fit.c != 0
    shares = fit.shares(510)
    assert shares["quadratic"] == 0.0
    assert shares["linear"] == pytest.approx(fit.b * 510 / (fit.a + fit.b * 510))


def test_k2s_share_pairs_each_round_with_its_own_probe():
    """Issue 36: the bandwidth probe drifted between runs and moved K2 across its line while its interval, of the
    decode timings alone, stayed narrow. Now each round's share is the bytes a step reads (23,311,360 B for
    llmviz-tiny after 20 + 16 tokens, by hand above) at that round's probe over that round's step: 10 ms at
    23.31136, 11.65568 and 23.31136 GB/s (twice: six rounds, the fewest with an interval) gives 0.1, 0.2 and 0.1:
    median 0.1, interval 0.1 to 0.2 ([min, max] at six rounds)."""
    from llmviz import service
    from llmviz.analysis.claim_effects import judged
    from llmviz.trace.config import EngineConfig

    side = {"engine_config": EngineConfig().to_dict(), "model_config": service.models.model_config_dict("llmviz-tiny"),
            "kv": {"max_seq": 64}}
    claim = judged("K2", {"model": "llmviz-tiny", "device": "cpu", "threads": 1, "side": side, "prompt_tokens": 20,
                          "steps": 16, "decode_ms_per_token": {"median": 10.0, "min": 10.0, "max": 10.0,
                                                               "all": [10.0] * 6},
                          "bandwidth": {"gb_per_s": 23.31136,
                                        "rounds_gb_per_s": [23.31136, 11.65568, 23.31136] * 2}})
    e = claim["effects"][0]
    assert (e["measured"], e["low"], e["high"]) == (pytest.approx(0.1), pytest.approx(0.1), pytest.approx(0.2))


def test_a_tables_interval_cell():
    """The Claims table's and the lesson end's cell: the interval's ends, the level it attains (12 rounds
    at rank 3, 1 - 2 x 79/4096 = 96.1%) and the rounds; a count says it is counted."""
    from llmviz.analysis.claim_effects import interval_text
    from llmviz.i18n.translator import Translator

    en, zh = Translator("en"), Translator("zh")
    timed = {"name": "decode_speedup", "article": 0.8, "measured": -0.04, "low": -0.16, "high": -0.02, "rounds": 12,
             "band": [0.4, None], "level": 1 - 2 * 79 / 4096}
    assert interval_text(en, timed) == "×0.84 – ×0.98 (96.1%, 12 rounds)"
    assert interval_text(zh, timed) == "×0.84 – ×0.98（96.1%，12 轮）"
    counted = {"name": "kv_memory_saved", "article": 0.5, "measured": 0.5, "low": 0.5, "high": 0.5, "rounds": 0}
    assert interval_text(en, counted) == "counted (exact)" and interval_text(en, {"name": "x", "article": 1}) == "—"


def test_cannot_tell_names_the_line_it_crosses_and_every_line_counts():
    """Review findings: K1's interval x2.20-x2.60 crosses the band's upper line (x2.41), not its lower one (x1.47),
    and the sentence names that one; an interval across both lines needs the rounds that clear both (here the upper
    one, 0.7 to 1.414: 6 x (1.8 / 0.714)^2 = 38.1, so 33 more; the lower alone would need 1)."""
    from llmviz.analysis.claim_effects import judged, reason_text
    from llmviz.i18n.translator import Translator

    upper = judge(K1, timed(1.3, 1.2, 1.6, 6), bounded=True)
    assert upper.verdict == CANNOT_TELL and upper.line == pytest.approx(1.5 * K1)
    both = judge(K1, timed(0.7, 0.46, 2.5, 6), bounded=True)
    assert both.more_rounds == 33
    claim = judged("K1", {"lengths": [64, 128, 255, 510], "prefill_ms": [
        {"median": m, "min": m, "max": m, "all": [m] * 3} for m in (1.0, 2.0, 3.0, 6.9)]})
    e = claim["effects"][0]
    e.update(measured=1.3, low=1.2, high=1.6, rounds=6, verdict=CANNOT_TELL, reason="cannot_tell", line=upper.line,
             more_rounds=3)
    assert "(the line at ×2.41)" in reason_text(Translator("en"), claim)


@pytest.mark.parametrize("effect, physical, drift, verdict, reason", [
    (timed(0.7, 0.65, 0.75, 12), None, False, HOLDS, "holds"),
    (timed(0.7, 0.65, 0.75, 12), (0.0, 1.0), False, HOLDS, "holds"),  # a share well inside 0-100%
    (timed(0.97, 0.9, 1.05, 12), (0.0, 1.0), False, CANNOT_TELL, "cannot_tell"),  # reaches past 100%
    (timed(1.12, 0.6, 1.33, 12), (0.0, 1.0), False, CANNOT, "out_of_range"),  # the audit's K2 at 112%: an input off
    (timed(-0.1, -0.2, 0.05, 12), (0.0, 1.0), False, CANNOT, "out_of_range"),  # a negative share
    (timed(0.7, 0.65, 0.75, 12), None, True, CANNOT_TELL, "drifted"),  # the control moved: nothing decided
    (Effect.exact(0.7), None, True, HOLDS, "holds_exact"),  # a count does not drift
    (timed(0.7, -np.inf, np.inf, 5), None, False, CANNOT_TELL, "no_interval"),  # five rounds: no interval
    (timed(0.05, 0.01, 0.1, 12), None, False, DOES_NOT_HOLD, "too_small"),
])
def test_verdicts_from_bounds_drift_and_rounds(effect, physical, drift, verdict, reason):
    """Issue 48 (3): a share of a step lies in [0, 100%]: a median outside cannot be measured (its reason names the
    inputs), an interval reaching past it cannot tell; a drifted control leaves every timed effect undecided; fewer
    than 6 rounds decide nothing. The article's effect 0.6, its band from 0.3."""
    j = judge(0.6, effect, bounded=False, physical=physical, drifted=drift)
    assert (j.verdict, j.reason) == (verdict, reason)


@pytest.mark.parametrize("floor, moved", [
    ({"low": -0.02, "high": 0.02}, False), ({"low": 0.031, "high": 0.08}, True), ({"low": -0.15, "high": -0.05}, True),
    ({"low": -0.05, "high": 0.01}, False), ({"low": None, "high": None}, False), (None, False),
])
def test_a_control_drifts_when_its_whole_interval_is_past_three_percent(floor, moved):
    """Issue 48's K3 control at 2,040 tokens, x0.85-x0.95 (A against itself): the machine drifted."""
    from llmviz.analysis.claims import drifted

    assert drifted(floor) is moved


def test_a_drifted_control_makes_the_claim_undecided_and_says_why():
    """K4's timed effect cannot tell when its control moved; its counted memory still holds; the sentence says the
    machine drifted (per round by hand: A 10 ms, its control 11 ms every round: x0.91, past 3%)."""
    from llmviz.analysis.claim_effects import judged, reason_text
    from llmviz.i18n.translator import Translator

    def spread(ms):
        return {"median": ms, "min": ms, "max": ms, "all": [ms] * 12}

    f = {"specs": ["a", "b"], "decode_ms_per_token": [spread(10.0), spread(5.0)], "kv_bytes_allocated": [100, 50],
         "control_ms_per_token": spread(11.0)}
    claim = judged("K4", f)
    assert claim["figures"]["noise_floor"]["high"] == pytest.approx(10 / 11 - 1)
    assert [(e["verdict"], e["reason"]) for e in claim["effects"]] == [(HOLDS, "holds_exact"), (CANNOT_TELL, "drifted")]
    assert claim["verdict"] == CANNOT_TELL and "drifted" in reason_text(Translator("en"), claim)
    f["control_ms_per_token"] = spread(10.0)
    assert judged("K4", f)["verdict"] == HOLDS


@pytest.mark.parametrize("effect, reason", [
    (timed(0.01, -0.02, 0.04, 12), "no_effect"),  # the whole interval within 5% of none
    (timed(-0.31, -0.5, 0.02, 12), "unclear"),  # the audit's x0.69 reaching x1: short of the band, direction unknown
    (timed(0.2, -0.1, 0.3, 12), "unclear"),
    (timed(-0.2, -0.3, -0.1, 12), "opposite_sign"),
    (timed(0.2, 0.1, 0.3, 12), "too_small"),
])
def test_no_effect_is_said_only_within_the_equivalence_margin(effect, reason):
    """Issue 48 (5): "no effect" only when the whole interval lies within 5% of none; an interval short of the band
    that reaches across none is too noisy to name a direction, never "almost no effect". The article's x1.8."""
    j = judge(0.8, effect)
    assert (j.verdict, j.reason) == (DOES_NOT_HOLD, reason)


def test_the_sentences_words_follow_the_interval_not_the_point():
    """The same point, x0.69, read by its interval: within the margin nowhere, so never "no effect"; the lesson's
    sentence names it too noisy to say its direction."""
    from llmviz.analysis import reveal as rv
    from llmviz.i18n.translator import Translator

    def claim(low, high):
        j = judge(0.8, timed(-0.31, low, high, 12))
        return {"id": "K4", "verdict": DOES_NOT_HOLD, "effects": [
            {"name": "decode_speedup", "article": 0.8, "measured": -0.31, "low": low, "high": high, "rounds": 12,
             "level": 0.96, "band": [0.4, None], "verdict": j.verdict, "reason": j.reason}]}
    wide, narrow = rv.revealed(claim(-0.5, 0.02), None), rv.revealed(claim(-0.35, -0.28), None)
    assert (wide["outcome"], narrow["outcome"]) == ("unclear", "opposite")
    t = Translator("en")
    assert "too noisy" in t("lesson.why.unclear", measured="×0.69", article="×1.80", low="×0.50", high="×1.02")


def test_a_composite_claim_says_which_effect_decided_its_headline():
    """Issue 48 (5): K4 has two effects; its memory holds (counted) while its speed does not: the headline is
    "does not hold", resting on the speed, and the sentence names it after each effect's own."""
    from llmviz.analysis.claim_effects import judged, reason_text
    from llmviz.i18n.translator import Translator

    def spread(ms):
        return {"median": ms, "min": ms, "max": ms, "all": [ms * (1 + 0.001 * i) for i in range(6)]}

    claim = judged("K4", {"specs": ["a", "b"], "decode_ms_per_token": [spread(10.0), spread(10.5)],
                          "kv_bytes_allocated": [100, 50]})
    assert claim["verdict"] == DOES_NOT_HOLD and claim["decided_by"] == ["decode_speedup"]
    en = reason_text(Translator("en"), claim)
    assert en.endswith("The verdict above rests on: decode speed.")
    assert reason_text(Translator("zh"), claim).endswith("。")
    held = judged("K4", {"specs": ["a", "b"], "decode_ms_per_token": [spread(10.0), spread(5.0)],
                         "kv_bytes_allocated": [100, 50]})
    assert held["verdict"] == HOLDS and held["decided_by"] == ["kv_memory_saved", "decode_speedup"]
