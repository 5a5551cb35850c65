"""Every combination of KV layout x KV dtype x attention backend x fused projections runs on the embedded
model (C8-C11, C14): exact combinations give the default's tokens and logits, lossy ones stay close."""

import itertools

import numpy as np
import pytest

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.trace.config import ATTN_BACKENDS, KV_DTYPES, KV_LAYOUTS, EngineConfig, SamplingConfig

PROMPTS = ["The list of", "Return the value of the function"]
STEPS = 4
EXACT_KV = ("auto", "fp32")
LOSSY_GAP = {"fp16": 0.01, "bf16": 0.1, "fp8": 0.5, "int8": 0.25}  # max |Δlogit| over the grid's steps


@pytest.fixture(scope="module")
def models():
    return {fused: load_model("llmviz-tiny", fused_qkv=fused) for fused in ("off", "on")}


def run(lm, fused, layout, kv_dtype, backend):
    cfg = EngineConfig(kv_layout=layout, kv_dtype=kv_dtype, attn_backend=backend, fused_qkv=fused,
                       kv_block_size=4, max_seq_len=32, sampling=SamplingConfig(temperature=0), stop_at_eos=False)
    return Session(lm, PROMPTS, cfg).generate(STEPS)


def test_the_whole_grid(models):
    ref = run(models["off"], "off", "contiguous", "auto", "sdpa")
    combos = list(itertools.product(("off", "on"), KV_LAYOUTS, KV_DTYPES, ATTN_BACKENDS))
    assert len(combos) == 2 * 3 * 6 * 3
    failures = []
    for fused, layout, kv_dtype, backend in combos:
        trace = run(models[fused], fused, layout, kv_dtype, backend)
        gap = max(float(np.abs(a.logits - b.logits).max()) for a, b in zip(ref.steps, trace.steps, strict=True))
        same = all(trace.row_output_ids(i) == ref.row_output_ids(i) for i in range(len(PROMPTS)))
        limit = 1e-4 if kv_dtype in EXACT_KV else LOSSY_GAP[kv_dtype]
        if gap > limit or (kv_dtype in EXACT_KV and not same):
            failures.append((fused, layout, kv_dtype, backend, gap, same))
    assert not failures, failures
