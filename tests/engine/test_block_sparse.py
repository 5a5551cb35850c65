"""Block-sparse attention (C20): the rule of trace/sparsity.py against masks built by hand, the
engine's recorded masks against that rule in prefill and decode, every block allowed equal to transformers'
dense logits, each backend that takes a mask agreeing, and typed errors for settings that cannot be."""

import numpy as np
import pytest
import torch
from parity import TOL, oracle

from llmviz.engine.kv import make_kv_cache
from llmviz.engine.loading.model import load_model
from llmviz.engine.phases import feed
from llmviz.engine.session import Session
from llmviz.errors import ConfigError
from llmviz.trace.config import EngineConfig, SamplingConfig
from llmviz.trace.sparsity import BlockSparse
from llmviz.trace.switches import lossy_changes, parse_spec

GREEDY = SamplingConfig(temperature=0)


def by_hand(n: int, block: int, local: int, first: int) -> np.ndarray:
    """[n, n] allowed, written out position by position from the definition."""
    out = np.zeros((n, n), dtype=bool)
    for q in range(n):
        for k in range(q + 1):
            qb, kb = q // block, k // block
            out[q, k] = (qb - kb) < local or kb < first
    return out


@pytest.mark.parametrize("n, block, local, first", [(10, 2, 2, 1), (9, 3, 1, 0), (12, 4, 1, 2), (7, 1, 3, 1)])
def test_the_rule_is_the_mask_written_out(n, block, local, first):
    q, k = np.arange(n)[:, None], np.arange(n)[None, :]
    assert np.array_equal(BlockSparse(block, local, first).allows(q, k), by_hand(n, block, local, first))


def test_one_hand_mask_in_full():
    """Blocks of 2, the 2 nearest blocks and the first one: query 6 (block 3) sees blocks 2, 3 and 0."""
    mask = BlockSparse(2, 2, 1).allows(np.arange(8)[:, None], np.arange(8)[None, :])
    assert mask[6].tolist() == [True, True, False, False, True, True, True, False]
    assert mask[7].tolist() == [True, True, False, False, True, True, True, True]


@pytest.fixture(scope="module")
def lm(model_dirs):
    return load_model(str(model_dirs["llama_gqa_rope3"]))


def scores_of(lm, prompt: str, sparse: BlockSparse, steps: int, backend: str = "eager"):
    config = EngineConfig(attn_backend=backend, capture="full", sampling=GREEDY, stop_at_eos=False,
                          sparse_block=sparse.block, sparse_local=sparse.local, sparse_global=sparse.global_blocks)
    return Session(lm, prompt, config).generate(steps)


def test_the_recorded_scores_are_masked_by_the_rule_in_prefill_and_decode(lm):
    sparse = BlockSparse(2, 2, 1)
    trace = scores_of(lm, "The quick brown fox jumps over", sparse, 4)
    n = len(trace.prompt_ids)
    prefill = trace.steps[0].hook("layers.1.scores").array[0, 0]  # [n, n]
    assert np.array_equal(np.isfinite(prefill), by_hand(n, 2, 2, 1))
    for j, step in enumerate(trace.steps[1:], start=1):  # decode: one query at position n + j - 1
        row = step.hook("layers.0.scores").array[0, 0, 0]  # [n_k]
        pos = n + j - 1
        assert np.array_equal(np.isfinite(row), by_hand(pos + 1, 2, 2, 1)[pos]), j
    assert "block-sparse" in trace.steps[0].hook("layers.1.scores").note


def test_every_block_allowed_is_the_dense_model_of_transformers(model_dirs, lm):
    """local blocks covering the context: the logits of transformers' own (dense) model, prefill and decode."""
    hf = oracle(model_dirs["llama_gqa_rope3"])
    ids = lm.tokenizer.encode("The quick brown fox jumps over the lazy dog")
    sparse = BlockSparse(4, 64, 0)
    cache = make_kv_cache("contiguous", lm.cfg, len(ids) + 8)
    cache.add(0)
    seq, worst = list(ids), 0.0
    with torch.inference_mode():
        ours = feed(lm.model, cache, [ids], [0], backend="eager", window=sparse)
        for _ in range(6):
            ref = hf(torch.tensor([seq])).logits[:, -1].float()
            worst = max(worst, (ref - ours.float()).abs().max().item())
            token = int(ref.argmax())
            seq.append(token)
            ours = feed(lm.model, cache, [[token]], [0], backend="eager", window=sparse)
    assert worst <= TOL


@pytest.mark.parametrize("backend", ["sdpa", "flash"])
def test_the_backends_that_take_a_mask_agree_with_eager(lm, backend):
    sparse = BlockSparse(2, 1, 1)
    eager = scores_of(lm, "The quick brown fox jumps over the lazy dog", sparse, 6)
    other = scores_of(lm, "The quick brown fox jumps over the lazy dog", sparse, 6, backend)
    assert other.output_ids == eager.output_ids
    assert np.allclose(other.steps[-1].logits, eager.steps[-1].logits, atol=1e-4)


def test_a_sparse_mask_changes_the_model_and_costs_it(lm):
    dense = Session(lm, "The quick brown fox jumps over the lazy dog", EngineConfig(sampling=GREEDY)).generate(1)
    sparse = scores_of(lm, "The quick brown fox jumps over the lazy dog", BlockSparse(2, 1, 0), 1)
    assert not np.allclose(dense.steps[0].logits, sparse.steps[0].logits, atol=1e-3)


@pytest.mark.parametrize("changes, needle", [
    ({"sparse_block": 4, "sliding_window": 8}, "choose one of sliding_window and block-sparse"),
    ({"sparse_block": 0}, "block-sparse block"),
    ({"sparse_block": 4, "sparse_local": 0}, "block-sparse local"),
    ({"sparse_global": -1}, "block-sparse global_blocks"),
])
def test_impossible_settings_are_typed_errors(changes, needle):
    with pytest.raises(ConfigError, match=needle):
        EngineConfig(**changes)


def test_the_switches_parse_and_say_they_are_lossy():
    changes = parse_spec("sparse-block=16,sparse-local=2,sparse-global=1")
    assert EngineConfig(**changes).block_sparse == BlockSparse(16, 2, 1)
    assert lossy_changes(changes) == ["sparse-block"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the CUDA flash kernel needs a CUDA device")
def test_the_cuda_flash_kernel_refuses_a_sparse_mask_with_a_typed_error(model_dirs):
    lm = load_model(str(model_dirs["llama_gqa_rope3"]), device="cuda", dtype="fp16")
    config = EngineConfig(device="cuda", dtype="fp16", attn_backend="flash", sparse_block=2)
    with pytest.raises(ConfigError, match="block-sparse"):
        Session(lm, "The quick brown fox", config).step()
