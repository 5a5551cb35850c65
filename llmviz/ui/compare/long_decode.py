"""The Compare page's long-context section (claims K2, K4, K10, K11; C8, C11, C14, C18): A and B decoding
after `cmp_ctx` cached tokens by the decode claims' own lab and workload (llmviz/labs/decode_pair.py), with the
A-vs-A noise floor, what the bytes predict, and, where A and B are a decode claim's pair on that claim's own workload,
the claim judged by the one rule the Claims page and the lesson use (on another workload: shown, not judged). The
lesson's K4, K10 and K11 steps open it with their claim's pair and workload.
"""

from __future__ import annotations

import streamlit as st

from llmviz.analysis import claim_spec
from llmviz.analysis.claim_parts import bytes_speedup
from llmviz.analysis.claim_spec import RATIO
from llmviz.analysis.claims import shown_as, shown_level, speedup
from llmviz.ui import measure
from llmviz.ui.chrome import literal
from llmviz.ui.claims import claim_rounds, claims_run, shared_runs
from llmviz.ui.settings import Settings

RESULT_KEY, WIDGET = "llmviz_compare_long", "cmp_ctx_w"


def key_of(s: Settings, model: str, context: int) -> tuple:
    return model, s.device, s.seed, s.compare.a, s.compare.b, context, s.compare.steps


def longest(max_seq: int, steps: int) -> int:
    """The most tokens a run may cache first: a session's slots less the untimed step and the timed ones (as
    labs/decode_pair.check_fits counts them)."""
    return max(1, max_seq - 1 - steps)


def run(t, s: Settings, model: str, context: int, load) -> dict | None:
    from llmviz import service

    def work(queued):
        # the lab's own rounds: the quick decode claims' (labs/claims.ClaimsPlan.pair_workload)
        config = service.DecodePairConfig(a=s.compare.a, b=s.compare.b, model=model, context=context,
                                          steps=s.compare.steps, seed=s.seed, device=s.device)
        with queued() as progress:
            result = service.measure.decode_pair(config, load, lambda f, stage, values: progress(
                f, t(f"progress.compare.{stage}", **{"side": "", "round": 0, "rounds": 0, **values})))
        return shared_runs.page_run(result, "compare", judged_claims(result))

    return measure.run(t, RESULT_KEY, key_of(s, model, context), work, text=t("progress.compare.load", side="A"))


def judged_claims(result: dict) -> dict[str, dict]:
    """The claims this pair is the workload of, judged on it: the decode claim its specs are and those that read
    the same pair (K2 with K4); none when it ran another workload."""
    claim = result.get("claim")
    if not claim or not claim["workload"]:
        return {}
    return {cid: claims_run.judged_here(cid, claim["figures"]) for cid in claim_spec.sharing(claim["id"])}


def _keep_context() -> None:
    from llmviz.ui import state

    state.update(compare={"ctx": int(st.session_state[WIDGET])})  # only what the student typed goes to the link


def context_box(t, s: Settings, top: int) -> int:
    """The cached tokens this model allows: the setting clamped to `top` without writing the clamp back, so a
    model of a shorter context leaves the link's 1,024 for the next model."""
    seeded = (s.compare.ctx, top)
    if st.session_state.get(WIDGET + "_seeded") != seeded or WIDGET not in st.session_state:
        st.session_state[WIDGET], st.session_state[WIDGET + "_seeded"] = min(s.compare.ctx, top), seeded
    return int(st.number_input(t("compare.long.context"), 1, top, step=64, key=WIDGET, on_change=_keep_context,
                               help=t("compare.long.context_help", top=top)))


def section(t, s: Settings, model: str, max_seq: int, load) -> None:
    """The section's heading, its context box and button, and the kept result for these settings."""
    from llmviz import service

    st.subheader(t("compare.long.title"))
    st.caption(t("compare.long.what", rounds=service.DecodePairConfig().repeats))
    a, b = st.columns([1, 2])
    with a:
        context = context_box(t, s, longest(max_seq, s.compare.steps))
    b.markdown("&nbsp;")
    if b.button(t("compare.long.run", n=context), key="cmp_long_run"):
        run(t, s, model, context, load)
    result = measure.kept(RESULT_KEY, key_of(s, model, context))
    if result is not None:
        draw(t, result)


def draw(t, result: dict) -> None:
    """Both sides' ms per token with their intervals, B's speed-up, the A-vs-A floor, the bytes' prediction and,
    for a decode claim's pair, its verdict."""
    a, b = (result[side]["decode_ms_per_token"] for side in "ab")
    effect = speedup(a, b)  # A's time over B's, minus 1: B's speed-up, paired by round (the claims' rule)
    floor = result["control"]["noise_floor"] if "control" in result else None
    sides = [{k: result[side][k] for k in ("engine_config", "model_config", "kv")} for side in "ab"]
    # B's decode speed-up from the bytes each side's step reads: the prediction for any pair
    predicted = bytes_speedup({"sides": sides, "prompt_tokens": result["prompt_tokens"], "steps": result["steps"]})
    cols = st.columns(4)
    for col, side, ms in ((cols[0], "A", a), (cols[1], "B", b)):
        spec = result[side.lower()]["spec"] or t("compare.defaults")
        col.metric(t("compare.long.ms", side=side), f"{ms['median']:.2f} ms", help=literal(spec))
    cols[2].metric(t("compare.long.speedup"), shown_as(RATIO, effect.value, t),
                   help=t("compare.long.interval", low=shown_as(RATIO, effect.low, t), level=shown_level(effect.level),
                          high=shown_as(RATIO, effect.high, t), rounds=effect.rounds))
    cols[3].metric(t("compare.long.predicted"), "—" if predicted is None else shown_as(RATIO, predicted, t))
    st.markdown(t("compare.long.sentence", low=shown_as(RATIO, effect.low, t), level=shown_level(effect.level),
                  high=shown_as(RATIO, effect.high, t), rounds=effect.rounds, n=result["context"],
                  model=literal(result["model"]), device=result["device"], threads=result["threads"]))
    if floor is not None:
        claims_run.floor_caption(t, floor, t("compare.m.decode_ms_per_token"))
    claim = result.get("claim")
    if claim and claim["workload"]:  # the claim's own measurement: judged by the claims' one rule
        judged = claims_run.judged_here(claim["id"], claim["figures"])
        claims_run.verdict_box(t, judged)
        shared_runs.page_caption(t, judged, result, "compare")
        claim_rounds.rounds_expander(t, judged, "compare_rounds")  # the rounds behind its figure
    elif claim:  # its pair on another workload: shown, not judged (the lesson and the Claims page would differ)
        w = claim["wants"]
        st.caption(t("compare.long.not_judged", claim=claim["id"], model=literal(w["model"]), n=w["context"],
                     steps=w["steps"]))
    st.caption(t.timed(result))
