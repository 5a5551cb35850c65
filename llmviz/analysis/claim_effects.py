"""From the engine's figures for a claim (llmviz.labs.claims) to its effects, a few headline numbers and its
verdict (issue 11). One function per claim; each reads only what the measurement returned.

Each returns (effects {name: Effect}, headline {name: number}) where the headline numbers are what the page's
table and the CLI's JSON show beside the article's figures.
"""

from __future__ import annotations

import math

from llmviz.analysis import stats
from llmviz.analysis.claims import CLAIMS, Effect, claim_verdict, noise_floor, rounds_of, saving, shown, speedup
from llmviz.analysis.lab import side_prediction
from llmviz.analysis.predict import Setup, Shape, qkv_traffic_bytes
from llmviz.analysis.prefill_fit import fit_prefill
from llmviz.analysis.serving import kv_figures, metrics


def at(spreads: dict, i: int) -> dict:
    """The i-th length's {median, min, max, all} from per-length lists."""
    return {k: spreads[k][i] for k in ("median", "min", "max", "all") if k in spreads}


def k1_pair(lengths) -> tuple[int | None, int | None]:
    """The article doubles 256 -> 512 tokens: the measured pair (n, 2n) nearest that, (None, None) without one."""
    have = set(lengths)
    return max(((n, 2 * n) for n in have if 2 * n in have and 2 * n <= 512), default=(None, None))


def k1(f: dict):
    ms = dict(zip(f["lengths"], f["prefill_ms"], strict=True))
    short, double = k1_pair(ms)
    if short is None or len(ms) < 3:
        return {}, {}
    fit = fit_prefill(f["lengths"], [m["median"] for m in f["prefill_ms"]])
    longest = max(f["lengths"])
    head = {"ms_by_length": {n: m["median"] for n, m in ms.items()},
            "short": short, "ms_short": ms[short]["median"], "ms_double": ms[double]["median"], "fit_a": fit.a,
            "fit_b": fit.b,
            "fit_c": fit.c, "r2": fit.r2, "takeover_tokens": fit.takeover, "longest": longest,
            "dominant_at_longest": fit.dominant(longest), **{f"share_{k}": v for k, v in fit.shares(longest).items()}}
    control = f.get("control")
    if control and control["length"] == short:  # the short length against itself in the same rounds
        head["noise_floor"] = noise_floor(ms[short], control["prefill_ms"])
    # a sweep in rounds over the lengths pairs them by round; one kept from before ran each length's repeats
    # together: the two medians, each resampled
    return {"doubling_256_to_512": speedup(ms[double], ms[short], paired=f.get("paired", False))}, head


def k2(f: dict):
    pred = side_prediction(f["side"], f["prompt_tokens"], f["steps"], f["bandwidth"]["gb_per_s"])
    ms = f["decode_ms_per_token"]
    timed = rounds_of(ms)
    probed = f["bandwidth"].get("rounds_gb_per_s") or [f["bandwidth"]["gb_per_s"]] * len(timed)
    # per round: the bytes a step reads at that round's own probe, over that round's step: the probe's drift
    # between rounds is in the interval too (issue 36: it moved K2 across the line between runs)
    pair = stats.paired if len(timed) == len(probed) else stats.unpaired  # a recording's rounds may not pair
    share = pair(timed, probed, lambda step_ms, gbps: pred.read_bytes / (gbps * 1e6) / step_ms)
    return {"memory_share": share}, {"decode_ms_per_token": ms["median"], "bound_ms": pred.bound_ms,
                                     "bandwidth_gb_per_s": f["bandwidth"]["gb_per_s"], "read_bytes": pred.read_bytes}


def k3(f: dict):
    lengths, ms = f["lengths"], f["ms_per_token"]
    short = max((i for i, n in enumerate(lengths) if n <= 512), default=None)
    long = max((i for i, n in enumerate(lengths) if n > 1024), default=None)  # "past 1024 tokens"
    if not {"paged", "contiguous"} <= set(ms):
        return {}, {}
    effects = {}  # each range judged where the sweep reached it (a model of 512 tokens never passes 1024)
    if short is not None:
        effects["contiguous_faster_short"] = speedup(at(ms["paged"], short), at(ms["contiguous"], short))
    if long is not None:
        effects["paged_faster_long"] = speedup(at(ms["contiguous"], long), at(ms["paged"], long))
    head = {f"{layout}_ms_at_{lengths[i]}": ms[layout]["median"][i] for layout in ms for i in (short, long)
            if i is not None}
    if "control" in f:  # the first layout against its second run in each round, at each judged length
        again, first = f["control"]["ms_per_token"], ms[f["control"]["layout"]]
        head["noise_floors"] = {lengths[i]: noise_floor(at(first, i), at(again, i)) for i in (short, long)
                                if i is not None}
    return effects, head


def two_sides(f: dict):
    a, b = f["decode_ms_per_token"]
    # the cached tokens and the A-vs-A control's interval, where the run had them (a decode pair: issue 36)
    extra = {k: f[k] for k in ("context",) if k in f}
    if f.get("control_ms_per_token"):
        extra["noise_floor"] = noise_floor(a, f["control_ms_per_token"])
    return speedup(a, b), {"decode_ms_a": a["median"], "decode_ms_b": b["median"], "spec_a": f["specs"][0],
                           "spec_b": f["specs"][1], **extra} | bytes_read(f)


def bytes_read(f: dict) -> dict:
    """What a decode step of each side reads, by the arithmetic (analysis/predict.py: this run's shapes, dtypes,
    prompt and steps), and KV's share of A's (predicted_effect turns them into the effect they predict). {} for a
    recording from before the sides were kept."""
    if "sides" not in f:
        return {}
    pa, pb = (side_prediction(s, f["prompt_tokens"], f["steps"], None) for s in f["sides"])
    return {"read_bytes_a": pa.read_bytes, "read_bytes_b": pb.read_bytes, "kv_read_bytes_a": pa.kv_read_bytes,
            "kv_share_of_read_a": pa.kv_read_bytes / pa.read_bytes}


FROM_BYTES = {"K4": "decode_speedup", "K10": "throughput_gain", "K11": "time_saved"}  # effects the bytes predict


def predicted_effect(claim_id: str, f: dict) -> dict:
    """{effect: what the bytes a decode step reads predict for it} from a run's or a workload's sides (measured or
    not yet: Measurer.workload), for the claims whose effect is a decode step's time: a speed-up (A's bytes over
    B's, minus 1) or a saving (1 - B's over A's). {} for the others, and for a recording without its sides."""
    read = bytes_read(f)
    name = FROM_BYTES.get(claim_id)
    if not read or name is None:
        return {}
    ratio = read["read_bytes_b"] / read["read_bytes_a"]
    return {name: 1 - ratio if name == "time_saved" else 1 / ratio - 1}


def k4(f: dict):
    faster, head = two_sides(f)
    before, after = f["kv_bytes_allocated"]
    return {"kv_memory_saved": Effect.exact(1 - after / before), "decode_speedup": faster}, head | {
        "kv_bytes_a": before, "kv_bytes_b": after, "predicted": predicted_effect("K4", f)}


def k5(f: dict):
    by = {s["batch"]: s["prefill_ms"] for s in f["sizes"]}
    if 1 not in by or 8 not in by:
        return {}, {}
    one, eight = by[1], by[8]
    # tokens/s at batch 8 over batch 1, minus 1, per round (the sweep runs every size in each round)
    gain = stats.paired(rounds_of(one), rounds_of(eight), lambda a, b: 8 * a / b - 1)
    head = {f"prefill_ms_batch_{b}": by[b]["median"] for b in sorted(by)}
    control = f.get("control")
    if control and control["batch"] == 1:  # batch 1 against itself in the same rounds
        head["noise_floor"] = noise_floor(one, control["prefill_ms"])
    return {"prefill_throughput_gain": gain}, head


def k6(f: dict):
    eager, sdpa = f["attention_ms"]["eager"], f["attention_ms"]["sdpa"]
    floor = {"noise_floor": noise_floor(eager, f["control_ms"])} if "control_ms" in f else {}  # eager vs eager
    return {"attention_speedup": speedup(eager, sdpa)}, {"eager_ms": eager["median"], "sdpa_ms": sdpa["median"],
                                                       "tokens": f["tokens"], **floor}


def k7(f: dict):
    static, continuous = (metrics(f[s])["slot_utilization"] for s in ("static", "continuous"))
    depends = {k: f[k] for k in ("output_lens", "requests") if k in f}  # the trace's, which the count depends on
    return {"utilization_gain": Effect.exact(continuous - static)}, {"static": static, "continuous": continuous,
                                                                      **depends}


def k8(f: dict):
    alone, spec = f["target_alone_ms_per_token"], f["speculative_ms_per_token"]
    floor = {"noise_floor": noise_floor(alone, f["control_alone_ms_per_token"])} if (
        "control_alone_ms_per_token" in f) else {}  # the target alone against itself in the same rounds
    return {"decode_time_saved": saving(alone, spec)}, {"target_alone_ms": alone["median"],
                                                        "speculative_ms": spec["median"],
                                                        "acceptance_rate": f["acceptance_rate"],
                                                        "identical_outputs": f["identical_outputs"], **floor}


def k9(f: dict):
    without, with_ = (kv_figures(f[s])["peak_kv_bytes"] for s in ("without", "with"))
    depends = {k: f[k] for k in ("shared_prefix_tokens", "prompt_tokens_mean") if k in f}
    return {"kv_memory_saved": Effect.exact(1 - with_ / without)}, {"peak_kv_without": without,
                                                                    "peak_kv_with": with_, **depends}


def k10(f: dict):
    faster, head = two_sides(f)
    return {"throughput_gain": faster}, head | {"predicted": predicted_effect("K10", f)}


def k11(f: dict):
    """Judged on decode time (measured); the q, k, v bytes fusion saves are predicted, never measured."""
    _, head = two_sides(f)
    setup = Setup(Shape.from_config(f["model_config"]), dtype=f["dtype"])
    n = f["prompt_tokens"]
    unfused, fused = qkv_traffic_bytes(setup, n, False), qkv_traffic_bytes(setup, n, True)
    predicted_decode = 1 - qkv_traffic_bytes(setup, 1, True) / qkv_traffic_bytes(setup, 1, False)
    a, b = f["decode_ms_per_token"]
    return {"time_saved": saving(a, b)}, head | {"predicted": predicted_effect("K11", f),
        "dtype": f["dtype"], "predicted_prefill_bytes_unfused": unfused, "predicted_prefill_bytes_fused": fused,
        "predicted_prefill_traffic_saved": 1 - fused / unfused, "predicted_decode_traffic_saved": predicted_decode}


RULES = {"K1": k1, "K2": k2, "K3": k3, "K4": k4, "K5": k5, "K6": k6, "K7": k7, "K8": k8, "K9": k9, "K10": k10,
         "K11": k11}


def judged(claim_id: str, figures: dict | None, why_not: str = "") -> dict:
    """A claim's verdict, its effects beside the article's, and the headline numbers: JSON-ready."""
    claim = CLAIMS[claim_id]
    effects, head = ({}, {}) if figures is None else RULES[claim_id](figures)
    predicted = head.pop("predicted", {})  # what the arithmetic predicts for this run, per effect (issue 36)
    verdict, parts = claim_verdict(claim, effects, why_not)
    return {"id": claim_id, "article": claim.article, "verdict": verdict, "concepts": list(claim.concepts),
            "effects": [{"name": name, "article": dict(claim.effects)[name], "verdict": j.verdict,
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
