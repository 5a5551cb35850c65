"""The numbers behind a timed claim: its rounds themselves, a dot per round, their median (the
one figure every surface shows), the interval at the level it attains and the A-vs-A control's rounds beside
them, where "the numbers behind" once showed the medians of A and B (whose ratio is not the median of the
per-round ratios: K4's box x0.53 over 61.58 / 142.84 ms = x0.43). The Claims page, the lesson's Reveal and the
full pages that judge a claim on their own run draw it from the judged claim's JSON (claim_effects.judged:
per_round, low, high, level)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from llmviz.analysis.claim_effects import interval_values
from llmviz.analysis.claim_spec import RATIO, effect_kind
from llmviz.analysis.claims import shown
from llmviz.ui.charts import chart
from llmviz.viz.claims import rounds_figure


def as_shown(kind: str, value: float | None) -> float | None:
    """An effect's number on the axis it reads in: a ratio as the factor (0.8 -> 1.8), a share or points x100."""
    if value is None:
        return None
    return value + 1 if kind == RATIO else 100 * value


def timed_effects(c: dict) -> list[dict]:
    """A judged claim's effects that have rounds (not counted, not unmeasured)."""
    return [e for e in c.get("effects", []) if e.get("per_round")]


def rounds_values(t, e: dict) -> dict:
    """The rounds as a sentence names them: how many, their least and greatest, their median (the figure shown)."""
    rounds = e["per_round"]
    return {"n": len(rounds), "least": shown(e["name"], min(rounds), t), "most": shown(e["name"], max(rounds), t),
            "median": shown(e["name"], float(np.median(rounds)), t)}


def rounds_sentence(t, e: dict) -> str:
    """The rounds in one line, with the interval and its level."""
    return t("claims.rounds_line", **interval_values(t, e) | rounds_values(t, e))


def rounds_view(t, c: dict, key: str, only: str | None = None) -> None:
    """Each timed effect's rounds (or only the effect `only`): the chart and its line."""
    control = ((c.get("figures") or {}).get("noise_floor") or {}).get("per_round")
    for e in timed_effects(c):
        if only is not None and e["name"] != only:
            continue
        kind = effect_kind(e["name"])
        names = {"rounds": t("claims.rounds_each"), "median": t("claims.rounds_median"),
                 "interval": t("claims.rounds_interval", level=interval_values(t, e)["level"]),
                 "article": t("lesson.article_a100"), "control": t("claims.rounds_control"), "x": t("claims.round")}
        fig = rounds_figure([as_shown(kind, v) for v in e["per_round"]], as_shown(kind, e.get("low")),
                            as_shown(kind, e.get("high")), as_shown(kind, e["article"]), names,
                            t("claims.rounds_title", claim=c["id"], effect=t(f"claims.effect.{e['name']}")),
                            t(f"claims.rounds_unit.{kind}"),
                            [as_shown(RATIO, v) for v in control] if control and kind == RATIO else None)
        chart(t, fig, key=f"{key}_{c['id']}_{e['name']}")
        st.caption(rounds_sentence(t, e))


def rounds_expander(t, c: dict, key: str) -> None:
    """The rounds behind a judged claim, one click away (the Claims page, and the full pages under their verdict on
    their own run: the KV layouts, Batch and Compare pages); nothing for a counted claim."""
    if timed_effects(c):
        with st.expander(t("claims.rounds_expander"), icon=":material/scatter_plot:"):
            rounds_view(t, c, key)
