"""The extension points: a KV layout and an attention backend written as a user would
(tests/support/toy_extensions.py: one declaration and one call each, nothing else in llmviz names them). They run a
session on the embedded model with the stock run's greedy tokens (the oracle: the default layout and backend),
really run (the backend's calls, the layout's chunks counted by hand), parse as switch specs with their
declaration's exactness, are priced by their own slot rule (or refused without one), and appear among the pages'
choices in their own words. The fixture undoes both registrations, so every other test sees the stock tables."""

import math

import pytest
from toy_extensions import CHUNKED, ONLINE, ChunkedKVCache, registered
from ui_helpers import PROMPT, open_app, page_file, shown

from llmviz import service
from llmviz.analysis.predict import Setup, Shape, kv_allocated_bytes, layer_slots
from llmviz.engine.kv import register_kv_layout, unregister_kv_layout
from llmviz.engine.session import Session
from llmviz.errors import UnknownNameError
from llmviz.trace.config import ATTN_BACKENDS, KV_LAYOUTS, EngineConfig, SamplingConfig
from llmviz.trace.extensions import Extension
from llmviz.trace.records import load_trace
from llmviz.trace.switches import format_spec, lossy_changes, parse_spec

LAYOUT, BACKEND = CHUNKED.name, ONLINE.name
STOCK_LAYOUTS, STOCK_BACKENDS = tuple(KV_LAYOUTS), tuple(ATTN_BACKENDS)  # the tables before any registration
MODEL, STEPS, CHUNK = "llmviz-tiny", 6, 4
GREEDY = EngineConfig(sampling=SamplingConfig(temperature=0), stop_at_eos=False, max_seq_len=48)


@pytest.fixture
def backend():
    with registered() as backend:
        yield backend
    assert tuple(KV_LAYOUTS) == STOCK_LAYOUTS and tuple(ATTN_BACKENDS) == STOCK_BACKENDS


@pytest.fixture(scope="module")
def lm():
    return service.models.load(MODEL, EngineConfig())


def run(lm, config: EngineConfig):
    session = Session(lm, PROMPT, config)  # the engine's own: the test reads its cache's class
    steps = [session.step() for _ in range(STEPS)]
    return session, steps


def test_a_registered_layout_and_backend_give_the_stock_tokens_and_really_run(lm, backend, tmp_path):
    _, stock = run(lm, GREEDY)
    spec = f"kv-layout={LAYOUT},attn={BACKEND},kv-block-size={CHUNK}"
    session, steps = run(lm, GREEDY.with_(**parse_spec(spec)))
    assert [int(s.sampled[0]) for s in steps] == [int(s.sampled[0]) for s in stock]
    gap = max(float(abs(a.logits - b.logits).max()) for a, b in zip(steps, stock, strict=True))
    assert gap <= 1e-4, gap
    assert type(session.cache) is ChunkedKVCache and {s.kv["layout"] for s in steps} == {LAYOUT}
    layers = lm.cfg.num_layers
    assert backend.calls == STEPS * layers  # every attention call was the online one
    for step in steps:  # whole chunks of kv_block_size slots (the option its declaration reads), by hand
        held = step.kv["seq_len"]
        assert step.kv["slots_allocated"] == -(-held // CHUNK) * CHUNK
        assert step.kv["bytes_allocated"] == step.kv["slots_allocated"] * step.kv["bytes_per_token"]
    assert session.trace.engine_config["attn_backend"] == BACKEND
    back = load_trace(session.trace.save(tmp_path))  # the trace checker takes the registered names too
    assert [s.kv["layout"] for s in back.steps] == [LAYOUT] * STEPS and back.output_ids == session.trace.output_ids


def test_they_are_switch_choices_and_the_layout_is_priced_by_its_rule(lm, backend):
    changes = parse_spec(f"kv-layout={LAYOUT}, attn={BACKEND}")
    assert changes == {"kv_layout": LAYOUT, "attn_backend": BACKEND}
    assert format_spec(changes) == f"attn={BACKEND},kv-layout={LAYOUT}"  # the table's order
    assert lossy_changes(changes) == []  # both declared exact
    session, steps = run(lm, GREEDY.with_(kv_layout=LAYOUT, kv_block_size=CHUNK))
    shape = Shape.from_config(session.trace.model_card["config"])
    held = steps[-1].kv["seq_len"]
    setup = Setup(shape, kv_layout=LAYOUT, max_seq=GREEDY.max_seq_len, kv_block_size=CHUNK, sliding_window=4)
    assert kv_allocated_bytes(setup, held) == steps[-1].kv["bytes_allocated"]  # its rule, as allocated
    assert layer_slots(LAYOUT, 10, 48, block=CHUNK) == 12  # ceil(10 / 4) chunks of 4

    class Unpriced(ChunkedKVCache):
        layout = "unpriced"

    register_kv_layout("unpriced", Unpriced)  # a bare name: no slot rule, pricing it is refused, not guessed
    try:
        with pytest.raises(UnknownNameError, match="'unpriced' was registered without a slot rule"):
            layer_slots("unpriced", 10, 48)
    finally:
        unregister_kv_layout("unpriced")


def test_a_lossy_declaration_makes_its_switch_lossy():
    lossy = Extension("approx", "Approximate", about="drops the smallest keys", exact=False)
    register_kv_layout(lossy, type("ApproxKVCache", (ChunkedKVCache,), {"layout": "approx"}))
    try:
        assert lossy_changes(parse_spec("kv-layout=approx,kv-dtype=fp32")) == ["kv-layout"]
        assert lossy_changes(parse_spec("kv-layout=paged")) == []
    finally:
        unregister_kv_layout("approx")


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
    assert list(summary.index) == ["Contiguous", "Growing (torch.cat)", "Paged", "Chunked"]  # its own label
    live = at.session_state["llmviz_kv_live"]
    held = live.runs[LAYOUT].trace.steps[-1].kv["seq_lens"]
    block = at.session_state["llmviz_settings"].layouts.bs  # the page's block size is the chunk
    assert summary.loc["Chunked", "Token slots reserved"] == sum(math.ceil(n / block) * block for n in held)


def test_home_offers_the_new_backend_and_runs_it(backend):
    at = open_app(None, model=MODEL, prompt=PROMPT, attn=BACKEND)
    box = at.selectbox(key="home_attn")
    assert list(box.options) == [*STOCK_BACKENDS, "Online softmax"] and box.value == BACKEND  # its own label
    assert ONLINE.about_in("en") in shown(box.proto.help)
    assert not any(BACKEND in w.value for w in at.warning)  # the link's value is a valid choice
    assert at.session_state["llmviz_run"].trace.engine_config["attn_backend"] == BACKEND
    assert backend.calls > 0
