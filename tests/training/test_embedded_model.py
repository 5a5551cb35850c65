"""The committed default model: held-out perplexity recomputed with transformers matches its card.

The held-out split (assets/corpus/heldout.txt) is tokenized document by document, each followed by
<|endoftext|>, concatenated, and cut into non-overlapping 512-token windows; perplexity is exp of
the mean NLL over every predicted token, in fp32 on CPU: the computation the trainer ran for the card.
"""

import hashlib
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "assets" / "llmviz-tiny"
DRAFT = ROOT / "assets" / "llmviz-tiny-draft"
HELDOUT = ROOT / "assets" / "corpus" / "heldout.txt"
SEPARATOR = "\n<|endoftext|>\n"
WINDOW = 512
MAX_PERPLEXITY = 80.0


def heldout_ids(tok) -> list[int]:
    docs = HELDOUT.read_text(encoding="utf-8").removesuffix("\n").split(SEPARATOR)
    ids: list[int] = []
    for doc in docs:
        ids += [*tok.encode(doc, add_special_tokens=False), tok.eos_token_id]
    return ids


def perplexity(model, ids: list[int]) -> float:
    import torch
    import torch.nn.functional as F

    data = torch.tensor(ids)
    nll, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(data) - 1, WINDOW):
            chunk = data[i:i + WINDOW][None]  # [1, n]
            if chunk.shape[1] < 2:
                break
            logits = model(chunk).logits.float()  # [1, n, V]
            nll += F.cross_entropy(logits[0, :-1], chunk[0, 1:], reduction="sum").item()
            count += chunk.shape[1] - 1
    return math.exp(nll / count)


@pytest.fixture(scope="module")
def card():
    return json.loads((MODEL / "card.json").read_text())


def test_heldout_file_is_the_one_the_card_names(card):
    assert hashlib.sha256(HELDOUT.read_bytes()).hexdigest() == card["heldout_sha256"]


def test_heldout_perplexity_matches_card(card):
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(str(MODEL), local_files_only=True)
    model = LlamaForCausalLM.from_pretrained(str(MODEL), local_files_only=True, dtype=torch.float32).eval()
    ids = heldout_ids(tok)
    assert len(ids) == card["heldout_tokens"]
    ppl = perplexity(model, ids)
    assert ppl <= MAX_PERPLEXITY
    assert abs(ppl - card["heldout_perplexity"]) <= 0.01 * card["heldout_perplexity"], (ppl, card)


def test_weights_are_small_fp16_and_draft_shares_the_tokenizer(card):
    from safetensors import safe_open

    assert (MODEL / "model.safetensors").stat().st_size < 15e6
    with safe_open(str(MODEL / "model.safetensors"), "pt") as f:
        names = f.keys()
        assert {str(f.get_tensor(k).dtype) for k in names} == {"torch.float16"}
    assert (DRAFT / "tokenizer.json").read_bytes() == (MODEL / "tokenizer.json").read_bytes()
    draft = json.loads((DRAFT / "config.json").read_text())
    assert draft["vocab_size"] == json.loads((MODEL / "config.json").read_text())["vocab_size"]


@pytest.mark.parametrize("kv_heads", [4, 2])
def test_uptrained_gqa_models_keep_their_quality(card, kv_heads):
    """C19: the uptrained GQA models' perplexity (recomputed by transformers) is within 10% of the
    multi-head model's; mean-pooling alone (the engine's --kv-heads) is far worse, as their cards say."""
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    from llmviz.engine.loading.model import load_model

    folder = ROOT / "assets" / f"llmviz-tiny-gqa{kv_heads}"
    gqa = json.loads((folder / "card.json").read_text())
    assert json.loads((folder / "config.json").read_text())["num_key_value_heads"] == kv_heads
    tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    ids = heldout_ids(tok)
    model = LlamaForCausalLM.from_pretrained(str(folder), local_files_only=True, dtype=torch.float32).eval()
    ppl = perplexity(model, ids)
    assert abs(ppl - gqa["heldout_perplexity"]) <= 0.01 * ppl
    assert ppl <= 1.10 * card["heldout_perplexity"]
    pooled = load_model("llmviz-tiny", kv_heads=kv_heads)
    pooled_ppl = perplexity(lambda x: SimpleNamespace(logits=pooled.model(x)), ids)
    assert abs(pooled_ppl - gqa["perplexity_mean_pooled"]) <= 0.01 * pooled_ppl
    assert pooled_ppl > 1.5 * ppl
    assert load_model(f"llmviz-tiny-gqa{kv_heads}").cfg.num_kv_heads == kv_heads  # selectable by name


def test_engine_perplexity_through_the_cache_equals_the_oracles(card):
    """The engine's held-out perplexity (each window one prefill through a KV cache) is the card's, which
    transformers computed; a lossy KV storage costs a little, GQA by pooling alone a lot (C11, C19)."""
    from llmviz.engine.loading.model import load_model
    from llmviz.engine.session import Session
    from llmviz.labs.evaluation import engine_perplexity, heldout_ids, teacher_forced_drift
    from llmviz.trace.config import EngineConfig, SamplingConfig

    lm = load_model("llmviz-tiny")
    ids = heldout_ids(lm.tokenizer)
    assert len(ids) == card["heldout_tokens"]
    base = engine_perplexity(lm, ids, layout="paged")
    assert abs(base - card["heldout_perplexity"]) <= 1e-3 * base
    int8 = engine_perplexity(lm, ids, kv_dtype="int8")
    assert base < int8 < 1.01 * base
    config = EngineConfig(device="cpu", capture="off", logit_lens_top_k=0, stop_at_eos=False,
                          sampling=SamplingConfig(temperature=0))
    reference = Session(lm, "Return the value of the", config).generate(17)
    report = teacher_forced_drift(reference, Session(lm, "Return the value of the", config.with_(kv_dtype="fp8")))
    assert report["steps"] == 17 and 0 < max(report["max_abs_dlogit"]) < 0.5 and report["greedy_agreement"] >= 0.9
