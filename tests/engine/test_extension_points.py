"""The extension points (issue 20 §5): a KV layout and an attention backend defined here, each registered with one
call, touching no other module. They run a session on the embedded model with the stock run's greedy tokens (the
oracle: the default layout and backend), really run (their own counters), parse as switch specs, are priced (or
refused) by the predictions, and appear among the pages' choices. The fixture undoes both registrations, so every
other test sees the stock tables."""

from contextlib import contextmanager

import pytest
import torch
from ui_helpers import PROMPT, open_app, page_file

from llmviz import service
from llmviz.analysis.predict import Setup, Shape, kv_allocated_bytes, layer_slots
from llmviz.engine.kv import register_kv_layout, unregister_kv_layout
from llmviz.engine.kv.contiguous import ContiguousKVCache
from llmviz.engine.models.attention import register_attention_backend, unregister_attention_backend
from llmviz.errors import UnknownNameError
from llmviz.trace.config import ATTN_BACKENDS, KV_LAYOUTS, EngineConfig, SamplingConfig, row_slots
from llmviz.trace.records import load_trace
from llmviz.trace.switches import format_spec, parse_spec

LAYOUT, BACKEND = "counting", "written-out"
STOCK_LAYOUTS, STOCK_BACKENDS = ("contiguous", "dynamic", "paged"), ("eager", "sdpa", "flash")
MODEL, STEPS = "llmviz-tiny", 6
GREEDY = EngineConfig(sampling=SamplingConfig(temperature=0), stop_at_eos=False, max_seq_len=48)


class CountingKVCache(ContiguousKVCache):
    """The contiguous layout, counting the layer writes it stores."""

    layout = LAYOUT

    def __init__(self, *args, **options):
        super().__init__(*args, **options)
        self.writes = 0

    def _store(self, layer, step, kp, vp):
        self.writes += 1
        super()._store(layer, step, kp, vp)


class WrittenOutAttention:
    """softmax(q k^T * scale) v with the softmax spelled out, counting its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, q, keys, values, mask, scale, names, ctx):
        self.calls += 1
        group = q.shape[1] // keys.shape[1]  # GQA: each KV head serves `group` query heads
        keys, values = keys.repeat_interleave(group, dim=1), values.repeat_interleave(group, dim=1)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, keys) * scale  # [b, h, n, n_k]
        if mask.mask is not None:
            scores = scores.masked_fill(~mask.mask, float("-inf"))
        weights = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return torch.einsum("bhqk,bhkd->bhqd", weights, values)  # [b, h, n, hd]


@contextmanager
def registered():
    """Both extensions, one call each, undone however the test ends."""
    backend = WrittenOutAttention()
    register_kv_layout(LAYOUT, CountingKVCache, slots=row_slots)  # priced as a preallocated row, as it is one
    try:
        register_attention_backend(BACKEND, backend)
        try:
            yield backend
        finally:
            unregister_attention_backend(BACKEND)
    finally:
        unregister_kv_layout(LAYOUT)


@pytest.fixture
def backend():
    with registered() as backend:
        yield backend
    assert tuple(KV_LAYOUTS) == STOCK_LAYOUTS and tuple(ATTN_BACKENDS) == STOCK_BACKENDS


@pytest.fixture(scope="module")
def lm():
    return service.load(MODEL, EngineConfig())


def run(lm, config: EngineConfig):
    session = service.start(lm, PROMPT, config)
    steps = [service.step(session) for _ in range(STEPS)]
    return session, steps


def test_a_registered_layout_and_backend_give_the_stock_tokens_and_really_run(lm, backend, tmp_path):
    _, stock = run(lm, GREEDY)
    session, steps = run(lm, GREEDY.with_(**parse_spec(f"kv-layout={LAYOUT},attn={BACKEND}")))
    assert [int(s.sampled[0]) for s in steps] == [int(s.sampled[0]) for s in stock]
    gap = max(float(abs(a.logits - b.logits).max()) for a, b in zip(steps, stock, strict=True))
    assert gap <= 1e-4, gap
    assert type(session.cache) is CountingKVCache and {s.kv["layout"] for s in steps} == {LAYOUT}
    layers = lm.cfg.num_layers
    assert session.cache.writes == STEPS * layers  # one store per layer per step: the new class stored every row
    assert backend.calls == STEPS * layers  # and every attention call was the written-out one
    assert session.trace.engine_config["attn_backend"] == BACKEND
    back = load_trace(session.trace.save(tmp_path))  # the trace checker takes the registered names too
    assert [s.kv["layout"] for s in back.steps] == [LAYOUT] * STEPS and back.output_ids == session.trace.output_ids


def test_they_are_switch_choices_and_the_layout_is_priced_by_its_rule(lm, backend):
    changes = parse_spec(f"kv-layout={LAYOUT}, attn={BACKEND}")
    assert changes == {"kv_layout": LAYOUT, "attn_backend": BACKEND}
    assert format_spec(changes) == f"attn={BACKEND},kv-layout={LAYOUT}"  # the table's order
    session, steps = run(lm, GREEDY.with_(kv_layout=LAYOUT))
    shape = Shape.from_config(session.trace.model_card["config"])
    setup = Setup(shape, kv_layout=LAYOUT, max_seq=GREEDY.max_seq_len, sliding_window=4)  # its rule: no ring
    assert kv_allocated_bytes(setup, 10) == steps[-1].kv["bytes_allocated"]  # a row of max_seq, as allocated

    class Unpriced(CountingKVCache):
        layout = "unpriced"

    register_kv_layout("unpriced", Unpriced)  # no slot rule: pricing it is refused, not guessed
    try:
        with pytest.raises(UnknownNameError, match="'unpriced' was registered without a slot rule"):
            layer_slots("unpriced", 10, 48)
    finally:
        unregister_kv_layout("unpriced")


def test_unregistering_leaves_the_stock_tables():
    with registered():
        assert tuple(KV_LAYOUTS) == (*STOCK_LAYOUTS, LAYOUT) and tuple(ATTN_BACKENDS) == (*STOCK_BACKENDS, BACKEND)
    assert tuple(KV_LAYOUTS) == STOCK_LAYOUTS and tuple(ATTN_BACKENDS) == STOCK_BACKENDS
    for spec in (f"kv-layout={LAYOUT}", f"attn={BACKEND}"):
        with pytest.raises(UnknownNameError, match="is not one of"):
            parse_spec(spec)
    with pytest.raises(UnknownNameError):
        EngineConfig(kv_layout=LAYOUT)


def test_the_layouts_page_runs_and_lists_the_new_layout(backend):
    at = open_app(None, model=MODEL, prompt=PROMPT, kv_max=64)
    at.switch_page(page_file("kv_layouts")).run()
    assert not at.exception, [e.value for e in at.exception]
    summary = next(t.value for t in at.table if t.value.columns[0] == "Layout").set_index("Layout")
    assert list(summary.index) == ["Contiguous", "Growing (torch.cat)", "Paged", LAYOUT]
    assert summary.loc[LAYOUT].tolist() == summary.loc["Contiguous"].tolist()  # a contiguous cache, counted
    live = at.session_state["llmviz_kv_live"]
    assert live.sessions[LAYOUT].cache.writes == live.sessions[LAYOUT].lm.cfg.num_layers  # it ran the prefill


def test_home_offers_the_new_backend_and_runs_it(backend):
    at = open_app(None, model=MODEL, prompt=PROMPT, attn=BACKEND)
    box = at.selectbox(key="home_attn")
    assert list(box.options) == [*STOCK_BACKENDS, BACKEND] and box.value == BACKEND
    assert not any(BACKEND in w.value for w in at.warning)  # the link's value is a valid choice
    assert at.session_state["llmviz_run"].trace.engine_config["attn_backend"] == BACKEND
    assert backend.calls > 0
