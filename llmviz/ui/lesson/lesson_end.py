"""The lesson's end: "your machine and the A100": every claim the student revealed, the prediction
beside this machine's measurement and the article's figure, what held here; downloadable as JSON, CSV and a
one-page HTML report that opens offline. On screen a table whose cells wrap (every column and row in view at 1280 px),
where and when each was measured under it."""

from __future__ import annotations

import json

import streamlit as st

from llmviz.analysis import reveal as rv
from llmviz.analysis.claim_effects import interval_text, reason_text
from llmviz.analysis.claims import shown
from llmviz.analysis.lab import jsonable
from llmviz.analysis.reveal import judged_effect
from llmviz.ui.chrome import html_report, literal, table_csv
from llmviz.ui.lesson.lesson_check import answers, shown_answer
from llmviz.ui.lesson.lesson_measure import revealed
from llmviz.ui.lesson.lesson_reveal import predictions


def rows(t, entries: dict[str, dict]) -> list[dict]:
    """One row per revealed claim, in the order revealed (translated headers)."""
    out = []
    for e in entries.values():
        name, where = e["effect"], e["claim"].get("where") or {}
        out.append({t("claims.col_claim"): e["id"], t("claims.col_effect"): t(f"claims.effect.{name}"),
                    t("lesson.your_prediction"): shown(name, e["predicted"], t) if e["predicted"] is not None else "—",
                    t("lesson.this_machine"): shown(name, e["measured"], t) if e["measured"] is not None else "—",
                    t("claims.col_range"): interval_text(t, judged_effect(e)),
                    t("lesson.article_a100"): shown(name, e["article"], t),
                    t("claims.col_verdict"): t(f"claims.verdict.{e['verdict']}"),
                    t("lesson.col_where"): f"{where.get('model', '?')} · {where.get('device', '?')} · {e['when']}"})
    return out


def prediction_rows(t, made: dict[str, float], entries: dict[str, dict]) -> list[dict]:
    """One row per prediction made on a claim not revealed yet: the prediction beside the article's figure."""
    out = []
    for claim_id, value in made.items():
        if claim_id not in entries:
            name = rv.effect_name(claim_id)
            out.append({t("claims.col_claim"): claim_id, t("claims.col_effect"): t(f"claims.effect.{name}"),
                        t("lesson.your_prediction"): shown(name, value, t),
                        t("lesson.article_a100"): shown(name, rv.article_effect(claim_id), t)})
    return out


def answer_rows(t, given: dict[str, dict]) -> list[dict]:
    """One row per chapter question answered, in the order answered."""
    return [{t("lesson.col_chapter"): f"§{a['chapter']}", t("lesson.col_question"): a["question"],
             t("lesson.col_given"): shown_answer(a["given"], a["unit"]),
             t("lesson.col_answer"): shown_answer(a["answer"], a["unit"]),
             t("lesson.col_right"): "✓" if a["right"] else "✗"} for a in given.values()]


def as_json(t, entries: dict[str, dict], given: dict[str, dict] | None = None,
            made: dict[str, float] | None = None) -> str:
    out = [{k: v for k, v in e.items() if k != "claim"} | {"reason": reason_text(t, e["claim"]),
                                                           "where": e["claim"].get("where")} for e in entries.values()]
    return json.dumps(jsonable({"revealed": out, "answers": list((given or {}).values()),
                                "predictions": made or {}}), ensure_ascii=False, indent=1)


def as_html(t, entries: dict[str, dict]) -> str:
    held = sum(e["verdict"] == "holds" for e in entries.values())
    return html_report(t("lesson.end_title"), rows(t, entries),
                       [(e["id"], reason_text(t, e["claim"])) for e in entries.values()],
                       t("lesson.end_count", n=len(entries), held=held))


def summary(t) -> None:
    """The claims revealed (or how to reveal one), the chapters' questions answered, and the downloads."""
    st.subheader(t("lesson.end_title"))
    entries, given, made = revealed(), answers(), predictions()
    if entries:
        st.markdown(t("lesson.end_count", n=len(entries), held=sum(e["verdict"] == "holds" for e in entries.values())))
        table = rows(t, entries)
        where = t("lesson.col_where")  # long: under the table, so that the verdicts fit a 1280 px screen
        st.table([{k: v for k, v in r.items() if k != where} for r in table], hide_index=True)
        st.caption("  \n".join(f"{e['id']} · {literal(r[where])}" for e, r in zip(entries.values(), table,
                                                                                    strict=True)))
    else:
        st.info(t("lesson.end"))
    unrevealed = prediction_rows(t, made, entries)
    if unrevealed:  # predictions made, their claims not revealed: listed too
        st.markdown(t("lesson.end_predicted", n=len(unrevealed)))
        st.table(unrevealed, hide_index=True)
    if given:
        st.markdown(t("lesson.end_answers", n=len(given), right=sum(a["right"] for a in given.values())))
        st.table(answer_rows(t, given), hide_index=True)
    if not entries and not given and not made:
        return
    a, b, c = st.columns(3)
    a.download_button(t("claims.download_json"), as_json(t, entries, given, made), "lesson.json", "application/json",
                      key="lesson_end_json")
    if entries:
        b.download_button(t("claims.download_csv"), table_csv(rows(t, entries)), "lesson.csv", "text/csv",
                          key="lesson_end_csv")
        c.download_button(t("claims.download_html"), as_html(t, entries), "lesson.html", "text/html",
                          key="lesson_end_html")
