"""The article's claims K1-K11 measured on this machine, each beside the article's figure with a verdict and the
reason drawn from the data; K1's prefill sweep with its a + b*n + c*n^2 fit; exports (C7, C17, C18)."""

import streamlit as st

from llmviz.analysis.claim_effects import table_rows
from llmviz.analysis.claim_spec import ids as claim_ids
from llmviz.ui import article_view, server, state
from llmviz.ui.charts import chart
from llmviz.ui.chrome import heading, translator
from llmviz.ui.claims import claim_rounds, claims_run, shared_runs
from llmviz.ui.latency import latency_curves, roofline_view
from llmviz.ui.navigation import KEEP


def controls(t) -> tuple[list[str], bool, bool]:
    left, right = st.columns([3, 1])
    ids = left.multiselect(t("claims.only"), list(claim_ids()), default=list(claim_ids()), key="claims_ids", **KEEP,
                           format_func=lambda k: f"{k} · {t(f'claims.article.{k}')}")
    quick = right.toggle(t("claims.quick"), value=True, key="claims_quick", **KEEP, help=t("claims.quick_help"))
    go = right.button(t("claims.run"), type="primary", disabled=not ids or not server.engine_available(),
                      width="stretch")
    return ids, quick, go


def fit_details(t, rep: dict) -> None:
    """The prefill claims' sweeps with their a + b*n + c*n^2 fit (K1, C18)."""
    for i, (fig, text) in enumerate(claims_run.fit_views(t, rep)):
        chart(t, fig, key=f"claims_fit_{i}")
        st.markdown(text)
        st.caption(t("claims.k1_slip"))


def results(t, rep: dict) -> None:
    st.caption(t("claims.total", n=len(rep["claims"]), seconds=rep["seconds"],
                 mode=t("claims.mode_quick" if rep["quick"] else "claims.mode_full"), threads=rep["threads"]))
    st.dataframe(table_rows(t, rep), hide_index=True, height="content", key="claims_table")
    for c in rep["claims"]:
        claims_run.verdict_box(t, c)
        if rep["quick"] and not c.get("error"):  # the lesson's workload: which run, and a finer one
            shared_runs.page_caption(t, c, rep, "claims_page")
        if c.get("shared_with"):
            st.caption(t("claims.shared_with", claim=c["id"], other=c["shared_with"]))
        claims_run.floors(t, c)  # the run's A-vs-A noise floor, where it had a control
        claim_rounds.rounds_expander(t, c, "claims_rounds")  # the rounds behind the figure: their median is it
        beside = claims_run.beside(t, c)
        if beside:
            st.caption(beside)
        if c.get("where") and c.get("what_was_timed"):
            where = c["where"]
            st.caption(t("claims.where", claim=c["id"], model=where.get("model", "?"), device=where.get("device", "?"),
                         threads=where.get("threads", "?"), seconds=c["seconds"] or 0, what=t.timed(c)))
    fit_details(t, rep)
    a, b, c = st.columns(3)
    a.download_button(t("claims.download_json"), claims_run.as_json(t, rep), "claims.json", "application/json",
                      key="claims_json")
    b.download_button(t("claims.download_csv"), claims_run.as_csv(t, rep), "claims.csv", "text/csv",
                      key="claims_csv")
    c.download_button(t("claims.download_html"), lambda: claims_run.as_html(t, rep), "claims.html", "text/html",
                      key="claims_html")  # built when clicked: plotly.js inlined makes it several MB


def main() -> None:
    t = translator()
    heading(t, "claims")
    ids, quick, go = controls(t)
    rep = claims_run.run(t, ids, quick, state.settings().device) if go else claims_run.kept()
    if rep is None:
        st.info(t("claims.none_yet"))
    else:
        results(t, rep)
    roofline_view.section(t)
    latency_curves.section(t)
    article_view.section(t)


main()
