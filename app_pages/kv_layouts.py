"""KV layouts (C6, C8, C9; claim K3): the contiguous, growing and paged caches of one live run (and any layout an
extension registered, in the summary), drawn as they stand after each step; then a length sweep of decode
ms/token for each, beside the article's claim."""

import json

import streamlit as st

from llmviz.analysis.kv_memory import human
from llmviz.ui import article_view, claims_run, locality_view, server, state
from llmviz.ui import layouts_run as run
from llmviz.ui.charts import chart
from llmviz.ui.chrome import heading, literal, table_csv, translator
from llmviz.viz import kv_layouts as fig


def summary(t, live) -> None:
    snaps = {layout: live.kv(layout) for layout in live.sessions}
    k = snaps["contiguous"]
    phase = t("layouts.phase_prefill") if live.cursor == 0 else t("layouts.phase_decode")
    st.markdown(t("layouts.step_line", step=live.cursor, phase=phase,
                  lens=", ".join(map(str, k["seq_lens"])), bpt=human(k["bytes_per_token"])))
    st.table({t("layouts.col.layout"): [run.layout_name(t, x) for x in snaps],
              t("layouts.col.slots"): [s["slots_allocated"] for s in snaps.values()],
              t("layouts.col.unused"): [s["wasted_slots"] for s in snaps.values()],
              t("layouts.col.allocated"): [human(s["bytes_allocated"]) for s in snaps.values()],
              t("layouts.col.used"): [human(s["bytes_used"]) for s in snaps.values()],
              t("layouts.col.copied"): [human(s["bytes_copied_step"]) if "bytes_copied_step" in s else "—"
                                        for s in snaps.values()]})


def contiguous(t, live, labels) -> None:
    kv = live.kv("contiguous")
    st.subheader(t("layouts.contiguous_title"))
    unused = kv["slots_allocated"] - sum(kv["seq_lens"])
    chart(t, fig.contiguous_rows(kv["seq_lens"], kv["max_seq"], labels, (t("layouts.used"), t("layouts.unused")),
                                 t("layouts.contiguous_fig", unused=unused, total=kv["slots_allocated"]),
                                 t("layouts.slot")), key="kv_contig")
    st.caption(t("layouts.contiguous_caption", max_seq=kv["max_seq"], rows=kv["capacity"], layers=kv["layers"],
                 kv=kv["kv_heads"], hd=kv["head_dim"], unused=unused, share=unused / kv["slots_allocated"],
                 waste=human(unused * kv["bytes_per_token"])))


def dynamic(t, live) -> None:
    steps = [s.kv for s in live.steps("dynamic")]
    kv = steps[-1]
    st.subheader(t("layouts.dynamic_title"))
    chart(t, fig.copy_bars(list(range(len(steps))), [s["bytes_copied_step"] for s in steps],
                           [s["bytes_used"] for s in steps], live.cursor,
                           (t("layouts.copied"), t("layouts.cache_bytes")), t("layouts.dynamic_fig"),
                           t("layouts.step"), t("layouts.bytes")), key="kv_dyn")
    n = kv["seq_lens"][0]
    key = "layouts.dynamic_caption" if live.cursor else "layouts.dynamic_caption_prefill"
    prev = human(steps[-2]["bytes_used"]) if len(steps) > 1 else human(0)
    st.caption(t(key, before=n - 1, after=n, kv=kv["kv_heads"], hd=kv["head_dim"], layers=kv["layers"],
                 copied=human(kv["bytes_copied_step"]), prev=prev, total=human(kv["bytes_copied_total"])))


def paged(t, live, labels) -> None:
    kv = live.kv("paged")
    bs, tables = kv["block_size"], kv["block_tables"]
    st.subheader(t("layouts.paged_title"))
    names = {"free": t("layouts.free"), "waste": t("layouts.waste"), "block": t("layouts.block"),
             "slot": t("layouts.slot"), "position": t("layouts.position"), "row": t("layouts.blocks_row")}
    held = sum(len(tb) for tb in tables)
    chart(t, fig.paged_pool(tables, kv["seq_lens"], bs, kv["num_blocks"], labels, names,
                            t("layouts.paged_fig", held=held, num=kv["num_blocks"], bs=bs)), key="kv_paged")
    st.caption(t("layouts.paged_note"))
    pairs = list(zip(tables, kv["seq_lens"], strict=True))
    st.table({t("layouts.col.seq"): labels, t("layouts.col.tokens"): kv["seq_lens"],
              t("layouts.col.table"): [" → ".join(map(str, tb)) for tb in tables],
              t("layouts.col.last"): [f"{n - (len(tb) - 1) * bs}/{bs}" for tb, n in pairs],
              t("layouts.col.waste"): [len(tb) * bs - n for tb, n in pairs]})
    st.caption(t("layouts.paged_caption", free=kv["blocks_free"], waste=kv["wasted_slots"],
                 waste_bytes=human(kv["bytes_held"] - kv["bytes_used"]), held=human(kv["bytes_held"]),
                 alloc=human(kv["bytes_allocated"])))


def live_view(t, s, live) -> None:
    run.step_controls(t, live)
    if not live.can_compute and live.cursor + 1 == live.recorded:
        st.info(t("layouts.finished"))
    labels = [t("layouts.seq", i=i + 1) for i in range(len(live.prompts))]
    colon = t("common.colon")
    st.caption(" · ".join(f"**{label}**{colon}{literal(p)}" for label, p in zip(labels, live.prompts, strict=True)))
    kept, left_out = run.kept_switches(s)
    if kept or left_out:
        st.caption(t("layouts.switches", kept=", ".join(f"{k.replace('_', '-')}={v}" for k, v in kept.items()) or "—",
                     left=", ".join(k.replace("_", "-") for k in left_out) or "—"))
    summary(t, live)
    contiguous(t, live, labels)
    dynamic(t, live)
    paged(t, live, labels)


def sweep_view(t, s) -> None:
    st.header(t("layouts.sweep_title"))
    st.markdown(t("layouts.sweep_intro"))
    pressed = run.sweep_controls(t, s)
    o = run.options()
    result = run.run_sweep(t, s, o) if pressed else run.shown_sweep(s, o)
    if result is None:
        return
    chart, claim = st.columns([3, 2])
    names = {x: run.layout_name(t, x) for x in result["layouts"]}
    marks = {512: t("layouts.mark_short"), 1024: t("layouts.mark_long")}
    title = t("layouts.sweep_fig", model=result["model"])
    chart.plotly_chart(fig.sweep_lines(result, names, title, t("layouts.length"), t("layouts.ms_token"), marks),
                       width="stretch", key="kv_sweep")
    with claim:
        st.markdown(t("layouts.k3_article"))
        judged = claims_run.judged_here("K3", result)  # the claims' one rule, on this sweep
        claims_run.verdict_box(t, judged)
        claims_run.floors(t, judged)
        if max(result["lengths"]) <= 1024:
            st.caption(t("layouts.k3_none_long", context=result["context"]))
        st.caption(t("layouts.k3_why", device=result["device"], threads=result["threads"],
                     weights=human(result["weight_bytes"]), kv=human(result["kv"]["contiguous"][-1]["bytes_used"]),
                     longest=result["lengths"][-1]))
    with st.expander(t("layouts.sweep_numbers")):
        ms = result["ms_per_token"]
        st.table({t("layouts.length"): result["lengths"],
                  **{names[x]: [f"{m:.2f} ({lo:.2f}–{hi:.2f})" for m, lo, hi in zip(ms[x]["median"], ms[x]["min"],
                                                                                   ms[x]["max"], strict=True)]
                     for x in result["layouts"]}})
    st.caption(t("layouts.sweep_timed", steps=result["steps"], warmup=result["warmup_steps"], repeats=result["repeats"],
                 bs=result["block_size"], device=result["device"], threads=result["threads"],
                 backend=result["attn_backend"], dtype=result["dtype"], seconds=result["seconds"]))
    rows = [{"layout": x, "cached_tokens": n, "ms_per_token_median": ms[x]["median"][i], "min": ms[x]["min"][i],
             "max": ms[x]["max"][i]} for x in result["layouts"] for i, n in enumerate(result["lengths"])]
    a, b = st.columns(2)
    a.download_button(t("compare.json"), json.dumps(result), "kv_layout_sweep.json", "application/json",
                      key="kv_sweep_json")
    b.download_button(t("compare.csv"), table_csv(rows), "kv_layout_sweep.csv", "text/csv", key="kv_sweep_csv")


def main() -> None:
    t = translator()
    heading(t, "layouts")
    article_view.slips_here(t, "kv_layouts")
    if not server.engine_available():  # a replay-only install without torch
        st.info(t("layouts.no_engine"))
        return
    s = state.settings()
    run.run_controls(t, s)
    live = run.current_live(t, s, run.options())
    if live is None:
        st.page_link("app_pages/home.py", label=t("error.go_home"), icon=":material/home:")
    else:
        live_view(t, s, live)
    sweep_view(t, s)
    locality_view.section(t, s)
    run.sync_url()


main()
