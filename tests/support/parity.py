"""Teacher-forced logit parity with the transformers oracle on the same safetensors folder (C3, C5, C11).

The engine and `AutoModelForCausalLM` load the same folder; both are fed the oracle's greedy tokens (random
models have near-ties, so logits are compared, not only tokens). Used by the parity, conversion, sliding-window,
MLP-hook and CUDA tests, and by bench/cuda_check.py.
"""

from __future__ import annotations

import torch

from llmviz.engine.kv import make_kv_cache
from llmviz.engine.loading.model import load_model
from llmviz.engine.phases import feed
from llmviz.engine.platform.devices import torch_dtype

PROMPT = "The quick brown fox jumps over the lazy dog. Return the list"
DECODE_STEPS = 16
TOL = 1e-4  # fp32: max |Δlogits| at the prefill and at every decode step

# Half precision against transformers in the same dtype, on decode steps that read the half-precision cache.
# The two implementations order and fuse their operations differently, and every rounding is worth about
# |logit| x eps (fp16 eps 2^-11, bf16 eps 2^-8; the embedded model's logits reach ~15): so the logits may
# differ by a few such steps, while the chosen token must agree at >= 95% of 64 teacher-forced steps.
HALF_TOL = {"fp16": 0.1, "bf16": 0.5}


def oracle(folder, dtype: str = "fp32", device: str = "cpu"):
    """transformers' own model on the folder, with eager attention (no kernel of its own choosing)."""
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
    """The per-step max |Δlogit| of teacher_forced alone."""
    return teacher_forced(folder, backend, **kwargs)[0]


def greedy_oracle(folder, prompt: str, n: int) -> tuple[list[int], list[int]]:
    """transformers' own model and tokenizer on a checkpoint folder: the prompt's ids and n greedy ids after it."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    ids = tok(prompt, add_special_tokens=False)["input_ids"]
    seq = list(ids)
    with torch.inference_mode():
        for _ in range(n):
            seq.append(int(model(torch.tensor([seq])).logits[0, -1].argmax()))
    return ids, seq[len(ids):]
