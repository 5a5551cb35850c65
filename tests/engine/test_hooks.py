"""Every family emits exactly the declared hook set with the declared shapes (hook contract)."""

import pytest

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.trace.config import EngineConfig, SamplingConfig
from llmviz.trace.hooks import all_hook_names, declared_point

PROMPTS = ("The quick brown fox", "This module provides functions for working with files and directories")
DECODE_T = 3


def expected_shape(lm, name: str, n: int, total: int, layer: int | None) -> list[int]:
    c = lm.cfg
    window = c.window(layer) if layer is not None else 0
    n_k = min(window, total) if window and n == 1 else total  # a decode step reads only the window
    sizes = {"b": 1, "n": n, "n_k": n_k, "d": c.hidden_size, "h": c.num_heads, "kv": c.num_kv_heads,
             "hd": c.head_dim, "V": c.vocab_size, "L": c.num_layers, "2": 2, "1": 1, "f": c.intermediate_size,
             "pos_dim": c.hidden_size if c.position == "learned" else c.head_dim // 2}
    return [sizes[d] for d in declared_point(name).dims]


@pytest.mark.parametrize("backend", ["eager", "sdpa"])
@pytest.mark.parametrize("kind", ["llama_gqa_rope3", "llama_tied", "qwen2", "mistral", "gpt2", "embedded"])
def test_declared_hooks_and_shapes(model_dirs, kind, backend):
    lm = load_model("llmviz-tiny" if kind == "embedded" else str(model_dirs[kind]))
    for prompt in PROMPTS:
        cfg = EngineConfig(capture="meta", attn_backend=backend, sampling=SamplingConfig(temperature=0),
                           stop_at_eos=False)
        session = Session(lm, prompt, cfg)
        n = len(session.sequences[0].ids)
        for t in range(DECODE_T + 1):
            step = session.step()
            names = [r.name for r in step.hooks]
            assert sorted(names) == sorted(all_hook_names(lm.cfg.num_layers)), (kind, t)
            new = n if t == 0 else 1
            for record in step.hooks:
                layer = int(record.name.split(".")[1]) if record.name.startswith("layers.") else None
                want = expected_shape(lm, record.name, new, n + t, layer)
                assert record.shape == want, (kind, backend, t, record.name, record.shape, want)
                assert record.nbytes > 0 and record.array is None  # meta keeps no tensors
            probs = step.hook("layers.0.probs")
            if lm.cfg.window(0) == 0 and t:
                assert probs.shape == [1, lm.cfg.num_heads, 1, n + t]


def test_sdpa_maps_are_rebuilt_and_say_so(model_dirs):
    lm = load_model(str(model_dirs["llama_gqa_rope3"]))
    steps = {}
    for backend in ("eager", "sdpa"):
        cfg = EngineConfig(capture="full", attn_backend=backend, sampling=SamplingConfig(temperature=0))
        session = Session(lm, PROMPTS[1], cfg)
        steps[backend] = [session.step(), session.step()]
    for eager, sdpa in zip(steps["eager"], steps["sdpa"], strict=True):
        e, s = eager.hook("layers.1.probs"), sdpa.hook("layers.1.probs")
        assert "recomputed" in s.note and not e.note
        mask_note = eager.hook("layers.1.scores").note  # the scores say which mask was applied
        assert ("causal mask" if eager.phase == "prefill" else "no mask needed") in mask_note
        assert abs(e.array - s.array).max() < 1e-5
        assert abs(e.array.sum(-1) - 1).max() < 1e-5  # each query's attention sums to one


def test_full_capture_filter(model_dirs):
    lm = load_model(str(model_dirs["gpt2"]))
    cfg = EngineConfig(capture="full", capture_filter=("layers.1.*", "logits"))
    step = Session(lm, PROMPTS[0], cfg).step()
    names = {r.name for r in step.hooks}
    assert names == {f"layers.1.{p}" for p in ("attn_in", "q", "k", "v", "scores", "probs", "attn_out",
                                                "mlp_in", "mlp_act", "mlp_out", "resid")} | {"logits"}
    logits = step.hook("logits").array
    assert logits.shape == (1, lm.cfg.vocab_size)
    assert abs(logits - step.logits).max() < 1e-6


def test_capture_off_records_timings_only(model_dirs):
    lm = load_model(str(model_dirs["qwen2"]))
    step = Session(lm, PROMPTS[0], EngineConfig(capture="off")).step()
    assert step.hooks == []
    spans = step.timings["spans_ms"]
    assert list(spans) == ["mask", "embed", "layer.0", "layer.1", "kv.write", "head", "sample"]
    assert all(v >= 0 for v in spans.values()) and step.timings["capture"] == "off"
