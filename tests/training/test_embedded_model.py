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
HELDOUT_ZH = ROOT / "assets" / "corpus" / "heldout_zh.txt"
SEPARATOR = "\n<|endoftext|>\n"
WINDOW = 512
MAX_PERPLEXITY = 80.0


def documents(path: Path = HELDOUT) -> list[str]:
    return path.read_text(encoding="utf-8").removesuffix("\n").split(SEPARATOR)


def heldout_ids(tok, path: Path = HELDOUT) -> list[int]:
    docs = documents(path)
    ids: list[int] = []
    for doc in docs:
        ids += [*tok.encode(doc, add_special_tokens=False), tok.eos_token_id]
    return ids


def summed_nll(model, ids: list[int]) -> tuple[float, list[int]]:
    """(nats, the positions predicted) over non-overlapping windows: each window's first token is not predicted."""
    import torch
    import torch.nn.functional as F

    data = torch.tensor(ids)
    nll, predicted = 0.0, []
    with torch.no_grad():
        for i in range(0, len(data) - 1, WINDOW):
            chunk = data[i:i + WINDOW][None]  # [1, n]
            if chunk.shape[1] < 2:
                break
            logits = model(chunk).logits.float()  # [1, n, V]
            nll += F.cross_entropy(logits[0, :-1], chunk[0, 1:], reduction="sum").item()
            predicted += range(i + 1, i + chunk.shape[1])
    return nll, predicted


def perplexity(model, ids: list[int]) -> float:
    nll, predicted = summed_nll(model, ids)
    return math.exp(nll / len(predicted))


def char_counter(tok):
    """Characters per token id, from transformers' own GPT-2 byte table (not the project's): a UTF-8 character
    has exactly one byte outside 0x80-0xBF; the end-of-document token counts as one character."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    table = {c: b for b, c in bytes_to_unicode().items()}
    special = set(tok.all_special_ids)

    def count(i: int) -> int:
        return 1 if i in special else sum(not 0x80 <= table[c] <= 0xBF for c in tok.convert_ids_to_tokens(i))
    return count


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
    # fp8 (e4m3) keeps about 2 significant digits: the logits move by well under one unit, the picks hardly
    assert report["steps"] == 17 and 0 < max(report["max_abs_dlogit"]) < 1.0 and report["greedy_agreement"] >= 0.9


@pytest.mark.parametrize("lang, path", [("en", HELDOUT),
                                        pytest.param("zh", HELDOUT_ZH, marks=pytest.mark.slow)])  # zh: ~20 s
def test_bits_per_character_match_the_card_and_meet_the_targets(card, lang, path):
    """Issue 21: bits per character on held-out text, recomputed with transformers; English within 10% of the
    English-only model it replaced (1.764, so at most 1.95), Chinese clearly under the character bigram."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(MODEL))
    model = AutoModelForCausalLM.from_pretrained(str(MODEL), torch_dtype="float32").eval()
    ids, count = heldout_ids(tok, path), char_counter(tok)
    docs = documents(path)
    assert sum(count(i) for i in ids) == sum(len(d) for d in docs) + len(docs)  # every character, once
    nll, predicted = summed_nll(model, ids)
    bpc = nll / math.log(2) / sum(count(ids[i]) for i in predicted)
    assert abs(bpc - card["bits_per_char"][lang]) <= 0.005 * bpc
    if lang == "en":
        assert bpc <= 1.95
    else:
        assert bpc <= card["zh_baselines_bits_per_char"]["bigram"] - 0.5 < card["zh_baselines_bits_per_char"]["unigram"]


def test_the_card_continues_the_articles_example_in_chinese(card):
    """Greedy 济南的冬天 with transformers' own generate: the card's continuation, valid UTF-8 once an incomplete
    last character is trimmed, and mostly Chinese."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    tok = AutoTokenizer.from_pretrained(str(MODEL))
    model = AutoModelForCausalLM.from_pretrained(str(MODEL), torch_dtype="float32").eval()
    prompt = tok("济南的冬天", return_tensors="pt", add_special_tokens=False)
    out = model.generate(**prompt, max_new_tokens=48, do_sample=False, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.eos_token_id)[0, prompt.input_ids.shape[1]:].tolist()
    out = out[:out.index(tok.eos_token_id)] if tok.eos_token_id in out else out
    table = {c: b for b, c in bytes_to_unicode().items()}
    raw = bytes(table[c] for c in "".join(tok.convert_ids_to_tokens(out)))
    sample = next(s for s in card["samples"] if s["prompt"] == "济南的冬天")
    text = raw[:len(raw) - sample["trimmed_bytes"]].decode("utf-8")  # raises if not valid UTF-8
    assert sample["valid_utf8"] and sample["continuation"] == text and sample["trimmed_bytes"] < 4
    chinese = [c for c in text if "\u4e00" <= c <= "\u9fff" or "\u3000" <= c <= "\u303f" or "\uff00" <= c <= "\uffef"]
    assert len(chinese) >= 0.5 * len([c for c in text if not c.isspace()]), text
