"""From the engine's figures for a claim (llmviz.labs.claims) to its effects, a few headline numbers and its
verdict, by the claim's own rule (its declaration: llmviz/analysis/claimdefs/), then the report, the
sentences and the table every page, the CLI and the exports read (they iterate over the declarations).
"""

from __future__ import annotations

import math

from llmviz.analysis import claim_spec, stats
from llmviz.analysis.claim_parts import predicted_effect
from llmviz.analysis.claims import CANNOT_TELL, Judgement, claim_verdict, drifted, shown, shown_level


def looks_of(figures: dict | None) -> stats.Looks | None:
    """The looks a claim measured batch after batch was planned with (labs/rounds.until_decided keeps them with its
    figures: {"batch": rounds a batch, "batches": the most}); None for one measurement judged once."""
    plan = (figures or {}).get("looks")
    return stats.Looks(plan["batch"], plan["batches"]) if plan else None


def judged(claim_id: str, figures: dict | None, why_not: str = "") -> dict:
    """A claim's verdict, its effects beside the article's, and the headline numbers: JSON-ready. Each timed effect
    is judged at its look (figures["looks"]: stats.looked) and carries its rounds' effects, the interval's attained
    level and the looks the plan allowed."""
    claim = claim_spec.claim(claim_id)
    effects, head = ({}, {}) if figures is None else claim.rule(figures)
    plan = looks_of(figures)
    effects = {name: stats.looked(e, plan) for name, e in effects.items()}
    # what the arithmetic predicts for this run, per effect
    predicted = {} if figures is None else predicted_effect(claim, figures)
    floors = [head.get("noise_floor"), *(head.get("noise_floors") or {}).values()]  # the run's A-vs-A controls
    verdict, parts = claim_verdict(claim, effects, why_not, any(drifted(f) for f in floors))
    # a composite claim (K3, K4: two effects) says which of them decided its headline
    decided_by = [name for name, j in parts if j.verdict == verdict]
    return {"id": claim_id, "article": claim.article, "verdict": verdict, "decided_by": decided_by,
            "concepts": list(claim.concepts),
            "effects": [{"name": name, "article": claim.article_effects[name], "verdict": j.verdict,
                         "reason": j.reason, "band": j.band.jsonable(), "predicted": predicted.get(name),
                         **(measured(e, j, plan) if (e := j.estimate) else {})}
                        for name, j in parts],
            "figures": head}


def measured(e: stats.Estimate, j: Judgement, plan: stats.Looks | None) -> dict:
    """A judged effect's figures for JSON: the median of its rounds' effects, its interval (None where too few
    rounds leave none), the level the interval attains, the looks, each round's effect, and for "cannot tell" the
    rounds that would decide: from the spread, or where no interval exists yet, to the next look that can."""
    more = j.more_rounds
    if j.verdict == CANNOT_TELL and more is None and e.rounds and not math.isfinite(e.high - e.low):
        ahead = plan.next(e.rounds) if plan is not None else max(stats.MIN_ROUNDS, e.rounds + 1)
        more = None if ahead is None else ahead - e.rounds
    return {"measured": e.value, "low": finite(e.low), "high": finite(e.high), "rounds": e.rounds,
            "paired": e.paired, "level": e.level, "looks": e.looks, "per_round": list(e.per_round),
            "more_rounds": more, "line": j.line}


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
        if claim_id in run.get("shared", {}):  # judged on the rounds measured for another claim (K4 on K2's)
            entry["shared_with"] = run["shared"][claim_id]
        # how many batches of rounds the adaptive loop pooled (labs/rounds.py), within what budget
        entry["batches"], entry["budget_s"] = (None, None) if error else (figures.get("batches"),
                                                                          figures.get("budget_s"))
        entry["where"] = {k: figures.get(k) for k in ("model", "device", "threads") if not error}
        entry["what_was_timed"] = None if error else figures.get("what_was_timed", figures.get("what_was_measured"))
        entry["timed"] = None if error else figures.get("timed")  # its catalogue key: pages show it translated
        claims.append(entry)
    return {"quick": run["quick"], "threads": run["threads"], "claims": claims,
            "seconds": round(sum(v for k, v in run["seconds"].items() if k not in run.get("shared", {})), 1)}


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
        if e["reason"] == "out_of_range":  # which input is off, as the effect's catalogue line says
            physical = claim_spec.claim(claim["id"]).effect(e["name"]).physical or (0.0, 1.0)
            inputs = f"claims.inputs.{e['name']}"
            values |= {"range": " – ".join(shown(e["name"], x, t) for x in physical),
                       "inputs": t(inputs if inputs in t else "claims.inputs.default")}
        key = "claims.reason." + e["reason"]  # a report kept from before a reason was renamed reads as unmeasured
        label, sentence = t("claims.effect." + e["name"]), t(key if key in t else "claims.reason.not_measured",
                                                             **values)
        if e["verdict"] == CANNOT_TELL:
            more = e.get("more_rounds")
            sentence += " " + (t("claims.more_rounds", n=more, rounds=e.get("rounds", 0)) if more else
                               t("claims.more_unknown"))
        out.append(f"{label}{t('common.colon')}{sentence}")
    deciding = claim.get("decided_by") or []
    if 0 < len(deciding) < len(claim["effects"]):  # effects that disagree: which one the headline rests on
        out.append(t("claims.decided_by", effects=t("common.and").join(t(f"claims.effect.{n}") for n in deciding)))
    return " ".join(out)


def interval_values(t, e: dict) -> dict:
    """An effect's interval as the sentences and the table show it: its ends, the level they attain, the rounds, the
    band's edge."""
    def end(x):
        return shown(e["name"], x, t) if x is not None and math.isfinite(x) else "?"

    band = e.get("band") or [None, None]
    edge = e.get("line") if e.get("line") is not None else (band[0] if e["article"] > 0 else band[1])
    return {"low": end(e.get("low")), "high": end(e.get("high")), "rounds": e.get("rounds", 0), "edge": end(edge),
            "top": end(band[1] if e["article"] > 0 else band[0]), "level": shown_level(e.get("level"))}


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


def rounds_judged(claim: dict) -> int:
    """The rounds a judged claim's timed effects rest on (the most of any effect; 0: counted only, or none yet)."""
    return max((e.get("rounds") or 0 for e in claim.get("effects", [])), default=0)
