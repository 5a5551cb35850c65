"""Predict, then reveal (issue 23): what a student predicts of a claim, and how the prediction, this machine's
measurement and the article's A100 figure compare. Pure arithmetic on a judged claim (claim_effects.judged); the
verdict stays the Claims page's rule (analysis/claims.py), this only says how far apart the three numbers are.

A prediction is made in the unit the effect reads in (claims.shown): a ratio as the factor (x1.8), a share in
percent, a gain in points; `effect_of` turns it into the effect's own number (0.8, 0.5, 0.4).
"""

from __future__ import annotations

from dataclasses import dataclass

from llmviz.analysis.claims import CLAIMS, EFFECT_KINDS, POINTS, RATIO, SHARE

# The effect a student predicts for each claim: the one the article's sentence is about
PREDICTED = {"K1": "doubling_256_to_512", "K2": "memory_share", "K3": "paged_faster_long", "K4": "decode_speedup",
             "K5": "prefill_throughput_gain", "K6": "attention_speedup", "K7": "utilization_gain",
             "K8": "decode_time_saved", "K9": "kv_memory_saved", "K10": "throughput_gain", "K11": "time_saved"}
# Where a measurement is "about" the article's: within this share of it either way
ABOUT = 0.25


@dataclass(frozen=True)
class Scale:
    """A prediction's slider, in the unit the effect reads in."""

    low: float
    high: float
    step: float
    unit: str  # "x", "%" or "pts"


SCALES = {RATIO: Scale(0.25, 6.0, 0.05, "x"), SHARE: Scale(0.0, 100.0, 1.0, "%"),
          POINTS: Scale(-50.0, 80.0, 1.0, "pts")}


def effect_name(claim_id: str) -> str:
    return PREDICTED[claim_id]


def scale(claim_id: str) -> Scale:
    return SCALES[EFFECT_KINDS[PREDICTED[claim_id]]]


def effect_of(claim_id: str, shown_value: float) -> float:
    """A slider's value as the effect's number: x1.8 -> 0.8, 50% -> 0.5, +40 pts -> 0.4."""
    kind = EFFECT_KINDS[PREDICTED[claim_id]]
    return shown_value - 1 if kind == RATIO else shown_value / 100


def shown_of(claim_id: str, effect: float) -> float:
    """The inverse of effect_of: where the slider stands for an effect."""
    kind = EFFECT_KINDS[PREDICTED[claim_id]]
    return effect + 1 if kind == RATIO else 100 * effect


def article_effect(claim_id: str) -> float:
    return dict(CLAIMS[claim_id].effects)[PREDICTED[claim_id]]


def outcome(article: float, measured: float) -> str:
    """How this machine's effect stands to the article's: opposite, smaller, about, larger."""
    if measured * article <= 0:
        return "opposite"
    ratio = abs(measured) / abs(article)
    if ratio < 1 - ABOUT:
        return "smaller"
    return "larger" if ratio > 1 + ABOUT else "about"


def prediction_outcome(predicted: float, measured: dict, article: float) -> str:
    """Where the student's prediction fell: inside the measured range, nearer this machine's figure, or nearer the
    article's. `measured`: the effect's {measured, low, high} from the judged claim."""
    if measured["low"] <= predicted <= measured["high"]:
        return "in_range"
    here, there = abs(predicted - measured["measured"]), abs(predicted - article)
    return "nearer_here" if here <= there else "nearer_article"


def revealed(claim: dict, predicted: float | None) -> dict:
    """One revealed claim for the lesson and its summary: the predicted effect's measured value and range, the
    article's, how they stand (outcome), and the prediction's place (None when the student predicted nothing).
    A claim not measured (an error, a device that cannot) has outcome None."""
    name = PREDICTED[claim["id"]]
    effect = next(e for e in claim["effects"] if e["name"] == name)
    article = effect["article"]
    out = {"id": claim["id"], "effect": name, "article": article, "predicted": predicted,
           "verdict": claim["verdict"], "measured": None, "low": None, "high": None, "outcome": None,
           "prediction": None}
    if "measured" in effect:
        out.update(measured=effect["measured"], low=effect["low"], high=effect["high"],
                   outcome=outcome(article, effect["measured"]))
        if predicted is not None:
            out["prediction"] = prediction_outcome(predicted, effect, article)
    return out


