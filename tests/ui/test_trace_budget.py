"""A session's run stays within its byte budget: the oldest steps lose their tensors first, the
prefill among them (it was exempt, and a 505-token prefill of the GPT-2 shape kept 555 MB); the step shown
goes last and the newest step never; a shed K/V row keeps its norm (the cache grid), and the Decode page says so."""

from __future__ import annotations

import numpy as np
import pytest
from ui_helpers import open_app

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.trace.budget import held_bytes, is_shed, shed
from llmviz.trace.config import EngineConfig

PROMPT = "The quick brown fox"


def droppable_step(step) -> int:
    """Counted here on its own: every hook array, and the full logits array."""
    total = sum(r.array.size * r.array.itemsize for r in step.hooks if r.array is not None)
    return total + (step.logits.size * step.logits.itemsize if step.logits is not None else 0)


def droppable(trace) -> int:
    return sum(droppable_step(s) for s in trace.steps)


@pytest.fixture(scope="module")
def run(model_dirs):
    lm = load_model(str(model_dirs["llama_gqa_rope3"]))
    session = Session(lm, PROMPT, EngineConfig(capture="full"))
    session.generate(12)
    return session.trace


def all_arrays(trace) -> int:
    """Every array the trace holds, counted here on its own (ids, positions, top-k, lens, logits, hooks, norms)."""
    total = 0
    for s in trace.steps:
        for a in (s.input_ids, s.positions, s.sampled, s.logits, s.topk_ids, s.topk_logits, s.logsumexp, s.lens_ids,
                  s.lens_probs, *[x for r in s.hooks for x in (r.array, r.row_norms)]):
            total += a.size * a.itemsize if a is not None else 0
    return total


def test_the_oldest_steps_are_shed_first_and_the_budget_holds(run):
    before = all_arrays(run)
    assert held_bytes(run) == before
    kv_before = {(s.index, r.name): r.array.copy() for s in run.steps for r in s.hooks if r.name.endswith((".k", ".v"))}
    topk = [s.topk_ids.copy() for s in run.steps]
    last = len(run.steps) - 1
    protected = sum(droppable_step(run.steps[i]) for i in (3, last))
    budget = before - (droppable(run) - protected) // 2  # reachable: half of what may go
    n = shed(run, budget, keep=(3,), held_elsewhere=0)
    assert all_arrays(run) <= budget < before
    gone = [s.index for s in run.steps if is_shed(s)]
    assert n == len(gone) > 0
    assert gone == list(range(len(gone))) or gone == [0, 1, 2, *range(4, 1 + len(gone))]  # oldest first, 3 kept
    assert 0 in gone  # the prefill is shed like any other step
    for index in (3, len(run.steps) - 1):  # the step shown, the newest
        assert not is_shed(run.steps[index]) and all(r.array is not None for r in run.steps[index].hooks)
    for s in run.steps:
        for r in s.hooks:
            if r.name.endswith((".k", ".v")):  # [1, kv, n, hd]: kept whole, or as each row's norm (the cache grid)
                rows = kv_before[(s.index, r.name)]
                if s.index in gone:
                    assert r.array is None and r.row_norms.shape == rows.shape[:-1]
                    by_hand = np.sqrt((rows.astype(np.float64) ** 2).sum(-1))
                    np.testing.assert_allclose(r.row_norms, by_hand, rtol=1e-5)
                else:
                    assert np.array_equal(r.array, rows) and r.row_norms is None
            else:
                assert s.index not in gone  # a shed step keeps its K and V records only
        assert np.array_equal(s.topk_ids, topk[s.index]) and s.sampled is not None
    assert shed(run, budget, keep=(3,)) == n  # nothing more to do within the same budget
    assert shed(run, budget - 4_000, keep=(3,), held_elsewhere=10**9) == last  # held elsewhere counts: all but newest
    assert is_shed(run.steps[3]) and not is_shed(run.steps[last])  # the step shown goes last, the newest never


def grid_values(at) -> np.ndarray:
    """The z of the Decode page's KV grid as the browser gets it (plotly may send an array as base64 bytes)."""
    import base64
    import json

    z = json.loads(next(c for c in at.get("plotly_chart") if c.proto.id.endswith("-kvgrid")).proto.spec)["data"][0]["z"]
    if isinstance(z, dict):  # {"dtype": "f4", "bdata": ..., "shape": "2, 9"}
        shape = [int(n) for n in str(z["shape"]).split(",")]
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape)
    return np.asarray(z, dtype=np.float64)


def test_a_budget_that_fits_sheds_nothing(model_dirs):
    lm = load_model(str(model_dirs["llama_gqa_rope3"]))
    session = Session(lm, PROMPT, EngineConfig(capture="full"))
    session.generate(3)
    assert shed(session.trace, all_arrays(session.trace)) == 0
    assert shed(session.trace, 0) == len(session.trace.steps) - 1  # all but the newest


def test_the_decode_page_keeps_within_its_budget_and_says_so(model_dirs, monkeypatch):
    lm = load_model(str(model_dirs["llama_gqa_rope3"]))
    kv = Session(lm, PROMPT, EngineConfig(capture="full", max_seq_len=min(512, lm.cfg.max_position_embeddings)))
    kv = kv.kv_bytes()  # the page's cache (max_seq 512 or the context), counted in the budget
    monkeypatch.setenv("LLMVIZ_TRACE_BUDGET_MB", str((kv + 50_000) / 1e6))  # 50 kB more: full in a few steps
    at = open_app("app_pages/decode.py", model=str(model_dirs["llama_gqa_rope3"]), prompt=PROMPT)
    run = at.session_state["llmviz_run"]
    top = run.trace.model_card["config"]["num_layers"] - 1  # the layer the page shows first
    k_rows = [run.trace.steps[0].hook(f"layers.{top}.k").array[0].copy()]  # [kv, n, hd] per step, as written
    per_step = None
    for _ in range(60):
        next(b for b in at.button if b.label == "Next ▶").click().run()
        assert not at.exception, [e.value for e in at.exception]
        k_rows.append(run.trace.steps[-1].hook(f"layers.{top}.k").array[0].copy())
        per_step = per_step or droppable(run.trace) / len(run.trace.steps)
        if run.shed:
            break
    assert run.shed, f"60 steps at ~{per_step:.0f} B each never reached the 1 MB budget"
    assert all_arrays(run.trace) + kv <= kv + 50_000  # everything the run holds, from the prefill on
    assert any("earlier step(s) keep only their tokens" in i.value for i in at.info)
    assert not at.warning  # the newest step still draws its attention and cache panels
    grid = grid_values(at)  # the cache grid still colours every row, shed steps' rows by the norms they kept
    by_hand = np.sqrt((np.concatenate(k_rows, axis=1).astype(np.float64) ** 2).sum(-1))  # [kv, positions]
    np.testing.assert_allclose(grid, by_hand, rtol=1e-5)
    while not is_shed(run.step):  # back to a step whose maps were dropped
        next(b for b in at.button if b.label == "◀ Previous").click().run()
    assert any(f"Step {run.cursor}'s attention maps and activations were dropped" in w.value for w in at.warning)
    assert not at.exception


def test_freed_memory_goes_back_to_the_os_every_16_steps(run):
    """keep_bounded sheds after every step and hands freed memory back every RELEASE_EVERY steps; on glibc the
    release really lowers this process's RSS (what the OS reports) after a burst of freed arrays."""
    import platform

    import psutil

    from llmviz.engine.platform.heap import release_freed_memory
    from llmviz.trace.budget import RELEASE_EVERY, keep_bounded

    calls = []
    trace = run
    n = len(trace.steps)
    keep_bounded(trace, 10**12, (), lambda: calls.append(len(trace.steps)))
    assert calls == ([n] if n % RELEASE_EVERY == 0 else [])
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc_trim is glibc's")
    me = psutil.Process()
    release_freed_memory()
    keep = [np.ones(100_000 + 64 * i, dtype=np.float32) for i in range(400)]  # ~160 MB in growing blocks
    del keep[::2]
    high = me.memory_info().rss
    del keep
    assert release_freed_memory() in (True, False)
    assert me.memory_info().rss < high - 50e6  # most of it left the process


def _freed(ref) -> bool:
    import gc

    gc.collect()
    return ref() is None


def test_a_replaced_decode_run_is_freed(model_dirs):
    """Home's run button replaces the Decode page's run: the old run and its trace must go. They were
    kept alive by the Decode buttons' callback args, which Streamlit holds after the page is left."""
    import weakref

    at = open_app("app_pages/decode.py", model=str(model_dirs["llama_gqa_rope3"]), prompt=PROMPT)
    for _ in range(3):
        next(b for b in at.button if b.label == "Next ▶").click().run()
    old = at.session_state["llmviz_run"]
    run_ref, trace_ref = weakref.ref(old), weakref.ref(old.trace)
    del old
    at.switch_page("app_pages/home.py").run()
    next(b for b in at.button if b.label == "Load and run the prefill").click().run()
    at.switch_page("app_pages/decode.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["llmviz_run"] is not run_ref()
    assert _freed(run_ref) and _freed(trace_ref)


def test_a_replaced_layouts_run_is_freed(model_dirs):
    """The KV layouts page's three sessions go when another prompt on Home starts them again."""
    import weakref

    at = open_app(None, model=str(model_dirs["llama_gqa_rope3"]), prompt=PROMPT)
    at.switch_page("app_pages/kv_layouts.py").run()
    next(b for b in at.button if b.label.startswith("Next")).click().run()
    old = at.session_state["llmviz_kv_live"]
    ref = weakref.ref(old)
    del old
    at.switch_page("app_pages/home.py").run()
    next(w for w in at.text_area if w.key == "home_prompt").set_value(PROMPT + " jumps").run()
    next(b for b in at.button if b.label == "Load and run the prefill").click().run()
    at.switch_page("app_pages/kv_layouts.py").run()
    at.run()  # Streamlit's session state lets go of a replaced value at the next rerun
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["llmviz_kv_live"] is not ref()
    assert _freed(ref)


def test_long_lived_objects_are_left_out_of_each_collection(model_dirs):
    """Streamlit collects garbage after every script run; the app moves what was imported (torch, transformers,
    plotly: ~385,000 objects) to the permanent generation once, so that collection stays cheap (it took
    ~200 ms of every Next click). A module's objects are frozen; a run and its trace are not (they must go when
    replaced)."""
    import gc

    import torch

    at = open_app("app_pages/decode.py", model=str(model_dirs["llama_gqa_rope3"]), prompt=PROMPT)
    assert not at.exception
    run = at.session_state["llmviz_run"]
    tracked = {id(o) for o in gc.get_objects()}  # the generations a collection scans
    assert gc.get_freeze_count() > 10_000
    assert id(torch.nn.Linear.forward) not in tracked and id(torch.__dict__) not in tracked
    assert id(run.trace) in tracked and id(run) in tracked


def test_a_shed_trace_saves_and_loads_its_row_norms(model_dirs, tmp_path):
    """A long live run saved to a file keeps its shed steps' K/V norms (schema 3), so the loaded trace draws the
    same cache grid; a schema 2 file (no norms) still loads, its shed steps without them."""
    import json

    from llmviz.analysis.decode_series import cache_norms
    from llmviz.trace.records import load_trace

    lm = load_model(str(model_dirs["llama_gqa_rope3"]))
    session = Session(lm, PROMPT, EngineConfig(capture="full"))
    trace = session.generate(6)
    rows = np.concatenate([s.hook("layers.1.k").array[0] for s in trace.steps], axis=1)  # [kv, positions, hd]
    by_hand = np.sqrt((rows.astype(np.float64) ** 2).sum(-1))
    assert shed(trace, 0) == len(trace.steps) - 1
    back = load_trace(trace.save(tmp_path / "t"))
    layers = lm.cfg.num_layers
    assert {r.name for r in back.steps[2].hooks} == {f"layers.{i}.{kv}" for i in range(layers) for kv in "kv"}
    assert all(r.row_norms is not None and r.array is None for r in back.steps[2].hooks)
    np.testing.assert_allclose(cache_norms(back.steps, 1), by_hand, rtol=1e-5)
    doc = json.loads((tmp_path / "t" / "trace.json").read_text())
    doc["schema_version"] = 2
    for entry in doc["steps"]:
        for meta in entry["hooks"]:
            del meta["has_row_norms"]
    (tmp_path / "t" / "trace.json").write_text(json.dumps(doc))
    old = load_trace(tmp_path / "t")
    assert all(r.row_norms is None and r.array is None for r in old.steps[2].hooks)
    with pytest.raises(ValueError, match="without tensors"):
        cache_norms(old.steps, 1)


def test_an_uploaded_trace_is_kept_within_the_budget_as_a_live_run(model_dirs, monkeypatch):
    """A replayed trace counts against the session's budget too: a capture-full file recorded with a
    larger budget is shed on upload as a live run of its length would be, and the page says so."""
    from llmviz.i18n.translator import translate
    from llmviz.trace.records import trace_to_zip
    from llmviz.ui.public import Policy

    lm = load_model(str(model_dirs["llama_gqa_rope3"]))
    trace = Session(lm, PROMPT, EngineConfig(capture="full")).generate(8)
    monkeypatch.setenv("LLMVIZ_TRACE_BUDGET_MB", "0.01")  # 10 kB: below what the prefill and newest step hold
    budget = Policy.from_env().trace_budget_bytes
    assert droppable(trace) > budget
    at = open_app("app_pages/trace.py", model="/no/such/model")
    at.file_uploader(key="trace_upload").set_value(("long.zip", trace_to_zip(trace), "application/zip")).run()
    assert not at.exception and not at.error
    run = at.session_state["llmviz_run"]
    assert run.key is None and run.shed == len(trace.steps) - 1  # all but the newest, the prefill too
    assert [is_shed(s) for s in run.trace.steps] == [*[True] * (len(trace.steps) - 1), False]
    kept = droppable_step(run.trace.steps[-1])
    assert droppable(run.trace) == kept and kept == droppable_step(trace.steps[-1])
    notice = translate("en", "budget.notice", n=run.shed, mb=0.01)
    assert notice in [i.value for i in at.info]
    assert run.trace.output_ids == trace.output_ids  # tokens, top-k and timings stay


def test_a_public_server_refuses_a_replay_that_still_holds_too_much(model_dirs, monkeypatch):
    """Shedding cannot touch a file's newest step; a public server refuses a trace that still holds more than
    REPLAY_HELD_BUDGETS budgets (what a live run may hold), with a typed message, and keeps the run it showed."""
    from llmviz.i18n.translator import translate
    from llmviz.trace.budget import REPLAY_HELD_BUDGETS, bound_replay, held_bytes
    from llmviz.trace.records import trace_to_zip

    lm = load_model(str(model_dirs["llama_gqa_rope3"]))
    trace = Session(lm, PROMPT * 80, EngineConfig(capture="full")).generate(1)  # the prefill is the newest step
    budget = 5_000_000  # above llmviz-tiny's own cache at 512 tokens (4.2 MB), so the page's live run starts
    assert bound_replay(trace, budget) == 0 and held_bytes(trace) > REPLAY_HELD_BUDGETS * budget  # local: shed only
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    monkeypatch.setenv("LLMVIZ_TRACE_BUDGET_MB", "5")
    at = open_app("app_pages/trace.py", model="llmviz-tiny")
    before = at.session_state["llmviz_run"]
    at.file_uploader(key="trace_upload").set_value(("big.zip", trace_to_zip(trace), "application/zip")).run()
    assert not at.exception
    assert any(translate("en", "error.NotAllowedError") in e.value for e in at.error), [e.value for e in at.error]
    assert at.session_state["llmviz_run"] is before


def test_the_prefill_page_says_which_tensors_the_budget_left_out(model_dirs, monkeypatch):
    """A prefill planned within the budget keeps its small tensors; the Prefill page names the maps it
    did not copy and why, in the session's language, not as a trace recorded without them."""
    from llmviz.i18n.translator import translate

    lm = load_model(str(model_dirs["llama_gqa_rope3"]))
    long = PROMPT + " jumps over the lazy dog" * 20
    kv = Session(lm, long, EngineConfig(capture="full", max_seq_len=min(512, lm.cfg.max_position_embeddings)))
    monkeypatch.setenv("LLMVIZ_TRACE_BUDGET_MB", str((kv.kv_bytes() + 150_000) / 1e6))
    at = open_app("app_pages/prefill.py", model=str(model_dirs["llama_gqa_rope3"]), prompt=long)
    step = at.session_state["llmviz_run"].trace.steps[0]
    kept = {r.name.rsplit(".", 1)[-1] for r in step.hooks if r.array is not None}
    assert "embed" in kept and "probs" not in kept and is_shed(step)
    words = translate("en", "budget.not_kept", step=0, names="@@", mb=1).split("@@")[0]
    assert any(words in w.value for w in at.warning), [w.value for w in at.warning]
    assert not any("recorded at capture level" in w.value for w in at.warning)
