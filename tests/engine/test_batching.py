"""Real batches (C13): prompts of different lengths in one padded forward pass give every row what it
gives alone.

The same-tokens rule: greedy tokens are compared on the embedded (trained) model; on random models
the logits are compared teacher-forced within 1e-4 (fp32), since near-ties can flip a greedy token when
matmul shapes change.
"""

import dataclasses

import pytest
import torch

from llmviz.engine.kv import make_kv_cache
from llmviz.engine.loading.model import load_model
from llmviz.engine.phases import feed
from llmviz.engine.session import Session
from llmviz.errors import PromptError
from llmviz.trace.config import KV_LAYOUTS, PADDINGS, EngineConfig, SamplingConfig

PROMPTS = ["The list of", "Return the value of the function", "This"]  # 3, 6 and 1 tokens
GREEDY = SamplingConfig(temperature=0)
STEPS = 8
TOL = 1e-4


@pytest.fixture(scope="module")
def tiny():
    return load_model("llmviz-tiny")


def alone(lm, prompt, cfg):
    return Session(lm, prompt, cfg).generate(STEPS)


@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("layout", KV_LAYOUTS)
def test_every_row_of_a_batch_equals_its_prompt_alone(tiny, layout, padding):
    cfg = EngineConfig(sampling=GREEDY, kv_layout=layout, padding=padding, kv_block_size=4, stop_at_eos=False)
    batch = Session(tiny, PROMPTS, cfg).generate(STEPS)
    lengths = [len(tiny.tokenizer.encode(p)) for p in PROMPTS]
    assert len(set(lengths)) == 3  # really different lengths, so padding and masks are exercised
    assert batch.steps[0].input_ids.shape == (3, max(lengths))
    assert (batch.steps[0].input_ids == -1).sum() == 3 * max(lengths) - sum(lengths)  # pads recorded as -1
    for i, prompt in enumerate(PROMPTS):
        ref = alone(tiny, prompt, EngineConfig(sampling=GREEDY, stop_at_eos=False))
        assert batch.row_prompt_ids(i) == ref.prompt_ids
        assert batch.row_output_ids(i) == ref.output_ids, f"row {i} ({layout}, {padding} padding)"
        for t in range(STEPS):
            gap = abs(batch.steps[t].logits[i] - ref.steps[t].logits[0]).max()
            assert gap <= TOL, f"row {i}, step {t}: |Δlogit| {gap}"
    assert batch.steps[-1].kv["seq_lens"] == [n + STEPS - 1 for n in lengths]


def teacher_forced(lm, rows: list[list[int]], tokens: list[list[int]], layout="contiguous", padding="right",
                   backend="sdpa"):
    """Logits [steps][b, V] of a batch fed the given prompts, then the given tokens (one per row and step)."""
    cache = make_kv_cache(layout, lm.cfg, 64, capacity=len(rows), block_size=4)
    ids = list(range(len(rows)))
    for i in ids:
        cache.add(i)
    with torch.inference_mode():
        out = [feed(lm.model, cache, rows, ids, padding=padding, backend=backend)]
        for t in range(len(tokens[0])):
            out.append(feed(lm.model, cache, [[tok[t]] for tok in tokens], ids, backend=backend))
    return out


@pytest.mark.parametrize("kind", ["llama_gqa_rope3", "mistral", "gpt2"])
def test_random_models_batch_logits_equal_single_rows(model_dirs, kind):
    """GQA, a sliding window shorter than the prompts (Mistral) and learned positions (GPT-2)."""
    lm = load_model(str(model_dirs[kind]))
    prompts = ["The quick brown fox jumps over", "Return", "This module provides functions"]
    rows = [lm.tokenizer.encode(p) for p in prompts]
    forced = [[(7 * i + 3 * t) % 250 + 5 for t in range(6)] for i in range(len(rows))]  # any fixed tokens
    for padding, backend in zip(PADDINGS, ("flash", "eager"), strict=True):
        batch = teacher_forced(lm, rows, forced, "paged", padding, backend)
        for i, row in enumerate(rows):
            single = teacher_forced(lm, [row], [forced[i]])
            gaps = [abs(b[i] - s[0]).max().item() for b, s in zip(batch, single, strict=True)]
            assert max(gaps) <= TOL, f"{kind} row {i} ({padding}): {gaps}"


def test_a_finished_row_pads_while_the_others_go_on(tiny):
    cfg = EngineConfig(sampling=GREEDY, stop_at_eos=True)
    refs = [alone(tiny, p, cfg.with_(stop_at_eos=False)) for p in PROMPTS]
    stop = refs[1].output_ids[2]  # row 1's third token: make it that model's end-of-text token
    assert stop not in refs[0].output_ids[:STEPS] and stop not in refs[2].output_ids[:STEPS]
    lm = dataclasses.replace(tiny, tokenizer=_with_eos(tiny, stop))
    session = Session(lm, PROMPTS, cfg)
    trace = session.generate(STEPS)
    assert trace.row_output_ids(1) == refs[1].output_ids[:3]  # stopped at its EOS
    assert trace.steps[2].row_finished == ["", "eos", ""] and trace.steps[2].finished == ""
    for t in range(3, STEPS):
        assert trace.steps[t].sampled[1] == -1 and (trace.steps[t].input_ids[1] == -1).all()  # a pad row
        assert trace.steps[t].timings["padded_slots"] == 1
    assert trace.row_output_ids(0) == refs[0].output_ids and trace.row_output_ids(2) == refs[2].output_ids
    n1 = len(trace.row_prompt_ids(1)) + 2  # its cache stopped growing: prompt + 2 decoded inputs
    assert trace.steps[-1].kv["seq_lens"][1] == n1 == session.cache.length(1)


def _with_eos(lm, eos: int):
    import copy

    tok = copy.copy(lm.tokenizer)  # the shared model's tokenizer stays as it is
    tok.eos_ids = (eos,)
    return tok


def test_repetition_penalty_reads_each_rows_own_tokens(tiny):
    """Pad tokens are not part of any row's history: a penalized batch still equals the rows alone."""
    cfg = EngineConfig(sampling=SamplingConfig(temperature=0, repetition_penalty=1.8), padding="left",
                       stop_at_eos=False)
    batch = Session(tiny, PROMPTS, cfg).generate(STEPS)
    for i, p in enumerate(PROMPTS):
        assert batch.row_output_ids(i) == alone(tiny, p, cfg).output_ids


def test_sampled_rows_draw_with_their_own_seed(tiny):
    cfg = EngineConfig(sampling=SamplingConfig(temperature=0.9, top_k=40), seed=11, stop_at_eos=False)
    batch = Session(tiny, PROMPTS, cfg).generate(STEPS)
    for i, p in enumerate(PROMPTS):
        assert batch.row_output_ids(i) == alone(tiny, p, cfg.with_(seed=11 + i)).output_ids
    assert len({tuple(batch.row_output_ids(i)) for i in range(3)}) == 3


def test_a_session_starts_from_token_ids(tiny):
    ids = tiny.tokenizer.encode(PROMPTS[1])
    cfg = EngineConfig(sampling=GREEDY, stop_at_eos=False)
    from_ids = Session(tiny, config=cfg, prompt_ids=[ids]).generate(4)
    assert from_ids.output_ids == alone(tiny, PROMPTS[1], cfg).output_ids[:4]
    assert from_ids.prompt == PROMPTS[1]  # the ids decoded, for the trace
    with pytest.raises(PromptError, match="outside the vocabulary"):
        Session(tiny, config=cfg, prompt_ids=[[1, tiny.cfg.vocab_size]])
    with pytest.raises(PromptError):
        Session(tiny, config=cfg, prompt_ids=[[]])
    with pytest.raises(PromptError):
        Session(tiny, [], cfg)


def test_a_seed_that_would_overflow_for_a_later_row_is_refused(tiny):
    from llmviz.errors import ConfigError

    with pytest.raises(ConfigError, match="row i draws with seed"):
        Session(tiny, PROMPTS, EngineConfig(seed=2**64 - 2))
    Session(tiny, PROMPTS[:2], EngineConfig(seed=2**64 - 2))  # rows 0 and 1 fit


ARRANGEMENTS = {  # (cached first, then fed in one step) per row
    # a chunk, a decode, a prompt, a decode: the decode rows 1 and 3 are not consecutive (their group by index)
    "apart": ((9, 6, 0, 4), ([31, 32, 33, 34, 35], [40], [50, 51, 52], [60])),
    # two decode rows first, then two chunks: the decode group is rows 0-1, read through views (its span)
    "together": ((6, 4, 9, 0), ([40], [60], [31, 32, 33, 34, 35], [50, 51, 52])),
}


@pytest.mark.parametrize("kind", ["llama_gqa_rope3", "mistral", "gpt2"])
@pytest.mark.parametrize("layout", ["paged", "contiguous"])
@pytest.mark.parametrize("arrangement", list(ARRANGEMENTS))
def test_a_packed_step_of_chunks_and_decode_rows_equals_each_row_alone(model_dirs, kind, layout, arrangement):
    """C15's varlen batch: a prefill chunk from mid-prompt, a decode row, a chunk from 0 and a second decode row,
    packed end to end outside attention, give each row the logits it gets fed alone (RoPE or learned positions, GQA,
    a window). The decode rows (1 and 3) are not consecutive: their group is read by index, a chunk through views."""
    from llmviz.engine.capture import RunContext
    from llmviz.errors import ConfigError

    lm = load_model(str(model_dirs[kind]))
    cached, new = ARRANGEMENTS[arrangement]
    history = [[(5 * i + 11 * t) % 240 + 7 for t in range(n)] for i, n in enumerate(cached)]  # cached first

    def run(rows_now, ids, packed):
        cache = make_kv_cache(layout, lm.cfg, 64, capacity=4, block_size=4)
        for i in ids:
            cache.add(i)
        with torch.inference_mode():
            for i in ids:
                if history[i]:
                    feed(lm.model, cache, [history[i]], [i])
            return feed(lm.model, cache, rows_now, ids, packed=packed), cache

    packed, cache = run(new, [0, 1, 2, 3], packed=True)
    assert [cache.length(i) for i in range(4)] == [c + len(r) for c, r in zip(cached, new, strict=True)]
    for i in range(4):
        alone, _ = run([new[i]], [i], packed=False)
        gap = (packed[i] - alone[0]).abs().max().item()
        assert gap <= TOL, f"{kind} {layout} row {i}: |Δlogit| {gap}"
    cache = make_kv_cache(layout, lm.cfg, 64, capacity=2, block_size=4)
    cache.add(0), cache.add(1)
    with pytest.raises(ConfigError, match="records no hooks"), torch.inference_mode():
        feed(lm.model, cache, [[1, 2], [3]], [0, 1], packed=True, ctx=RunContext(capture="full", patterns=("*",)))
