"""The Serving page's speculative decoding tab (C16; claim K8): a draft proposes k tokens, the target checks them
in one step; the acceptance rate, the measured speed-up beside the one predicted from the round's costs, and each
round's proposed and accepted tokens."""

from __future__ import annotations

import streamlit as st

from llmviz.analysis.serving import CLOSE, round_costs, round_gap
from llmviz.analysis.serving_step import verification_attention
from llmviz.analysis.tokens import token_label
from llmviz.trace.config import ATTN_BACKENDS, KV_LAYOUTS, EngineConfig
from llmviz.ui import measure
from llmviz.ui.charts import chart
from llmviz.ui.chrome import literal
from llmviz.ui.names import label
from llmviz.ui.navigation import KEEP
from llmviz.ui.serving import serving_run as run
from llmviz.ui.serving.serving_view import downloads
from llmviz.viz.attention import attention_heatmap
from llmviz.viz.serving import rounds_figure


def speculative_tab(t, s) -> None:
    st.markdown(t("serving.spec_intro"))
    a, b, c, d = st.columns([2, 2, 1, 1])
    draft = a.selectbox(t("serving.draft"), run.DRAFTS, key="spec_draft_w", **KEEP,
                        format_func=lambda n: t("serving.draft.self") if n == run.TARGET else t("serving.draft.small"))
    k = b.slider(t("serving.k"), 1, 8, 4, key="spec_k_w", **KEEP)
    temperature = c.number_input(t("serving.temperature"), 0.0, 2.0, 0.0, 0.1, key="spec_temp_w", **KEEP,
                                 help=t("serving.temperature_help"))
    seed = d.number_input(t("serving.seed"), 0, 2**31 - 1, 0, key="spec_seed_w", **KEEP)
    st.caption(t("compare.prompt_note", prompt=literal(s.prompt)))
    backend, layout = s.attn, s.switches().get("kv_layout", EngineConfig.kv_layout)
    st.caption(t("serving.spec_engine", backend=label(t, ATTN_BACKENDS, backend), layout=label(t, KV_LAYOUTS, layout)))
    wanted = (s.device, s.prompt, int(k), draft, round(float(temperature), 3), int(seed), backend, layout)
    result = run.speculative(t, wanted) if st.button(t("serving.run_spec")) else measure.kept(run.SPEC_KEY, wanted)
    if result is None:
        return
    cols = st.columns(4)
    cols[0].metric(t("serving.acceptance"), f"{result['acceptance_rate']:.0%}")
    cols[1].metric(t("serving.measured"), f"{result['measured_speedup']:.2f}×")
    cols[2].metric(t("serving.predicted"), f"{result['predicted_speedup']:.2f}×")
    cols[3].metric(t("serving.cost_ratio"), f"{result['cost_ratio']:.2f}")
    same = {True: t("serving.spec_same"), False: t("serving.spec_differ"), None: t("serving.spec_sampled")}[
        result["identical_outputs"]]
    st.markdown(t("serving.spec_verdict", same=same, ms=result["ms_per_token"],
                  alone=result["target_alone_ms_per_token"]))
    costs = round_costs(result)
    st.caption(f"{t('serving.spec_costs', step=costs['target_ms'], k1=costs['k'] + 1, **costs)} "
               f"{t('serving.spec_gap.' + round_gap(costs), close=CLOSE)}")
    tokens = result["tokens"]  # each shown by the one label rule: ␣, ↵, <e6>
    rounds = [{"proposed": r.proposed, "accepted": r.accepted,
               "pieces": [token_label(tokens, i) for i in r.proposed], "token_piece": token_label(tokens, r.token)}
              for r in result["rounds"]]
    names = {"accepted": t("serving.accepted"), "rejected": t("serving.rejected"), "target": t("serving.target_token")}
    chart(t, rounds_figure(rounds, names, t("serving.rounds_title", k=result["k"]), t("serving.x_position"),
                           t("serving.y_round")), "spec_rounds")
    downloads(t, [{"round": i, "proposed": " ".join(map(str, r.proposed)), "accepted": r.accepted, "token": r.token,
                   "draft_ms": r.draft_ms, "verify_ms": r.verify_ms} for i, r in enumerate(result["rounds"])],
              "speculative")
    look_inside_round(t, wanted, len(result["rounds"]))


def look_inside_round(t, wanted: tuple, rounds: int) -> None:
    """A round run again with its verification recorded: the target's one step over x, d1..dk, each fed token's
    attention over the keys (the last layer, the mean over heads), the drafts it kept (✓), the first it rejected (✗)
    and those after it, never judged (–)."""
    index = st.slider(t("serving.spec_round"), 0, rounds - 1, 0, key="spec_round_w") if rounds > 1 else 0
    if st.button(t("serving.spec_look", round=index), key="spec_look_w"):
        look = run.speculative_round(t, wanted, index)
    else:
        look = measure.kept(run.SPEC_LOOK_KEY, (*wanted, index))
    if look is None or look["step"] is None:
        return
    step, rnd, tokens = look["step"], look["rounds"][index], look["tokens"]
    layer = step.kv["layers"] - 1
    z, hidden = verification_attention(step, layer)
    marks = ["✓" if i < rnd.accepted else "✗" if i == rnd.accepted else "–" for i in range(len(rnd.proposed))]
    labels = [f"x {token_label(tokens, int(step.input_ids[0, 0]))}",
              *(f"d{i + 1} {token_label(tokens, d)} {m}" for i, (d, m) in enumerate(zip(rnd.proposed, marks,
                                                                                       strict=True)))]
    chart(t, attention_heatmap(z, labels, [str(p) for p in range(z.shape[1])],
                               t("serving.spec_look_title", round=index, layer=layer), t("serving.look.x"),
                               t("serving.spec_look_y"), t("serving.look.value"), probabilities=True, hidden=hidden),
          "spec_look_attention")
    st.caption(t("serving.spec_look_caption", k=len(rnd.proposed), n=len(labels), kept=rnd.accepted,
                 token=literal(token_label(tokens, rnd.token)), ms=step.timings["total_ms"]))
