"""KV layouts (C6, C8, C9; claim K3): the contiguous, growing and paged caches of one live run (and any layout an
extension registered, in the summary), drawn as they stand after each step; then a length sweep of decode
ms/token for each, beside the article's claim."""


import streamlit as st

from llmviz.analysis.kv_memory import human
from llmviz.ui import article_view, server, state
from llmviz.ui.charts import chart
from llmviz.ui.chrome import heading, literal, translator
from llmviz.ui.layouts import layouts_run as run
from llmviz.ui.layouts import layouts_sweep, locality_view
from llmviz.viz import kv_layouts as fig


def summary(t, live) -> None:
    snaps = {layout: live.kv(layout) for layout in live.runs}
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
    layouts_sweep.section(t, s)
    locality_view.section(t, s)
    run.sync_url()


main()
