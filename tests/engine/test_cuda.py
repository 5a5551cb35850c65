"""The CUDA paths (skipped without a GPU): parity in fp32 and in half precision against transformers on the
GPU, the flash kernel, padded batches, and KV bytes against the CUDA allocator (C4, C11, C13, C14)."""

import pytest
import torch
from parity import HALF_TOL, TOL, teacher_forced

from llmviz.engine.kv import make_kv_cache
from llmviz.engine.loading.model import ASSETS, EMBEDDED_MODEL, load_model
from llmviz.engine.phases import feed
from llmviz.engine.session import Session
from llmviz.errors import ConfigError
from llmviz.trace.config import EngineConfig, SamplingConfig

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
TINY = ASSETS / EMBEDDED_MODEL
PROMPT = "Return the value of the function and the list of its arguments"


@pytest.mark.parametrize("backend,layout", [("sdpa", "contiguous"), ("eager", "paged")])
def test_fp32_parity_on_cuda(backend, layout):
    diffs, _ = teacher_forced(TINY, backend, prompt=PROMPT, device="cuda", layout=layout)
    assert max(diffs) <= TOL, diffs


@pytest.mark.parametrize("dtype,backend", [("fp16", "sdpa"), ("bf16", "sdpa"), ("fp16", "flash"), ("bf16", "flash")])
def test_half_precision_on_cuda(dtype, backend):
    diffs, agreement = teacher_forced(TINY, backend, prompt=PROMPT, device="cuda", dtype=dtype, steps=64)
    assert agreement >= 0.95 and max(diffs) <= HALF_TOL[dtype], (agreement, max(diffs))


def test_flash_in_fp32_says_which_kernels_exist():
    with pytest.raises(ConfigError, match="CUDA \\(fp16, bf16\\)"):
        lm = load_model("llmviz-tiny", device="cuda")
        Session(lm, PROMPT, EngineConfig(device="cuda", attn_backend="flash")).step()


def test_batch_rows_equal_single_rows_on_cuda():
    lm = load_model("llmviz-tiny", device="cuda")
    prompts = ["The list of", "Return the value of the function", "This"]
    for layout in ("contiguous", "paged"):
        cfg = EngineConfig(device="cuda", sampling=SamplingConfig(temperature=0), stop_at_eos=False, kv_layout=layout)
        batch = Session(lm, prompts, cfg).generate(8)
        for i, p in enumerate(prompts):
            assert batch.row_output_ids(i) == Session(lm, p, cfg).generate(8).output_ids


@pytest.mark.parametrize("layout", ["contiguous", "paged", "dynamic"])
def test_cache_bytes_against_the_cuda_allocator(layout):
    lm = load_model("llmviz-tiny", device="cuda")
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    cache = make_kv_cache(layout, lm.cfg, 256, capacity=2, device="cuda", block_size=16)
    cache.add(0)
    cache.add(1)
    with torch.inference_mode():
        feed(lm.model, cache, [lm.tokenizer.encode(PROMPT), lm.tokenizer.encode("Return")], [0, 1])
    torch.cuda.synchronize()
    delta = torch.cuda.memory_allocated() - before
    assert cache.bytes_allocated() <= delta <= cache.bytes_allocated() + 64 * 1024, (delta, cache.bytes_allocated())


def test_compare_peak_memory_on_cuda():
    """The Compare page's peak on a GPU: the model's weights plus what the run allocated above what was resident
    (C11, C17). fp16 weights halve the weights, so B's peak drops by at least most of that."""
    from llmviz import service
    from llmviz.labs.compare import CompareConfig, compare

    result = compare(CompareConfig(prompt=PROMPT, a="dtype=fp32", b="dtype=fp16", model="llmviz-tiny", steps=4,
                                   repeats=1, device="cuda"), service.models.load)
    a, b = result["a"], result["b"]
    assert a["peak_memory"]["kind"] == "cuda" and b["weight_bytes"] * 2 == a["weight_bytes"]
    assert a["weight_bytes"] + a["kv_bytes_allocated"] <= a["peak_memory"]["bytes"]
    assert a["peak_memory"]["bytes"] - b["peak_memory"]["bytes"] >= 0.9 * (a["weight_bytes"] - b["weight_bytes"])
    assert result["outputs"]["agreement"] >= 0.8 and result["drift"]["max"] < 0.5
