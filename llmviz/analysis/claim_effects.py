"""From the engine's figures for a claim (llmviz.labs.claims) to its effects, a few headline numbers and its
verdict (issue 11), by the claim's own rule (its declaration: llmviz/analysis/claimdefs/), then the report, the
sentences and the table every page, the CLI and the exports read (issue 48: they iterate over the declarations).
"""

from __future__ import annotations

import math

from llmviz.analysis import claim_spec
from llmviz.analysis.claim_parts import predicted_effect
from llmviz.analysis.claims import claim_verdict, shown


def judged(claim_id: str, figures: dict | None, why_not: str = "") -> dict:
    """A claim's verdict, its effects beside the article's, and the headline numbers: JSON-ready."""
    claim = claim_spec.claim(claim_id)
    effects, head = ({}, {}) if figures is None else claim.rule(figures)
    # what the arithmetic predicts for this run, per effect (issue 36)
    predicted = {} if figures is None else predicted_effect(claim, figures)
    verdict, parts = claim_verdict(claim, effects, why_not)
    return {"id": claim_id, "article": claim.article, "verdict": verdict, "concepts": list(claim.concepts),
            "effects": [{"name": name, "article": claim.article_effects[name], "verdict": j.verdict,
                         "reason": j.reason, "band": j.band.jsonable(), "predicted": predicted.get(name),
                         **({"measured": e.value, "low": finite(e.low), "high": finite(e.high), "rounds": e.rounds,
                             "paired": e.paired, "more_rounds": j.more_rounds, "line": j.line}
                            if (e := j.estimate) else {})}
                        for name, j in parts],
            "figures": head}


def finite(x: float) -> float | None:
    """An interval's end for JSON: None where one round left it unbounded."""
    return x if math.isfinite(x) else None


def report(run: dict) -> dict:
    """A claims run (llmviz.labs.claims.run_claims) judged: one entry per claim, in the order measured."""
    claims = []
    for claim_id, figures in run["claims"].items():
        error = figures.get("error") if isinstance(figures, dict) else None
        entry = judged(claim_id, None if error else figures, "error" if error else "")
        if error:
            entry["error"] = error
        entry["seconds"] = run["seconds"].get(claim_id)
        # how many batches of rounds the adaptive loop pooled (labs/rounds.py), within what budget
        entry["batches"], entry["budget_s"] = (None, None) if error else (figures.get("batches"),
                                                                          figures.get("budget_s"))
        entry["where"] = {k: figures.get(k) for k in ("model", "device", "threads") if not error}
        entry["what_was_timed"] = None if error else figures.get("what_was_timed", figures.get("what_was_measured"))
        entry["timed"] = None if error else figures.get("timed")  # its catalogue key: pages show it translated
        claims.append(entry)
    return {"quick": run["quick"], "threads": run["threads"], "claims": claims,
            "seconds": round(sum(v for v in run["seconds"].values()), 1)}


def reason_text(t, claim: dict) -> str:
    """The verdict's reason in one sentence per effect, drawn from the numbers; `t(key, **values)` translates."""
    if claim.get("error"):
        return t("claims.reason.error", error=claim["error"])
    out = []
    for e in claim["effects"]:
        if "measured" not in e:
            out.append(t("claims.reason.not_measured"))
            continue
        values = {k: shown(e["name"], e[k], t) for k in ("measured", "article")} | interval_values(t, e)
        key = "claims.reason." + e["reason"]  # a report kept from before a reason was renamed reads as unmeasured
        label, sentence = t("claims.effect." + e["name"]), t(key if key in t else "claims.reason.not_measured",
                                                             **values)
        if e["reason"] == "cannot_tell":
            more = e.get("more_rounds")
            sentence += " " + (t("claims.more_rounds", n=more, rounds=e.get("rounds", 0)) if more else
                               t("claims.more_unknown"))
        out.append(f"{label}{t('common.colon')}{sentence}")
    return " ".join(out)


def interval_values(t, e: dict) -> dict:
    """An effect's interval as the sentences and the table show it: its ends, the rounds, the band's edge."""
    def end(x):
        return shown(e["name"], x, t) if x is not None and math.isfinite(x) else "?"

    band = e.get("band") or [None, None]
    edge = e.get("line") if e.get("line") is not None else (band[0] if e["article"] > 0 else band[1])
    return {"low": end(e.get("low")), "high": end(e.get("high")), "rounds": e.get("rounds", 0), "edge": end(edge),
            "top": end(band[1] if e["article"] > 0 else band[0])}


def interval_text(t, e: dict) -> str:
    """An effect's interval as a table cell: its ends and rounds, "counted" for an exact figure, "—" unmeasured."""
    if "measured" not in e:
        return "—"
    return t("claims.counted") if not e.get("rounds") else t("claims.interval", **interval_values(t, e))


def table_rows(t, rep: dict) -> list[dict]:
    """One row per effect of every claim, for the page's table and the CSV (translated headers)."""
    rows = []
    for c in rep["claims"]:
        for e in c["effects"]:
            rows.append({t("claims.col_claim"): c["id"], t("claims.col_article"): t(f"claims.article.{c['id']}"),
                         t("claims.col_effect"): t(f"claims.effect.{e['name']}"),
                         t("claims.col_article_effect"): shown(e["name"], e["article"], t),
                         t("claims.col_measured"): shown(e["name"], e["measured"], t) if "measured" in e else "—",
                         t("claims.col_range"): interval_text(t, e),
                         t("claims.col_predicted"): (shown(e["name"], e["predicted"], t)
                                                     if e.get("predicted") is not None else "—"),
                         t("claims.col_verdict"): t(f"claims.verdict.{e['verdict']}")})
    return rows
