"""README.md of a trained model, from its card.json: every number is the card's (llmviz/training/card.py)."""

from __future__ import annotations

from llmviz.training.presets import DERIVED

FRONT = """---
license: other
license_name: psf-2.0
library_name: transformers
pipeline_tag: text-generation
---
"""

ABOUT_EN = """A tiny Llama-architecture language model that ships inside llmviz, trained from scratch on English text
that ships with CPython. It writes docstring-flavoured English; it knows no facts worth trusting."""

ABOUT_BILINGUAL = """A tiny Llama-architecture language model that ships inside llmviz, trained from scratch on the text
of the Python documentation in English (the docstrings and pydoc topics that ship with CPython) and in Chinese (the
zh_CN translation of the Python documentation). It writes documentation-flavoured English and Chinese; it knows no
facts worth trusting.

一个随 llmviz 分发的微型 Llama 架构语言模型，从零训练于 Python 文档的英文文本（CPython 自带的文档字符串与 pydoc
主题）和中文文本（Python 文档的简体中文译本）。它写出的是文档风格的英文和中文；它说的事实都不可信。"""

ZH_SAMPLES = (" Chinese prompts: 济南的冬天, then the first sentence of each of the first five held-out Chinese "
              "documents, greedy.")


def gqa_section(info: dict) -> str:
    if not info.get("init_from"):
        return ""
    a = info["architecture"]
    return f"""
## Grouped-query attention by uptraining (C19)

Made from `{info["init_from"]}` (every one of its {a["num_heads"]} K/V heads) by mean-pooling each run of \
{a["num_heads"] // a["num_kv_heads"]} consecutive K/V heads into one (llmviz's `--kv-heads` conversion), then \
training on the same corpus at a lower learning rate (the GQA paper's uptraining). Held-out perplexity, same \
text and windows:

| | perplexity |
|---|---|
| before conversion ({a["num_heads"]} KV heads) | {info["perplexity_before"]:.2f} |
| after mean-pooling to {a["num_kv_heads"]} KV heads | {info["perplexity_mean_pooled"]:.2f} |
| after uptraining | **{info["heldout_perplexity"]:.2f}** |

The uptraining is also extra training on the corpus, so part of what it recovers is not specific to GQA.
"""


def bilingual_sections(info: dict) -> str:
    """Bits per character, the baselines, 济南的冬天's tokens and the Chinese corpus."""
    if "bits_per_char" not in info:
        return ""
    bpc, base, ex, zh = info["bits_per_char"], info["zh_baselines_bits_per_char"], info["example"], info["zh_corpus"]
    counts = ex["training_counts"]
    whole = ", ".join(f"{c} ({counts[c]:,})" for c in ex["whole_characters"]) or "none"
    as_bytes = ", ".join(f"{c} ({counts[c]:,})" for c in ex["as_bytes"]) or "none"
    held = ", ".join(f"`{f}`" for f in zh["heldout_files"])
    why_copies = ("as in the main model's stream, which this one draws from" if info["preset"] in DERIVED
                  else "so that it keeps the exposure the English-only model had")
    return f"""
## Bits per character (held-out text only)

Summed negative log-likelihood of the held-out tokens in bits, over the characters they spell (a character \
split over byte tokens counted once): unlike perplexity it compares models with different tokenizers.

| | English, `heldout.txt` | Chinese, `heldout_zh.txt` |
|---|---|---|
| this model | **{bpc["en"]:.3f}** | **{bpc["zh"]:.3f}** |
| character bigram (Witten-Bell), counted on the Chinese training text | | {base["bigram"]:.3f} |
| character unigram (add-one), same text | | {base["unigram"]:.3f} |

Perplexity ({info["heldout_perplexity"]:.2f} above) compares runs of this model only (same tokenizer), e.g. what \
a lossy engine switch costs.

## 济南的冬天 (the article's example)

{ex["tokens"]} tokens. Tokens of their own: {whole}. UTF-8 bytes, one token each: {as_bytes}. (In brackets: how \
often each character occurs in the Chinese training text.) The tokenizer splits CJK characters apart before \
merging and keeps a character whole when it occurs at least {info["tokenizer"]["cjk_min"]} times; nothing is \
forced, no text was added for the example.

## The Chinese corpus

The zh_CN translation of the Python documentation, `{zh["source"]}`: {zh["files"]} `.po` files, one document \
each, {zh["chars"]:,} characters of translated `msgstr` text (fuzzy, untranslated and non-Chinese entries \
dropped, reST roles reduced to their text), sha256 `{zh["sha256"]}`. Held out by a hash of the path: {held} \
(`assets/corpus/heldout_zh.txt`, see `assets/corpus/README_zh.md`). English is repeated \
{info["english_copies"]} times in the training stream ({info["english_share"]:.1%} of it) {why_copies}: \
{info.get("english_tokens_seen", 0):,} English tokens seen.

The translators contribute under the Documentation Contribution Agreement of that repository's README (CC0 to \
the PSF); the documentation is under the PSF License (see `NOTICE`). Its translators, whose work this model learnt \
its Chinese from: {", ".join(zh.get("translators", [])) or "see NOTICE"}.
"""


def sample_block(s: dict) -> str:
    text = f"**{s['mode']}**, prompt `{s['prompt']}`:\n\n```text\n{s['text']}\n```"
    if "valid_utf8" in s:
        text += (f"\n\nvalid UTF-8: {'yes' if s['valid_utf8'] else 'no'} ({s['trimmed_bytes']} byte(s) of an "
                 f"incomplete last character trimmed); Chinese share of the continuation: {s['cjk_share']:.0%}")
    return text


def readme(info: dict) -> str:
    a, t = info["architecture"], info["training"]
    bilingual = "bits_per_char" in info
    machine = t.get("machine", {})
    where = f" on {machine['cpu']} ({machine['cores']} cores)" if machine else ""
    samples = "\n\n".join(sample_block(s) for s in info["samples"])
    corpus_heading = "English corpus" if bilingual else "Corpus"
    renamed = (f"\n(The preset `{info['preset']}` is named `{info['preset_now']}` now.)\n"
               if info.get("preset_now") else "")
    renamed += ("\nA run is time-budgeted: it fixes its step count from the speed it measures after a few steps, so "
                "the same command on another machine trains for another number of steps; `--steps N` fixes it.\n")
    return f"""{FRONT}
# {info["name"]}

{ABOUT_BILINGUAL if bilingual else ABOUT_EN}

| | |
|---|---|
| architecture | LlamaForCausalLM: {a["num_layers"]} layers, hidden {a["hidden_size"]}, {a["num_heads"]} heads \
({a["num_kv_heads"]} KV heads), head_dim {a["head_dim"]}, SwiGLU {a["intermediate_size"]}, RoPE theta \
{a["rope_theta"]:g}, RMSNorm, tied embeddings |
| parameters | {info["parameters"]:,} |
| vocabulary | {a["vocab_size"]} byte-level BPE tokens; id 0 `<|endoftext|>` = bos = eos = pad |
| context | {a["max_position_embeddings"]} tokens |
| weights | fp16 safetensors |
| held-out perplexity | **{info["heldout_perplexity"]:.2f}** on the English held-out text (transformers \
LlamaForCausalLM, fp32, non-overlapping {info["eval_window"]}-token windows, {info["heldout_tokens"]} tokens) |
{bilingual_sections(info)}
## {corpus_heading}

pydoc topics plus standard-library module/class/function docstrings of CPython {info["python"]}, cleaned and
de-duplicated: {info["corpus_documents"]} documents, {info["corpus_chars"]:,} characters, sha256
`{info["corpus_sha256"]}`. About 2% of the documents (chosen by a hash of their text) are held out:
`assets/corpus/heldout.txt` (see `assets/corpus/README.md`). Text under the PSF License: see `NOTICE`.

## Training

```
{info["train_command"]}
```
{renamed}
AdamW (betas 0.9/0.95, weight decay 0.1), peak learning rate {t["peak_lr"]}, warmup then cosine to 10%, batch \
{t["batch"]} x {t["seq_len"]} tokens, bf16 autocast on CPU, torch.compile: {t["compiled"]}, seed {t["seed"]}, \
{t["threads"]} CPU thread(s){where}, torch {t.get("torch", "?")}. {t["steps"]} steps, {t["tokens_seen"]:,} tokens \
seen in {t["train_wall_s"]:.0f} s ({t["tokens_per_s"]} tokens/s), {t["epochs"]} epochs (capped at \
{t["max_epochs"]:g}: more overfits this small corpus); final training loss {t["final_train_loss"]}.
{gqa_section(info)}
## Samples

Verbatim, from the saved weights in fp32, no BOS token before the prompt, 48 new tokens at most; sampled =
temperature 0.8, top-k 40, seed {t["seed"]} + prompt index.{ZH_SAMPLES if bilingual else ""}

{samples}
"""
