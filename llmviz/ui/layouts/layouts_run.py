"""The KV layouts page's state (C6, C8, C9; claim K3): its own URL settings (kv_*), live runs (one per
layout a run may choose, same prompts, stepped in lockstep), the controls that step them, and the length sweep's
result, all kept in this browser session. The layouts are read from the table of llmviz/trace/config.py each run,
so one an extension registers is run and listed too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from llmviz.analysis.work import decode_seconds, run_seconds
from llmviz.errors import LlmvizError
from llmviz.trace.config import (
    KV_LAYOUTS,
    LAYOUT_SWEEP_BLOCK,
    LAYOUT_SWEEP_STEPS,
    RANDOM_MODELS,
    EngineConfig,
    SamplingConfig,
)
from llmviz.ui import measure, names, server, state
from llmviz.ui.claims import claims_run, shared_runs
from llmviz.ui.errors import explain
from llmviz.ui.layouts.layouts_url import KV_BLOCK_SIZES as BLOCK_SIZES
from llmviz.ui.layouts.layouts_url import KV_MAX_EXTRA as MAX_EXTRA
from llmviz.ui.layouts.layouts_url import KV_MAX_SEQS as MAX_SEQS
from llmviz.ui.layouts.layouts_url import LayoutsSettings, extra_prompts, parse_lengths
from llmviz.ui.markdown import escape
from llmviz.ui.navigation import KEEP
from llmviz.ui.settings import Settings

OPTIONS_KEY, LIVE_KEY, SWEEP_KEY, STEPS_KEY = "llmviz_kv_options", "llmviz_kv_live", "llmviz_kv_sweep", "kv_steps"
RANDOM_GPT2 = RANDOM_MODELS[0]  # the GPT-2-124M shape
SWEEP_STEPS = LAYOUT_SWEEP_STEPS  # decode steps timed per run, as claim K3 times them (one measurement per claim)
SWEEP_BLOCK = LAYOUT_SWEEP_BLOCK  # the paged layout's block size in the sweep
# Home's engine switches the live runs take over (storage and weights); the layout, its block size and the
# length are this page's own, and compile or a sliding window would change what a layout is
KEPT_SWITCHES = ("kv_dtype", "kv_heads", "fused_qkv", "quant", "quant_group", "padding")


Options = LayoutsSettings  # this page's settings, its section of the session's Settings (carried in the URL)


def options() -> Options:
    """This browser session's page settings (read from the URL with the others the first time)."""
    return state.settings().layouts


def update(**changes) -> Options:
    return state.update(layouts=changes).layouts


def sync_url() -> None:
    """The settings, with the step shown, in the URL (a link reopens this view)."""
    live = st.session_state.get(LIVE_KEY)
    if live is not None:
        update(step=live.cursor)
    state.sync_url()


def layouts() -> tuple[str, ...]:
    """The layouts the page runs and sweeps: every one a run may choose, stock or registered, in the table's order."""
    return tuple(KV_LAYOUTS)


def layout_name(t, layout: str) -> str:
    """A layout's name on the page: its declaration's label (llmviz/trace/extensions.py), stock or registered."""
    return names.label(t, KV_LAYOUTS, layout)


# --- the live runs -------------------------------------------------------------------------------------
@dataclass
class Live:
    key: tuple
    runs: dict  # layout -> RunHandle (service/runs.py)
    prompts: list
    cursor: int = 0
    model_config: dict = field(default_factory=dict)  # the model card's config (what a step costs: analysis/work)

    @property
    def recorded(self) -> int:
        return len(self.runs["contiguous"].trace.steps)

    def steps(self, layout: str) -> list:
        return self.runs[layout].trace.steps[: self.cursor + 1]

    def kv(self, layout: str) -> dict:
        return self.runs[layout].trace.steps[self.cursor].kv

    @property
    def can_compute(self) -> bool:
        return not any(r.finished for r in self.runs.values())

    @property
    def can_next(self) -> bool:
        return self.cursor + 1 < self.recorded or self.can_compute

    def cost(self, count: int) -> float:
        """Estimated seconds of `count` Nexts: only the steps not recorded yet are computed, on every layout."""
        new = max(0, self.cursor + count - (self.recorded - 1))
        cached = max(self.runs["contiguous"].trace.steps[-1].kv["seq_lens"])
        return decode_seconds(self.model_config, len(self.prompts), cached, new, copies=len(self.runs))


def prompts_of(s: Settings, o: Options) -> list[str]:
    return [s.prompt, *extra_prompts(o.prompts)[:MAX_EXTRA]]


def live_key(s: Settings, o: Options) -> tuple:
    return s.model, s.device, s.dtype, s.attn, s.engine, s.seed, tuple(prompts_of(s, o)), layouts(), o.bs, o.max


def kept_switches(s: Settings) -> tuple[dict, list[str]]:
    """Home's engine switches the live runs use, and the names of those they leave out (ConfigError when the
    spec is malformed)."""
    changes = s.switches()
    return {k: v for k, v in changes.items() if k in KEPT_SWITCHES}, [k for k in changes if k not in KEPT_SWITCHES]


def engine_config(s: Settings, o: Options, context: int) -> EngineConfig:
    """Greedy (the layouts then draw the same tokens), nothing captured: the page reads KV snapshots."""
    return EngineConfig(device=s.device, dtype=s.dtype, attn_backend=s.attn, sampling=SamplingConfig(temperature=0),
                        seed=s.seed, capture="off", logit_lens_top_k=0, max_seq_len=min(context, o.max),
                        kv_block_size=o.bs, **kept_switches(s)[0])


def current_live(t, s: Settings, o: Options) -> Live | None:
    """The runs for these settings, one per layout: reused, or started (prefill, then up to the URL's step).
    ImportError (no torch) is left to the page."""
    live = st.session_state.get(LIVE_KEY)
    if live is not None and live.key == live_key(s, o):
        return live
    from llmviz import service

    try:
        kept, _ = kept_switches(s)
        steps = state.link_steps(t, o.step)  # once: its notice is shown once
        with st.spinner(t("common.loading", model=escape(s.model))):
            lm = server.model(s.model, s.device, s.dtype,
                              **{k: v for k, v in kept.items() if k in s.load_options()})
            prompts, config = prompts_of(s, o), engine_config(s, o, lm.cfg.max_position_embeddings)
            n = [len(service.models.tokens(lm, p)) for p in prompts]
            cost = run_seconds(lm.cfg.to_dict(), n, min(steps, config.max_seq_len - max(n)), s.dtype, len(layouts()))
            with measure.heavy(t, cost) as deadline:  # 4 long prompts x 3 layouts: in a public server's queue
                runs = service.runs.start_layouts(lm, prompts, config, layouts(), server.policy().trace_budget_bytes)
                service.runs.step_layouts(runs)  # the prefill
                state.bound_runs(runs.values())
                live = Live(live_key(s, o), runs, prompts, model_config=lm.cfg.to_dict())
                while live.cursor < steps and live.can_next:
                    advance(live)
                    deadline.check()
    except (LlmvizError, MemoryError) as exc:
        st.session_state.pop(LIVE_KEY, None)
        explain(t, exc)
        return None
    st.session_state[LIVE_KEY] = live
    return live


def advance(live: Live) -> None:
    """Show the recorded next step, or compute it on every run."""
    if live.cursor + 1 >= live.recorded:
        from llmviz import service

        service.runs.step_layouts(live.runs)
        state.bound_runs(live.runs.values())  # within the session's budget
    live.cursor += 1


# The step buttons' callbacks find the runs in the session state, never in their args: Streamlit keeps a
# widget's callback args after the page is left, so runs passed there would outlive their replacement.
def _held() -> Live | None:
    return st.session_state.get(LIVE_KEY)


def _step(count: int) -> None:
    """Next / Next 8 ask for the steps; the page's run computes them (step_controls), where a public server's queue
    can show its waiting note and its messages: a callback runs before the page, outside it."""
    st.session_state[STEPS_KEY] = count


def step_by(t, live: Live, count: int) -> None:
    """`count` Nexts, in a public server's queue when their estimate is heavy (Next 8 of 4 long prompts); a step
    that fails says why, and the steps before it stay."""
    try:
        with measure.heavy(t, live.cost(count)) as deadline:
            for _ in range(count):
                if not live.can_next:
                    break
                advance(live)
                deadline.check()
    except (LlmvizError, MemoryError) as exc:
        explain(t, exc)


def _back() -> None:
    if (live := _held()) is not None:
        live.cursor = max(0, live.cursor - 1)


def _reset() -> None:
    if (live := _held()) is not None:
        live.cursor = 0


def _apply_run_widgets() -> None:
    update(bs=st.session_state["kv_bs_w"], max=st.session_state["kv_max_w"], step=0,
           prompts="\n".join(extra_prompts(st.session_state["kv_prompts_w"])[:MAX_EXTRA]))


def run_controls(t, s: Settings) -> None:
    """Extra prompts, block size and max_seq_len (a change starts the runs again)."""
    o = options()
    for key, value in (("kv_bs_w", o.bs), ("kv_max_w", o.max), ("kv_prompts_w", o.prompts)):
        st.session_state.setdefault(key, value)
    left, mid, right = st.columns([3, 1, 1])
    left.text_area(t("layouts.prompts"), key="kv_prompts_w", **KEEP, on_change=_apply_run_widgets, height=90,
                   help=t("layouts.prompts_help", home=escape(s.prompt), n=MAX_EXTRA))
    mid.segmented_control(t("layouts.block_size"), BLOCK_SIZES, key="kv_bs_w", **KEEP, on_change=_apply_run_widgets,
                          help=t("layouts.block_size_help"), required=True)
    right.selectbox(t("layouts.max_seq"), MAX_SEQS, key="kv_max_w", **KEEP, on_change=_apply_run_widgets,
                    help=t("layouts.max_seq_help"))
    if len(extra_prompts(st.session_state["kv_prompts_w"])) > MAX_EXTRA:
        st.warning(t("layouts.too_many_prompts", n=MAX_EXTRA))


def step_controls(t, live: Live) -> None:
    if count := st.session_state.pop(STEPS_KEY, 0):
        step_by(t, live, count)
    cols = st.columns(4)
    cols[0].button(t("layouts.prev"), disabled=live.cursor == 0, width="stretch", on_click=_back)
    cols[1].button(t("layouts.next"), type="primary", disabled=not live.can_next, width="stretch", on_click=_step,
                   args=(1,))
    cols[2].button(t("layouts.next8"), disabled=not live.can_next, width="stretch", on_click=_step, args=(8,))
    cols[3].button(t("layouts.reset"), width="stretch", on_click=_reset)


# --- the sweep -----------------------------------------------------------------------------------------
def sweep_model(s: Settings, o: Options) -> str:
    return s.model if o.model == "home" else o.model


def sweep_key(s: Settings, o: Options) -> tuple:
    return sweep_model(s, o), s.device, s.dtype, s.attn, o.lengths, o.repeats, layouts()


def shown_sweep(s: Settings, o: Options) -> dict | None:
    return measure.kept(SWEEP_KEY, sweep_key(s, o))


def _apply_sweep_widgets() -> None:
    update(model=st.session_state["kv_model_w"], lengths=st.session_state["kv_lengths_w"].strip(),
           repeats=st.session_state["kv_repeats_w"])


def sweep_controls(t, s: Settings) -> bool:
    o = options()
    for key, value in (("kv_model_w", o.model), ("kv_lengths_w", o.lengths), ("kv_repeats_w", o.repeats)):
        st.session_state.setdefault(key, value)
    a, b, c = st.columns([2, 3, 1])
    a.selectbox(t("layouts.sweep_model"), (RANDOM_GPT2, "home"), key="kv_model_w", on_change=_apply_sweep_widgets,
                **KEEP, format_func=lambda m: t("layouts.model_home", name=s.model) if m == "home"
                else t("layouts.model_random"))
    b.text_input(t("layouts.lengths"), key="kv_lengths_w", **KEEP, on_change=_apply_sweep_widgets,
                 placeholder=t("layouts.lengths_auto"), help=t("layouts.lengths_help", steps=SWEEP_STEPS))
    c.number_input(t("layouts.repeats"), 1, 10, key="kv_repeats_w", **KEEP, on_change=_apply_sweep_widgets)
    return st.button(t("layouts.sweep_run"), type="primary")


def run_sweep(t, s: Settings, o: Options) -> dict | None:
    """The sweep the settings name, with a progress bar; None (and a message) when it cannot run."""
    from llmviz import service

    def work(queued):
        lengths = parse_lengths(o.lengths)
        lm = server.model(sweep_model(s, o), s.device, s.dtype)
        with queued() as progress:
            def report(f, stage, values):
                progress(f, t("layouts.progress", what=values["what"]))

            result = service.measure.layout_sweep(lm, lengths, layouts(), SWEEP_STEPS, o.repeats, report,
                                                  block_size=SWEEP_BLOCK, backend=s.attn, seed=s.seed)
        claim_id = service.measure.layouts_judged_as(result)  # the layout claim's own workload: shared
        return shared_runs.page_run(result, "layouts",
                                    {claim_id: claims_run.judged_here(claim_id, result)} if claim_id else {})

    return measure.run(t, SWEEP_KEY, sweep_key(s, o), work, text=t("layouts.progress", what="…"))


