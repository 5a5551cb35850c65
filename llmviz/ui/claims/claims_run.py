"""The Claims page's run: measure the chosen claims with a progress bar on the shared model cache (queued in
public mode), keep the judged report in this browser session, and export it as JSON, CSV and one HTML page."""

from __future__ import annotations

import json
import time

import streamlit as st

from llmviz.analysis import claim_spec
from llmviz.analysis.claim_effects import judged, reason_text, report, table_rows
from llmviz.analysis.claim_spec import RATIO
from llmviz.analysis.claims import shown_as, shown_level
from llmviz.analysis.lab import jsonable
from llmviz.analysis.prefill_fit import fit_prefill
from llmviz.errors import LlmvizError
from llmviz.ui import measure
from llmviz.ui.chrome import html_report, table_csv
from llmviz.ui.claims.shared_runs import now, offer
from llmviz.ui.server import load
from llmviz.viz.claims import prefill_fit_figure

REPORT_KEY = "llmviz_claims_report"


def run(t, ids: list[str], quick: bool, device: str) -> dict | None:
    """Measure `ids`; the judged report (also kept in the session), or None after a message. The report is kept
    whatever is chosen afterwards: it names the claims it measured, in what mode, on which device."""
    from llmviz import service

    def work(queued):
        with queued() as progress:
            raw = service.measure.claims(
                ",".join(ids), quick=quick, device=device, load_fn=load,
                progress=lambda f, claim, values: progress(f, t("claims.progress", claim=claim)))
        rep = report(raw)
        # the prefill sweeps the fit figures are drawn from (K1's)
        rep["raw_fits"] = {c: raw["claims"][c] for c in raw["claims"] if c in fitted()}
        rep["when"], rep["at"] = now(), time.time()  # the lesson labels a claim it reuses from here with its time
        if quick:  # the lesson's workload: each claim's run offered to the server (ui/claims/shared_runs.py)
            for c in rep["claims"]:
                offer(c, rep["when"], "claims_page", rep["at"])
        return rep

    return measure.run(t, REPORT_KEY, None, work, text=t("claims.progress", claim=ids[0]))


def judged_here(claim_id: str, result: dict) -> dict:
    """A full page's own sweep judged by the claims' one rule (analysis/claims.judge, the Claims page's and the
    lesson's), with where it ran: the KV layouts page's sweep as K3, the Batch page's as K5."""
    return judged(claim_id, result) | {"where": {k: result.get(k) for k in ("model", "device", "threads")}}


def judged_sweep(lab_kind: str, result: dict) -> dict:
    """A full page's sweep judged as the claim its lab kind measures (the KV layouts page's as K3)."""
    return judged_here(claim_spec.measured_by(lab_kind)[0].id, result)


def fitted() -> tuple[str, ...]:
    """The claims measured by a prefill sweep: the page draws their a + b*n + c*n^2 fit."""
    return tuple(c.id for c in claim_spec.measured_by("prefill_sweep"))


def verdict_box(t, c: dict) -> None:
    """A judged claim's verdict and its reason, in the box of its verdict's colour (the Claims page, the lesson)."""
    box = {"holds": st.success, "does_not_hold": st.warning}.get(c["verdict"], st.info)
    box(f"**{c['id']} · {t('claims.verdict.' + c['verdict'])}**{t('common.colon')}{reason_text(t, c)}")


def floor_caption(t, floor: dict, what: str) -> None:
    """An A-vs-A control's interval (analysis/claims.noise_floor), as B's speed-up is shown; nothing for one round,
    which has no interval."""
    if floor.get("low") is None or floor.get("high") is None:
        return
    st.caption(t("compare.floor", what=what, low=shown_as(RATIO, floor["low"], t),
                 high=shown_as(RATIO, floor["high"], t), rounds=floor["rounds"], level=shown_level(floor.get("level"))))


def floors(t, c: dict) -> None:
    """A judged claim's A-vs-A floors, one caption each: K3's at each length it is judged at."""
    figures = c.get("figures") or {}
    if figures.get("noise_floor"):
        floor_caption(t, figures["noise_floor"], c["id"])
    for n, floor in (figures.get("noise_floors") or {}).items():  # JSON keys: strings
        floor_caption(t, floor, t("claims.floor_at", claim=c["id"], n=int(n)))


def kept() -> dict | None:
    return measure.kept(REPORT_KEY)


def fit_view(t, lengths: list[int], spreads: list[dict], title: str):
    """(figure, sentence) of a prefill sweep fitted with a + b*n + c*n^2 (K1, C18): which term dominates at the
    longest length and where the quadratic one takes over; None with fewer than three lengths."""
    try:
        fit = fit_prefill(lengths, [m["median"] for m in spreads])
    except LlmvizError:
        return None
    names = {"measured": t("claims.k1_measured"), "fitted": t("claims.k1_fitted"),
             **{term: t(f"claims.term.{term}") for term in ("fixed", "linear", "quadratic")}}
    fig = prefill_fit_figure(lengths, spreads, fit, names, title, t("claims.k1_x"), t("claims.k1_y"))
    longest = max(lengths)
    takeover = t("claims.k1_takeover", n=fit.takeover) if fit.takeover is not None else t("claims.k1_no_takeover")
    text = t("claims.k1_fit", a=fit.a, b=fit.b, c=fit.c, r2=fit.r2, longest=longest,
             dominant=t(f"claims.term.{fit.dominant(longest)}"), takeover=takeover, **fit.shares(longest))
    return fig, text


def fit_views(t, rep: dict) -> list:
    """Each prefill claim's sweep as (figure, sentence); none where it was not measured."""
    views = []
    for claim_id, raw in (rep.get("raw_fits") or {}).items():
        if raw and "error" not in raw:
            view = fit_view(t, raw["lengths"], raw["prefill_ms"], t("claims.fit_title", claim=claim_id))
            views += [view] if view is not None else []
    return views


def as_json(t, rep: dict) -> str:
    out = {k: v for k, v in rep.items() if k != "raw_fits"}
    out["claims"] = [{**c, "reason": reason_text(t, c)} for c in rep["claims"]]
    return json.dumps(jsonable(out), ensure_ascii=False, indent=1)


def as_csv(t, rep: dict) -> str:
    return table_csv(table_rows(t, rep))


def as_html(t, rep: dict) -> str:
    """One self-contained page: the table, each claim's reason and the K1 figure (plotly.js inlined: it opens
    offline)."""
    items = [(c["id"], f"({t('claims.verdict.' + c['verdict'])}){t('common.colon')}{reason_text(t, c)}")
             for c in rep["claims"]]
    views = fit_views(t, rep)
    plot = "".join(fig.to_html(full_html=False, include_plotlyjs=i == 0) for i, (fig, _) in enumerate(views))
    total = t("claims.total", n=len(rep["claims"]), seconds=rep["seconds"],
              mode=t("claims.mode_quick" if rep["quick"] else "claims.mode_full"), threads=rep["threads"])
    return html_report(t("claims.title"), table_rows(t, rep), items, total, plot)


def beside(t, c: dict) -> str | None:
    """The article's own figure beside this machine's, where the claim's declaration has such a sentence
    (claims.beside.<id>: K2's step time, K10's tokens per second, K11's traffic beside its time); None
    for the others or a claim not measured."""
    read = claim_spec.claim(c["id"]).beside
    values = read(c.get("figures") or {}) if read is not None else None
    if values is None:
        return None
    where = c.get("where") or {}
    place = {k: where.get(k, "?") for k in ("model", "device", "threads")}
    return t(f"claims.beside.{c['id']}", **place | values)
