"""Logit parity with the transformers oracle on the same safetensors folder (C3, C5).

fp32, max |Δlogits| <= 1e-4 at the prefill and at each of 16 decode steps, teacher-forced on the
oracle's greedy tokens (random models have near-ties, so logits are compared, not only tokens).
"""

import pytest
import torch

from llmviz.engine.kv import make_kv_cache
from llmviz.engine.loading.model import load_model
from llmviz.engine.phases import feed
from llmviz.engine.platform.devices import torch_dtype

PROMPT = "The quick brown fox jumps over the lazy dog. Return the list"
DECODE_STEPS = 16
TOL = 1e-4




def oracle(folder, dtype: str = "fp32", device: str = "cpu"):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager",
                                                dtype=torch_dtype(dtype)).to(device).eval()


def hf_step(hf, ids: torch.Tensor, cache):
    """One oracle forward with its cache (transformers 5.24 calls the keyword `cache`; older 5.x releases,
    as on the GPU machine, `past_key_values`)."""
    import inspect

    key = "cache" if "cache" in inspect.signature(hf.forward).parameters else "past_key_values"
    return hf(ids, use_cache=True, **{key: cache}).logits[:, -1].float()


def teacher_forced(folder, backend: str, prompt: str = PROMPT, layout: str = "contiguous", lm=None,
                   window: int | None = None, dtype: str = "fp32", device: str = "cpu",
                   steps: int = DECODE_STEPS, kv_dtype: str = "auto") -> tuple[list[float], float]:
    """Per-step max |Δlogit| against transformers in the same dtype on the same device, at the prefill and at
    `steps` decode steps fed the oracle's greedy tokens; and the share of steps whose top-1 token agrees."""
    from transformers import DynamicCache

    lm = lm or load_model(str(folder), device=device, dtype=dtype)
    hf = oracle(folder, dtype, device)
    ids = lm.tokenizer.encode(prompt)
    cache = make_kv_cache(layout, lm.cfg, len(ids) + steps + 1, block_size=4, window=window, model_dtype=lm.dtype,
                          device=lm.device, kv_dtype=kv_dtype)
    cache.add(0)
    hf_cache = DynamicCache(config=hf.config)
    diffs, agree = [], 0
    with torch.inference_mode():
        ref = hf_step(hf, torch.tensor([ids], device=lm.device), hf_cache)
        ours = feed(lm.model, cache, [ids], [0], backend=backend, window=window).float()
        for i in range(steps + 1):
            diffs.append((ref - ours).abs().max().item())
            agree += int(ref.argmax() == ours.argmax())
            if i == steps:
                break
            token = ref.argmax(-1, keepdim=True)  # [1, 1] the oracle's greedy token, fed to both
            ref = hf_step(hf, token, hf_cache)
            ours = feed(lm.model, cache, [[int(token)]], [0], backend=backend, window=window).float()
    assert cache.length(0) == len(ids) + steps
    return diffs, agree / (steps + 1)


def run_parity(folder, backend: str, **kwargs) -> list[float]:
    return teacher_forced(folder, backend, **kwargs)[0]


@pytest.mark.parametrize("backend", ["eager", "sdpa", "flash"])
@pytest.mark.parametrize("kind", ["llama_gqa_rope3", "llama_tied", "qwen2", "mistral", "gpt2"])
def test_random_models_match_oracle(model_dirs, kind, backend):
    diffs = run_parity(model_dirs[kind], backend)
    assert len(diffs) == 1 + DECODE_STEPS
    assert max(diffs) <= TOL, f"{kind}/{backend}: per-step max |Δlogits| {diffs}"


def test_embedded_model_matches_oracle():
    from llmviz.engine.loading.model import ASSETS, EMBEDDED_MODEL

    for backend in ("eager", "sdpa", "flash"):
        diffs = run_parity(ASSETS / EMBEDDED_MODEL, backend, prompt="Return the list of the values in the module")
        assert max(diffs) <= TOL, f"embedded/{backend}: {diffs}"


def test_mistral_window_is_shorter_than_the_run(model_dirs):
    lm = load_model(str(model_dirs["mistral"]))
    n = len(lm.tokenizer.encode(PROMPT))
    assert lm.cfg.window(0) == 8 < n  # so the sliding-window path is really exercised (C20)


def test_llama3_rope_scaling_changes_frequencies(model_dirs):
    from llmviz.engine.models.layers import rope_inv_freq
    from llmviz.trace.model_config import ModelConfig

    lm = load_model(str(model_dirs["llama_gqa_rope3"]))
    assert lm.cfg.rope_scaling["rope_type"] == "llama3"
    plain = ModelConfig(**{**lm.cfg.to_dict(), "rope_scaling": {}, "sliding_windows": (), "eos_token_ids": ()})
    assert not torch.allclose(rope_inv_freq(lm.cfg), rope_inv_freq(plain))


# Half precision against transformers in the same dtype, on decode steps that read the half-precision cache.
# The two implementations order and fuse their operations differently, and every rounding is worth about
# |logit| x eps (fp16 eps 2^-11, bf16 eps 2^-8; the embedded model's logits reach ~15): so the logits may
# differ by a few such steps, while the chosen token must agree at >= 95% of 64 teacher-forced steps.
HALF_TOL = {"fp16": 0.1, "bf16": 0.5}


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_precision_matches_transformers_in_the_same_dtype(dtype):
    from llmviz.engine.loading.model import ASSETS, EMBEDDED_MODEL

    diffs, agreement = teacher_forced(ASSETS / EMBEDDED_MODEL, "sdpa", dtype=dtype, steps=64,
                                      prompt="Return the value of the function and the list of its arguments")
    assert agreement >= 0.95, (dtype, agreement)
    assert max(diffs) <= HALF_TOL[dtype], (dtype, max(diffs))


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_precision_stays_close_to_fp32(dtype):
    """fp16 / bf16 weights and KV cache (C11): same shapes, logits within a half-precision tolerance."""
    from llmviz.engine.session import Session
    from llmviz.trace.config import EngineConfig, SamplingConfig

    greedy = SamplingConfig(temperature=0)
    full = Session(load_model("llmviz-tiny", dtype="fp32"), PROMPT, EngineConfig(sampling=greedy))
    half = Session(load_model("llmviz-tiny", dtype=dtype), PROMPT, EngineConfig(dtype=dtype, sampling=greedy))
    a, b = full.step(), half.step()
    assert b.kv["dtype"] == {"fp16": "float16", "bf16": "bfloat16"}[dtype] and b.kv["element_bytes"] == 2
    assert b.kv["bytes_used"] * 2 == a.kv["bytes_used"]  # the cache is half the bytes
    scale = abs(a.logits).max()
    assert abs(a.logits - b.logits).max() < 0.05 * scale
    assert a.topk_ids[0, 0] == b.topk_ids[0, 0]


@pytest.mark.parametrize("layout", ["dynamic", "paged"])
@pytest.mark.parametrize("kind", ["llama_gqa_rope3", "llama_tied", "qwen2", "mistral", "gpt2"])
def test_every_layout_matches_the_oracle(model_dirs, kind, layout):
    """Layouts are exact switches (C8, C9): the same logits as transformers, through block tables too."""
    diffs = run_parity(model_dirs[kind], "sdpa", layout=layout)
    assert max(diffs) <= TOL, f"{kind}/{layout}: per-step max |Δlogits| {diffs}"
