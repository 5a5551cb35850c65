"""After a Reveal: predictions that invite thought. A prediction outside what was measured is said so,
with the measured numbers the effect comes from (analysis/reveal.behind, read from this measurement, never said in
advance); where the claim was measured at a second setting (K3's short contexts beside its long ones), the student
may predict again and compare, without measuring again."""

from __future__ import annotations

import streamlit as st

from llmviz.analysis import reveal as rv
from llmviz.analysis.claim_effects import interval_values
from llmviz.analysis.claims import shown
from llmviz.ui.claims.claim_rounds import rounds_values


def surprise(t, e: dict) -> None:
    """A prediction outside what was measured: say so, with the measured numbers the effect comes from
    (analysis/reveal.behind: read from this measurement)."""
    if e["prediction"] not in ("nearer_here", "nearer_article"):
        return
    name, numbers, effect = e["effect"], rv.behind(e["claim"]), rv.judged_effect(e)
    line = t("lesson.surprise", predicted=shown(name, e["predicted"], t), **interval_values(t, effect))
    if effect.get("per_round"):  # timed: the rounds themselves, whose median is the figure above
        line += " " + t("lesson.behind_rounds", **rounds_values(t, effect))
    elif numbers is not None:  # counted: the counts the figure is made of
        line += " " + t(f"lesson.behind.{e['id']}", **numbers)
    st.info(line, icon=":material/lightbulb:")


AGAIN = "llmviz_lesson_again"  # {(claim id, when measured): the second setting's prediction and its measurement}


def again(t, e: dict) -> None:
    """Predict again where the claim was measured at a second setting (K3's short contexts beside its long ones):
    a slider, Compare, and the second prediction beside that setting's measurement."""
    cid = e["id"]
    name = rv.second_name(cid)
    if name is None or e["measured"] is None:
        return
    sc = rv.second_scale(cid)
    st.markdown(t("lesson.again", effect=t(f"claims.effect.{name}")))
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    value = left.slider(t(f"lesson.predict_unit.{sc.unit}"), sc.low, sc.high, 1.0 if sc.unit == "x" else 0.0, sc.step,
                        key=f"lesson_again_{cid}")
    kept = st.session_state.setdefault(AGAIN, {})
    if right.button(t("lesson.again_check"), key=f"lesson_again_check_{cid}"):
        kept[(cid, e["when"])] = rv.predicted_again(e["claim"], rv.second_effect_of(cid, value))
    result = kept.get((cid, e["when"]))  # a Reveal measured again starts the second prediction afresh
    if result is not None:
        st.markdown(t("lesson.again_result", predicted=shown(name, result["predicted"], t),
                      measured=shown(name, result["measured"], t), article=shown(name, result["article"], t),
                      low=shown(name, result["low"], t) if result["low"] is not None else "?",
                      high=shown(name, result["high"], t) if result["high"] is not None else "?")
                    + " " + t(f"lesson.prediction.{result['prediction']}"))
