"""The training presets (the embedded family is bilingual): the model's shape, the corpus, the time
budget and the mix of each model `python -m llmviz.training --preset NAME` builds. No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab: int = 4096
    seq_len: int = 512
    batch: int = 4  # 4 x 512 ran ~5% faster per token than 8 x 512 on one thread
    lr: float = 2e-3
    minutes: float = 25.0
    out: str = "llmviz-tiny"
    sources: tuple = ("topics", "docstrings")
    limit: int | None = None  # keep only the first N documents (smoke)
    compile: bool = False  # measured here: compile costs ~28 s and gains nothing (~4.6k tokens/s either way)
    warmup: int = 100  # linear warmup steps before the cosine decay
    # The corpus is only ~400k tokens: in a first 25-minute run (17 planned epochs) held-out perplexity
    # bottomed out near 64 at ~8 epochs, then rose while the training loss kept falling. So cap the epochs.
    max_epochs: float = 7.0
    # Uptraining (the GQA paper's recipe): start from `init_from` (a folder in assets/) with its K/V heads
    # mean-pooled down to `kv_heads`, and train briefly at a lower learning rate.
    init_from: str | None = None
    kv_heads: int | None = None
    # Bilingual: the Chinese documentation beside the English corpus (training/bilingual.py), each CJK
    # character seen cjk_min times a token, English repeated so a run sees at least `english_tokens` of it (the
    # English-only model's 2,797,568, from its card). `tokens_per_s` plans that before the run is timed: one thread
    # of this machine gave 4,340 with the 4,096-token vocabulary and 2,560 with 9,216 (a trial run, 2026-12-02).
    zh: bool = False
    cjk_min: int | None = None
    english_tokens: int = 2_797_568
    tokens_per_s: float = 2500.0


BILINGUAL = dict(vocab=9216, zh=True, cjk_min=5)  # the embedded family speaks English and Chinese
PRESETS = {
    "main": Preset(hidden=256, layers=4, heads=8, intermediate=768, minutes=60.0, **BILINGUAL),
    # The derived models reuse the main model's tokenizer and draw from its stream (its English copies). The GQA
    # uptraining got 6 minutes (was 2.5 on the English-only model): about a third of the bilingual stream is
    # English, and 2.5 minutes left the 4-head model 9.6% behind the main one on the English held-out text.
    "draft": Preset(hidden=128, layers=2, heads=4, intermediate=384, lr=3e-3, minutes=6.0, out="llmviz-tiny-draft",
                    max_epochs=10.0, **BILINGUAL),
    "gqa4": Preset(hidden=256, layers=4, heads=8, intermediate=768, lr=6e-4, minutes=6.0, warmup=20,
                   out="llmviz-tiny-gqa4", init_from="llmviz-tiny", kv_heads=4, **BILINGUAL),
    "gqa2": Preset(hidden=256, layers=4, heads=8, intermediate=768, lr=6e-4, minutes=6.0, warmup=20,
                   out="llmviz-tiny-gqa2", init_from="llmviz-tiny", kv_heads=2, **BILINGUAL),
    # The English-only model the bilingual one replaced (retired; kept to reproduce its figures)
    "english": Preset(hidden=256, layers=4, heads=8, intermediate=768, out="llmviz-tiny-en"),
    "smoke": Preset(hidden=64, layers=2, heads=4, intermediate=128, vocab=512, seq_len=64, batch=4, lr=3e-3,
                    minutes=0.1, out="llmviz-smoke", sources=("topics",), limit=40, warmup=4),
}
DERIVED = ("draft", "gqa4", "gqa2")
