"""The article's own numbers redone, its slips with their evidence, and its terms beside the app's.

One place for all three: the pages and the lesson read them from here, the sentences from the catalogues
(`slip.<id>` and `term.<id>` in llmviz/i18n/locales/*/article.json), each filled with the values computed
below from the article's shapes and the bundled configs, never typed in. Pure arithmetic; the byte formula is
kv_memory.kv_bytes, the FLOP count predict.step_flops.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmviz.analysis.kv_memory import KVExample, kv_bytes
from llmviz.analysis.predict import (
    Setup,
    Shape,
    decode_read_bytes,
    kv_read_bytes,
    predict,
    step_flops,
    weight_read_bytes,
)

MIB = 2**20
# The article's GPU, from NVIDIA's A100 datasheet (80 GB SXM4): dense FP16 on the tensor cores, and HBM2e bandwidth.
# Its ridge point, about 153 FLOPs per byte, is what the article's "hundreds of FLOPs per byte fetched" stands for
# (a CPU's text shows this machine's measured ridge beside it).
A100_PEAK_TFLOPS, A100_BANDWIDTH_GBPS = 312.0, 2039.0
A100_40GB_BANDWIDTH_GBPS = 1555.0  # the 40 GB card's HBM2 (the same datasheet): the slower of the two A100s


def a100_ridge() -> float:
    """FLOPs an A100 can do per byte it reads from HBM: 312e12 / 2,039e9, about 153."""
    return A100_PEAK_TFLOPS * 1e12 / (A100_BANDWIDTH_GBPS * 1e9)

# The article's BERT-base shapes (§1.1-§1.2): 768 wide, 12 heads x 64, 12 layers, fp32
ARTICLE_PREFILL = KVExample(tokens=4, kv_heads=12, head_dim=64, element_bytes=4, layers=12)  # "24 KB"
ARTICLE_DECODE = KVExample(tokens=1024, kv_heads=12, head_dim=64, element_bytes=4, layers=12)  # "6 MB at 1024"
# §4.1's budget: max_seq_len x hidden_size x 2 x 4 bytes, for a 4096-wide model at 2048 tokens
OOM_TOKENS, OOM_HIDDEN, OOM_BYTES = 2048, 4096, 4
# BERT's view of 济南的冬天 (§1.1): facts about bert-base-chinese, no BERT weights
BERT_VOCAB = 21128
BERT_SPECIALS = ("[CLS]", "[SEP]")
ARTICLE_BATCH = ("济南的冬天", "人工智能")  # §3.1's batch of two requests, padded to 8 (claim K5's example)


def bert_masks(positions: int) -> tuple:
    """§1.1's slip (BERT never decodes with a cache), shown: which keys each query sees ([n, n] bool) in BERT, an
    encoder (every position sees every other), and under the causal rule of a decoder, the engine's own
    (trace/sparsity.BlockSparse with one block covering everything is the plain causal mask)."""
    import numpy as np

    from llmviz.trace.sparsity import BlockSparse

    pos = np.arange(positions)
    causal = BlockSparse(block=max(1, positions), local=1, global_blocks=0).allows(pos[:, None], pos[None, :])
    return np.ones((positions, positions), dtype=bool), causal


def oom_article_bytes(tokens: int = OOM_TOKENS, hidden: int = OOM_HIDDEN) -> int:
    """The article's max_seq_len x hidden_size x 2 x 4 bytes: at 2048 x 4096, 64 MiB (per layer, though it does not
    say so)."""
    return tokens * hidden * 2 * OOM_BYTES


@dataclass(frozen=True)
class Budget:
    """The right KV budget of one model at the article's 2048 tokens in fp32: per layer and for the whole model."""

    name: str
    kv_heads: int
    head_dim: int
    layers: int
    hidden: int

    @property
    def per_layer(self) -> int:
        return kv_bytes(OOM_TOKENS, self.kv_heads, self.head_dim, OOM_BYTES)

    def total(self, batch: int = 1) -> int:
        return kv_bytes(OOM_TOKENS, self.kv_heads, self.head_dim, OOM_BYTES, self.layers, batch)

    @property
    def article_right(self) -> bool:
        """Whether hidden_size stands in for kv_heads x head_dim here (only without GQA)."""
        return self.kv_heads * self.head_dim == self.hidden

    @classmethod
    def of(cls, name: str, config: dict) -> Budget:
        return cls(name, config["num_kv_heads"], config["head_dim"], config["num_layers"], config["hidden_size"])


def bert_view(text: str) -> dict:
    """The article's example as bert-base-chinese sees it: one token per character between [CLS] and [SEP],
    positions 0..n+1, every segment id 0."""
    tokens = [BERT_SPECIALS[0], *text, BERT_SPECIALS[1]]
    return {"tokens": tokens, "positions": list(range(len(tokens))), "segments": [0] * len(tokens),
            "vocab": BERT_VOCAB, "chars": len(text), "article_listed": 4}


def quadratic_share(config: dict, tokens: int) -> float:
    """The share of a prefill's FLOPs that is the n² term (attention's scores and their mix of V). step_flops is
    exactly a + b·n + c·n² in n without a window, so c·n² = (f(2n) - 2·f(n) + f(0)) / 2."""
    setup = Setup(Shape.from_config(config))
    f = [step_flops(setup, n, 0) for n in (0, tokens, 2 * tokens)]
    return (f[2] - 2 * f[1] + f[0]) / 2 / f[1]


def weight_share(weight_bytes: int, kv_read_bytes: int) -> float:
    """The share of a decode step's bytes that are weights (every weight is read once per step)."""
    return weight_bytes / (weight_bytes + kv_read_bytes)


@dataclass(frozen=True)
class Redone:
    """One of the article's numbers beside the same arithmetic for a config: bytes, or a share (0-1). `article`
    is the figure at the article's own shapes (None where it has none)."""

    key: str  # a message-key suffix: article.redo.<key>
    article: float | None
    here: float
    share: bool = False


WEIGHT_SHARE_AT = (16, 512, 2048)  # cached tokens of a decode step at which the weights' share is given
# BERT-base as the article's shapes, for the bytes a decode step would read at them
ARTICLE_SHAPE = Shape(vocab_size=BERT_VOCAB, hidden_size=768, num_layers=12, num_heads=12, num_kv_heads=12,
                      head_dim=64, intermediate_size=3072, max_position_embeddings=512, mlp="plain", norm="layer",
                      position="learned")


def cache_rows(config: dict, dtype: str = "fp16") -> list[Redone]:
    """The article's 24 KB (4 tokens) and 6 MB (1,024 tokens), fp32 as it computes them, per layer and for the
    whole model, at its shapes and at `config`'s; then the share of a decode step's bytes that are weights
    (weights and cache in `dtype`) at a few cache lengths: a short context is weight-bound, not cache-bound."""
    kv, hd, layers = config["num_kv_heads"], config["head_dim"], config["num_layers"]
    rows = []
    for key, ex in (("t4", ARTICLE_PREFILL), ("t1024", ARTICLE_DECODE)):
        here = kv_bytes(ex.tokens, kv, hd, ex.element_bytes)
        rows += [Redone(f"{key}_layer", ex.per_layer, here), Redone(f"{key}_model", ex.total, here * layers)]
    ours, theirs = Setup(Shape.from_config(config), dtype=dtype), Setup(ARTICLE_SHAPE, dtype=dtype)
    for n in WEIGHT_SHARE_AT:
        rows.append(Redone(f"weights_{n}", *(weight_share(weight_read_bytes(x), kv_read_bytes(x, n))
                                             for x in (theirs, ours)), share=True))
    return rows


def oom_rows(config: dict) -> list[Redone]:
    """§4.1's budget at 2048 tokens in fp32: the article's formula (its 64 MiB is a 4096-wide model), the same
    formula for `config`, and the right one (layers x 2 x kv_heads x head_dim x bytes x tokens, batch 1)."""
    right = kv_bytes(OOM_TOKENS, config["num_kv_heads"], config["head_dim"], OOM_BYTES)
    return [Redone("oom_article", oom_article_bytes(), oom_article_bytes(hidden=config["hidden_size"])),
            Redone("oom_right_layer", None, right), Redone("oom_right_model", None, right * config["num_layers"])]


HALF_KV_SPEEDUP = 1.8  # §2.2: the cache stored with .half(), decode 1.8x faster on an A100 (claim K4)


def half_kv_bound(share: float) -> float:
    """The most a decode step bound by the bytes it reads speeds up when only the cache's bytes halve: its time
    goes from W + K to W + K/2, so 1 / (1 - s/2) with s = K / (W + K), the cache's share (§2.2)."""
    return 1 / (1 - share / 2)


def kv_share(config: dict, cached: int, dtype: str, kv_dtype: str) -> float:
    """The cache's share of the bytes a decode step reads with `cached` tokens (the new one included): predict.py's
    one decode step after a prompt of cached - 1 tokens."""
    step = predict(Setup(Shape.from_config(config), dtype=dtype, kv_dtype=kv_dtype), cached - 1, 1, None)
    return step.kv_read_bytes / step.read_bytes


@dataclass(frozen=True)
class Slip:
    """One of the article's slips: where it is (its section), the concepts it concerns (a claim's declaration names
    the slips about it: llmviz/analysis/claimdefs/), the evidence's values."""

    id: str
    section: str
    concepts: tuple


SLIPS = (  # in the article's order (§1.1 first, §5 last): the pages list them as they stand here
    Slip("prefill_linear", "1.1", ("C3",)),
    Slip("four_tokens", "1.1", ("C1", "C2")),
    Slip("bert_decodes", "1.1", ("C2", "C4")),
    Slip("one_head", "1.1", ("C3",)),
    Slip("per_layer", "1.1", ("C4",)),
    Slip("fifth_token", "1.2", ("C5",)),
    Slip("only_q", "1.2", ("C5",)),
    Slip("decode_25ms", "1.2", ("C7",)),
    Slip("block_tables", "2.1", ("C9",)),
    Slip("norm_fusion", "2.2", ("C10",)),
    Slip("half_kv_bound", "2.2", ("C11",)),
    Slip("prefetch", "2.2", ("C12",)),
    Slip("flash_import", "3.1", ("C14",)),
    Slip("pad_sequences", "3.1", ("C13",)),
    Slip("cache_shape", "4.1", ("C4", "C17")),
    Slip("oom_budget", "4.1", ("C17", "C19")),
    Slip("slowdown", "4.2", ("C18",)),
    Slip("kv_cache_dtype", "4.2", ("C11",)),
    Slip("gqa_config", "4.2", ("C19",)),
    Slip("a100_fp8", "5", ("C21",)),
    Slip("quant_names", "5", ("C21",)),
)
SLIP_IDS = tuple(s.id for s in SLIPS)


DECODE_MEMORY_SHARE = 0.6  # §1.2: "about 60% of the time is spent on memory access" (a 25 ms decode step on an A100)


def decode_read_times(tokens: int = 1024, quoted_ms: float = 25.0, memory_share: float = DECODE_MEMORY_SHARE) -> dict:
    """§1.2: "25 ms a token on an A100, about 60% of it memory access" against the bytes a BERT-base-sized decode
    step reads (its fp32 weights, once, and the cache at `tokens`) at the A100's datasheet bandwidths."""
    setup = Setup(ARTICLE_SHAPE)
    read = weight_read_bytes(setup) + kv_read_bytes(setup, tokens)
    fast, slow = (read / (gbps * 1e9) * 1e3 for gbps in (A100_BANDWIDTH_GBPS, A100_40GB_BANDWIDTH_GBPS))
    moved = quoted_ms * 1e-3 * memory_share * A100_40GB_BANDWIDTH_GBPS * 1e9  # bytes 60% of 25 ms could move
    return {"read_mb": read / 1e6, "fast_ms": fast, "slow_ms": slow, "fast_gbps": A100_BANDWIDTH_GBPS,
            "slow_gbps": A100_40GB_BANDWIDTH_GBPS, "moved_gb": moved / 1e9, "times": moved / read,
            "fast_times": quoted_ms / fast, "slow_times": quoted_ms / slow}


def norm_fusion(config: dict, cached: int = 1024) -> dict:
    """§2.2's LayerNorm + QKV kernel: what it saves is writing each layer's normed input [n, d] (fp32) and reading it
    back once (the fused QKV matmul already reads it once, the engine's fused-qkv switch): 2 x n x d x 4 B a layer.
    At one decode step after `cached` tokens, against the bytes that step reads (weights and cache); at a prefill of
    `cached` tokens, in bytes."""
    d, layers = config["hidden_size"], config["num_layers"]
    setup = Setup(Shape.from_config(config))
    saved_decode = 2 * d * 4 * layers
    read = decode_read_bytes(setup, cached)
    return {"saved_kb": saved_decode / 1024, "read_mb": read / 2**20, "share": saved_decode / read,
            "prefill_mib": 2 * cached * d * 4 * layers / 2**20, "cached": cached, "d": d, "layers": layers}


def slip_values(gpt2: dict, llama2: dict, llama3: dict, gqa_card: dict | None) -> dict[str, dict]:
    """The numbers each slip's sentence cites, from the bundled configs (ModelConfig dicts) and a GQA model's
    card (its perplexity with every K/V head, mean-pooled, uptrained; None where it is not there)."""
    two, three = Budget.of("Llama-2-7B", llama2), Budget.of("Llama-3-8B", llama3)
    bert = bert_view("济南的冬天")
    values = {
        "prefill_linear": {"share_256": quadratic_share(gpt2, 256), "share_512": quadratic_share(gpt2, 512)},
        "four_tokens": {"chars": bert["chars"], "listed": bert["article_listed"], "bert": len(bert["tokens"]),
                        "bert_last": bert["positions"][-1]},
        "per_layer": {"small": ARTICLE_PREFILL.per_layer, "small_total": ARTICLE_PREFILL.total,
                      "big_mib": ARTICLE_DECODE.per_layer / MIB, "big_total_mib": ARTICLE_DECODE.total / MIB,
                      "layers": ARTICLE_PREFILL.layers},
        "oom_budget": {"article_mib": oom_article_bytes() / MIB, "llama2_mib": two.per_layer / MIB,
                       "llama3_mib": three.per_layer / MIB, "llama3_total_mib": three.total() / MIB,
                       "llama3_kv": three.kv_heads, "llama3_hd": three.head_dim, "layers": three.layers},
        "slowdown": {"per_token": kv_bytes(1, gpt2["num_kv_heads"], gpt2["head_dim"], 4, gpt2["num_layers"])},
        # §1.1's [4, 768] x [768, 64]: one head's W_q, while the cache [seq, 12, 64] holds all twelve heads
        "one_head": {"d": ARTICLE_SHAPE.hidden_size, "heads": ARTICLE_SHAPE.num_heads, "hd": ARTICLE_SHAPE.head_dim},
        # §1.2's 25 ms a token: the BERT-base-sized weights read once at the A100's bandwidth, both cards
        "decode_25ms": decode_read_times(),
        # §4.1's k_cache.shape: one layer of one sequence; a GPT-2-shaped model holds layers x batch of them
        "cache_shape": {"layers": gpt2["num_layers"], "heads": gpt2["num_kv_heads"], "hd": gpt2["head_dim"],
                        "max_seq": gpt2["max_position_embeddings"],
                        "total_mib": kv_bytes(gpt2["max_position_embeddings"], gpt2["num_kv_heads"], gpt2["head_dim"],
                                              4, gpt2["num_layers"]) / MIB},
        # the GPT-2 shape at the decode claims' 1,024 cached tokens (the Reveal's K4), all fp32; Llama-2-7B in fp16
        # with the fp32 cache .half() halves, at the 2,048 tokens of its context
        "norm_fusion": norm_fusion(gpt2),  # GPT-2's shape (the decode claims' model), 1,024 cached tokens
        "half_kv_bound": {"needed": 2 * (1 - 1 / HALF_KV_SPEEDUP), "speedup": HALF_KV_SPEEDUP,
                          **{f"{name}_{k}": v for name, share in (("gpt2", kv_share(gpt2, 1025, "fp32", "fp32")),
                                                                  ("llama2", kv_share(llama2, 2048, "fp16", "fp32")))
                             for k, v in (("share", share), ("bound", half_kv_bound(share)))}},
    }
    if gqa_card and "perplexity_mean_pooled" in gqa_card:
        values["gqa_config"] = {"before": gqa_card["perplexity_before"], "pooled": gqa_card["perplexity_mean_pooled"],
                                "after": gqa_card["heldout_perplexity"],
                                "heads": gqa_card["architecture"]["num_heads"],
                                "kv_heads": gqa_card["architecture"]["num_kv_heads"]}
    return {s.id: values.get(s.id, {}) for s in SLIPS}


@dataclass(frozen=True)
class Term:
    """A word of the article in the glossary: its id (term.<id> is the app's word, glossary.<id> one line
    on it, in the catalogues), the article's own word, the concept it names, the page that shows it."""

    id: str
    article: str
    concept: str
    page: str


# The lesson's glossary, in the article's order: every term the article uses that the app shows, and the app's own
# words a Chinese sentence relies on (eager / SDPA, the claims), glossed once here.
GLOSSARY = (
    Term("token", "token", "C1", "tokens"),
    Term("prefill", "Prefill（预填充）", "C3", "prefill"),
    Term("attention_head", "注意力头", "C3", "prefill"),
    Term("kv_cache", "KV Cache", "C4", "decode"),
    Term("decode", "Decode（解码）", "C5", "decode"),
    Term("memory_bandwidth", "内存带宽", "C7", "claims"),
    Term("paged_attention", "PagedAttention", "C9", "kv_layouts"),
    Term("operator_fusion", "算子融合", "C10", "compare"),
    Term("memory_compression", "内存压缩", "C11", "compare"),
    Term("prefetch", "预取", "C12", "kv_layouts"),
    Term("batching", "批处理", "C13", "batch"),
    Term("throughput", "吞吐量", "K5", "batch"),
    Term("flash_attention", "Flash Attention", "C14", "compare"),
    Term("attention_backend", "eager / SDPA", "C14", "compare"),  # the app's words for K6's two sides, glossed once
    Term("continuous_batching", "持续批处理", "C15", "serving"),
    Term("speculative_decoding", "推测解码", "C16", "serving"),
    Term("oom", "内存溢出（OOM）", "C17", "memory"),
    Term("gqa", "分组查询注意力（GQA）", "C19", "compare"),
    Term("sparse_attention", "稀疏注意力", "C20", "prefill"),
    Term("local_attention", "局部注意力", "C20", "prefill"),
    Term("quantization", "量化", "C21", "compare"),
    Term("fp8", "FP8", "C21", "compare"),
    Term("claim", "论断", "K1", "claims"),  # the article's measured figures, K1-K11: one word for them everywhere
)
# The article's terms the app names differently: the Claims page's table of them, from the glossary.
RENAMED = ("continuous_batching", "speculative_decoding", "operator_fusion", "sparse_attention", "local_attention",
           "memory_compression", "paged_attention")
TERMS = tuple((g.id, g.article, g.concept) for g in sorted((g for g in GLOSSARY if g.id in RENAMED),
                                                          key=lambda g: RENAMED.index(g.id)))

# One spelling per term in the Chinese interface: the article's word, and the words a catalogue must not
# use for it. The one place the other word for token may appear is its gloss, where the Tokens page names it.
ONE_SPELLING = {"持续批处理": ("连续批处理",), "推测解码": ("投机解码",), "token": ("词元",), "论断": ("结论",)}
GLOSSES = ("token（词元）",)


def other_spellings(text: str) -> list[tuple[str, str]]:
    """(the word used, the article's word) for every other spelling in `text`, glosses left out."""
    for gloss in GLOSSES:
        text = text.replace(gloss, "")
    return [(other, word) for word, others in ONE_SPELLING.items() for other in others if other in text]
