"""Predict, then reveal: what a student predicts of a claim, and how the prediction, this machine's
measurement and the article's A100 figure compare. Pure arithmetic on a judged claim (claim_effects.judged): the
sentence under the verdict is read from that verdict (analysis/claims.judge, the one rule), never from a second
rule on the point estimate, so the two cannot disagree; within "holds" it says only how far apart the
three numbers are.

A prediction is made in the unit the effect reads in (claims.shown): a ratio as the factor (x1.8), a share in
percent, a gain in points; `effect_of` turns it into the effect's own number (0.8, 0.5, 0.4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmviz.analysis import claim_spec
from llmviz.analysis.claim_spec import POINTS, RATIO, SHARE, effect_kind
from llmviz.analysis.claims import CANNOT_TELL, DOES_NOT_HOLD, HOLDS

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
    """The effect a student predicts of a claim: the one the article's sentence is about (its declaration's)."""
    return claim_spec.claim(claim_id).predicted


def scale(claim_id: str, name: str | None = None) -> Scale:
    """The slider of a claim's predicted effect (or of its effect `name`)."""
    return SCALES[effect_kind(name or effect_name(claim_id))]


def effect_of(claim_id: str, shown_value: float, name: str | None = None) -> float:
    """A slider's value as the effect's number: x1.8 -> 0.8, 50% -> 0.5, +40 pts -> 0.4."""
    return shown_value - 1 if effect_kind(name or effect_name(claim_id)) == RATIO else shown_value / 100


def shown_of(claim_id: str, effect: float) -> float:
    """The inverse of effect_of: where the slider stands for an effect."""
    return effect + 1 if effect_kind(effect_name(claim_id)) == RATIO else 100 * effect


def article_effect(claim_id: str) -> float:
    return claim_spec.claim(claim_id).article_effects[effect_name(claim_id)]


# A judged effect that does not hold, by its reason: how the sentence says it
NOT_HOLDING = {"opposite_sign": "opposite", "no_effect": "none", "unclear": "unclear", "too_small": "smaller",
               "too_large": "larger"}


def outcome(effect: dict, claim_verdict: str) -> str | None:
    """How this machine's effect stands to the article's, read from its verdict: opposite, none, smaller or larger
    (does not hold), cannot_tell (too_few: no interval yet; drifted: the control moved), out_of_range (cannot be
    measured: an input is off), and where it holds: about (its interval reaches within ABOUT of the article's
    figure), larger, holds_smaller, or part_holds (this effect holds, the claim's other one does not). None: not
    measured."""
    if "measured" not in effect:
        return None
    if effect["verdict"] == CANNOT_TELL:  # too few rounds for an interval, a control that drifted, or across a line
        return {"no_interval": "too_few", "drifted": "drifted"}.get(effect["reason"], "cannot_tell")
    if effect["reason"] == "out_of_range":  # a figure it cannot take at all: an input is off
        return "out_of_range"
    if effect["verdict"] == DOES_NOT_HOLD:
        return NOT_HOLDING.get(effect["reason"])
    if effect["verdict"] != HOLDS:
        return None
    if claim_verdict != HOLDS:
        return "part_holds"
    article = effect["article"]
    sign, size = math.copysign(1, article), abs(article)
    low, high = sorted((sign * effect["low"], sign * effect["high"]))  # finite: an unbounded interval never holds
    if low > (1 + ABOUT) * size:
        return "larger"
    return "holds_smaller" if high < (1 - ABOUT) * size else "about"


def prediction_outcome(predicted: float, measured: dict, article: float, tolerance: float = 0.0) -> str:
    """Where the student's prediction fell: inside the measured interval (or within `tolerance` of it: half the
    slider's step, so a prediction the slider cannot set closer counts as inside), nearer this machine's figure,
    or nearer the article's. `measured`: the effect's {measured, low, high} from the judged claim."""
    low, high = measured["low"], measured["high"]
    if low is not None and high is not None and low - tolerance <= predicted <= high + tolerance:
        return "in_range"
    here, there = abs(predicted - measured["measured"]), abs(predicted - article)
    return "nearer_here" if here <= there else "nearer_article"


def against_arithmetic(effect: dict) -> str | None:
    """How the measurement stands to what the arithmetic predicts for this run (the third number beside the
    measured and the article's): its interval holds the prediction ("as_predicted") or not ("not_as_predicted");
    None with no prediction."""
    predicted, low, high = effect.get("predicted"), effect.get("low"), effect.get("high")
    if predicted is None or low is None or high is None:
        return None
    return "as_predicted" if low <= predicted <= high else "not_as_predicted"


def judged_effect(entry: dict) -> dict:
    """A revealed entry's effect as its judged claim holds it (its interval, rounds and band)."""
    return next(x for x in entry["claim"]["effects"] if x["name"] == entry["effect"])


def revealed(claim: dict, predicted: float | None) -> dict:
    """One revealed claim for the lesson and its summary: the predicted effect's measured value and range, the
    article's, how they stand (outcome), and the prediction's place (None when the student predicted nothing).
    A claim not measured (an error, a device that cannot) has outcome None."""
    name = effect_name(claim["id"])
    effect = next(e for e in claim["effects"] if e["name"] == name)
    article = effect["article"]
    out = {"id": claim["id"], "effect": name, "article": article, "predicted": predicted,
           "verdict": claim["verdict"], "measured": None, "low": None, "high": None, "rounds": 0, "outcome": None,
           "prediction": None, "predicted_here": effect.get("predicted"), "arithmetic": against_arithmetic(effect)}
    if "measured" in effect:
        out.update(measured=effect["measured"], low=effect["low"], high=effect["high"],
                   rounds=effect.get("rounds", 0), outcome=outcome(effect, claim["verdict"]))
        if predicted is not None:
            half_step = abs(effect_of(claim["id"], scale(claim["id"]).step) - effect_of(claim["id"], 0.0)) / 2
            out["prediction"] = prediction_outcome(predicted, effect, article, half_step)
    return out



def second_name(claim_id: str) -> str | None:
    """A claim's effect measured at a second setting the student may predict after the first ("predict
    again": K3's short contexts beside its long ones); None for most."""
    return claim_spec.claim(claim_id).second


def second_scale(claim_id: str) -> Scale:
    return scale(claim_id, second_name(claim_id))


def second_effect_of(claim_id: str, shown_value: float) -> float:
    """The second setting's slider value as its effect's number (as effect_of for the first)."""
    return effect_of(claim_id, shown_value, second_name(claim_id))


def predicted_again(claim: dict, predicted: float) -> dict | None:
    """The second setting's measurement beside a second prediction: {effect, predicted, measured, low, high,
    article, prediction}; None where the claim has no second setting, or it was not measured."""
    name = second_name(claim["id"])
    effect = next((e for e in claim["effects"] if e["name"] == name), None)
    if effect is None or "measured" not in effect:
        return None
    step = second_scale(claim["id"]).step
    half_step = abs(second_effect_of(claim["id"], step) - second_effect_of(claim["id"], 0.0)) / 2
    return {"effect": name, "predicted": predicted, "measured": effect["measured"], "low": effect["low"],
            "high": effect["high"], "article": effect["article"],
            "prediction": prediction_outcome(predicted, effect, effect["article"], half_step)}


def behind(claim: dict) -> dict | None:
    """The measured numbers a claim's effect is computed from (after a surprise, the number that explains
    it, read from the measurement, not said in advance): its declaration's, from the judged figures; None where
    the run kept none of them."""
    read = claim_spec.claim(claim["id"]).behind
    try:
        return None if read is None else read(claim.get("figures") or {})
    except (KeyError, ValueError, TypeError, IndexError):  # a report kept without those figures
        return None
